// Starts the npm Firestore emulator (@firestore-emulator/server) on a loopback
// port for eventpipe's tests (internal/testing/fsemulator). Usage:
//
//   NODE_PATH=.tools/firestore-emulator/node_modules node tools/firestore-emulator/serve.js [port]
//
// Port 0 (the default) lets the OS choose a free port. Prints one line,
// "listening 127.0.0.1:PORT", once it accepts connections, and exits when its
// standard input closes (so it never outlives the test that started it) or on
// SIGTERM/SIGINT.
"use strict";

const { FirestoreServer } = require("@firestore-emulator/server");
const { ServerCredentials } = require("@grpc/grpc-js");

const port = Number(process.argv[2] || 0);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`invalid port ${JSON.stringify(process.argv[2])}: give a number 0-65535`);
  process.exit(2);
}

const emulator = new FirestoreServer();
// FirestoreServer.start binds 0.0.0.0; the tests want loopback only, so bind
// the package's gRPC server (a plain property in the compiled JavaScript) here.
emulator.server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (err, bound) => {
  if (err) {
    console.error(`bind 127.0.0.1:${port}: ${err.message}`);
    process.exit(1);
  }
  console.log(`listening 127.0.0.1:${bound}`);
});

const stop = () => {
  emulator.stop();
  process.exit(0);
};
process.stdin.on("end", stop);
process.stdin.on("error", stop);
process.stdin.resume();
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
