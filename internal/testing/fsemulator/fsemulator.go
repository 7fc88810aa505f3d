// Package fsemulator starts the npm Firestore emulator
// (@firestore-emulator/server, installed by `make deps` into
// .tools/firestore-emulator) on a loopback port for tests, and points the Go
// Firestore client at it through FIRESTORE_EMULATOR_HOST.
//
// That emulator speaks the real gRPC protocol and enforces exists
// preconditions, but it has no transaction isolation (every transaction reads
// and commits straight away). Tests that need isolation skip on it, saying
// so; when FIRESTORE_EMULATOR_HOST is already set (Google's emulator or a
// real project behind a proxy) Start uses that instead and reports full
// isolation.
package fsemulator

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// HostEnv is the variable the Go Firestore client reads.
const HostEnv = "FIRESTORE_EMULATOR_HOST"

// NoFullInt64 is the reason given for skipping integers beyond 2^53 on the npm emulator.
const NoFullInt64 = "the npm @firestore-emulator/server keeps integers as JavaScript numbers and rejects those beyond 2^53; real Firestore stores int64"

// SetMerges is the reason given for not checking that Set replaces a
// document on the npm emulator.
const SetMerges = "the npm @firestore-emulator/server merges a Set (a write without update mask) into the existing document; real Firestore replaces it"

// NoIsolation is the reason given for skipping isolation cases on the npm emulator.
const NoIsolation = "the npm @firestore-emulator/server runs every transaction without isolation or locks; set FIRESTORE_EMULATOR_HOST to a faithful emulator to run these cases"

// Emulator is a Firestore endpoint for tests.
type Emulator struct {
	// Host is host:port, as FIRESTORE_EMULATOR_HOST wants it.
	Host string
	// External is true when Host came from FIRESTORE_EMULATOR_HOST.
	External bool
}

// IsolationReason reports why transactions are not isolated, or "" when they are.
func (e *Emulator) IsolationReason() string {
	if e.External {
		return ""
	}
	return NoIsolation
}

// Int64Reason reports why integers beyond 2^53 cannot be stored, or "".
func (e *Emulator) Int64Reason() string {
	if e.External {
		return ""
	}
	return NoFullInt64
}

// SetMergeReason reports why Set does not replace documents, or "".
func (e *Emulator) SetMergeReason() string {
	if e.External {
		return ""
	}
	return SetMerges
}

// Start returns the endpoint named by FIRESTORE_EMULATOR_HOST, or starts the
// npm emulator and sets FIRESTORE_EMULATOR_HOST for the test (stopping the
// emulator when the test ends). A missing installation fails the test with
// the command that fixes it. Under go test -short (make quick) a test that
// would start the emulator is skipped, saying so: make test runs it.
func Start(t testing.TB) *Emulator {
	t.Helper()
	if h := os.Getenv(HostEnv); h != "" {
		return &Emulator{Host: h, External: true}
	}
	if testing.Short() {
		t.Skip("fsemulator: -short (make quick) starts no Firestore emulator; make test does")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	host, stop, err := StartProcess(ctx)
	if err != nil {
		t.Fatalf("fsemulator: %v", err)
	}
	t.Cleanup(func() {
		stderr, err := stop()
		if err != nil {
			t.Errorf("fsemulator: %v", err)
		}
		if t.Failed() && stderr != "" {
			t.Logf("Firestore emulator stderr:\n%s", stderr)
		}
	})
	t.Setenv(HostEnv, host)
	return &Emulator{Host: host}
}

// Paths returns the launcher script and the node_modules directory, found
// from the module root above the working directory.
func Paths() (script, nodeModules string, err error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", "", errors.New("no go.mod above the working directory: run the tests inside the eventpipe module")
		}
		dir = parent
	}
	script = filepath.Join(dir, "tools", "firestore-emulator", "serve.js")
	nodeModules = filepath.Join(dir, ".tools", "firestore-emulator", "node_modules")
	if _, err := os.Stat(filepath.Join(nodeModules, "@firestore-emulator", "server")); err != nil {
		return "", "", fmt.Errorf("the npm Firestore emulator is not installed in %s: run `make deps` (it runs npm ci for tools/firestore-emulator)", nodeModules)
	}
	return script, nodeModules, nil
}

// StartProcess starts the emulator on a free loopback port and returns its
// host:port and a function that stops it and returns what it wrote to stderr.
func StartProcess(ctx context.Context) (host string, stop func() (string, error), err error) {
	script, nodeModules, err := Paths()
	if err != nil {
		return "", nil, err
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return "", nil, fmt.Errorf("node not found on PATH: install Node.js 20 to run the Firestore emulator: %w", err)
	}
	cmd := exec.Command(node, script, "0")
	cmd.Env = append(os.Environ(), "NODE_PATH="+nodeModules)
	stdin, err := cmd.StdinPipe() // closing it stops the emulator
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("start %s: %w", script, err)
	}
	stop = func() (string, error) {
		_ = stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
			return stderr.String(), nil
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			return stderr.String(), errors.New("emulator did not stop within 10 s of its stdin closing; killed it")
		}
	}
	lines := make(chan string, 1)
	go func() {
		defer close(lines) // stdout closed: the process ended without listening
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "listening ") {
				lines <- strings.TrimPrefix(l, "listening ")
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case h, ok := <-lines:
		if !ok {
			out, _ := stop()
			return "", nil, fmt.Errorf("the emulator exited before listening; stderr: %s", out)
		}
		return h, stop, nil
	case <-ctx.Done():
		out, _ := stop()
		return "", nil, fmt.Errorf("the emulator did not report its port: %w; stderr: %s", ctx.Err(), out)
	}
}

// syncBuffer is a bytes.Buffer safe for the writer goroutine of exec.Cmd and a reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
