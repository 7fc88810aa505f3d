// Command consumer is the idempotent Pub/Sub consumer that eventpipe's Cloud
// Run component deploys. It serves Pub/Sub push (POST /pubsub/push),
// callbacks (POST /callbacks/{route}) and health (GET /healthz), pulls the
// subscriptions in EVENTPIPE_PULL_SUBSCRIPTIONS, and writes one JSON log line
// per message to stdout. Configuration is environment only (see
// server.ConfigFromEnv); with none it serves on :8080 with the embedded
// default routes and a bbolt store in the temporary directory.
//
// It imports only eventpipe's consumer packages (no Pulumi, no OPA), so it
// stays small and starts fast.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/logging"
	"github.com/eventpipe/eventpipe/consumer/server"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := run(ctx)
	stop()
	os.Exit(code)
}

func run(ctx context.Context) int {
	log := logging.New(os.Stdout, slog.LevelInfo)
	cfg, err := server.ConfigFromEnv(os.LookupEnv)
	if err != nil {
		log.Log(ctx, logging.LevelCritical, "consumer cannot start", logfields.ErrorType, logfields.ErrorTypeConfiguration, logfields.Error, err.Error())
		fmt.Fprintln(os.Stderr, "consumer:", err)
		return 2
	}
	log = log.With(logfields.Service, cfg.Service, logfields.Env, cfg.Env, logfields.Version, cfg.Version)
	// Crash tests only: SIGKILL this process at the failpoints named in EVENTPIPE_FAILPOINT.
	hook, err := engine.KillAtFailpoints(os.Getenv(engine.FailpointEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		return 2
	}
	if err := server.Run(ctx, cfg, log, server.Options{Failpoint: hook}); err != nil {
		if errors.Is(err, server.ErrShutdownTimeout) {
			// Work cut short by the shutdown deadline: Pub/Sub redelivers it.
			log.Error("consumer stopped before in-flight work finished", logfields.ErrorType, logfields.ErrorTypeTransient, logfields.Error, err.Error())
			return 1
		}
		log.Log(ctx, logging.LevelCritical, "consumer stopped with an error", logfields.ErrorType, logfields.ErrorTypeConfiguration, logfields.Error, err.Error())
		fmt.Fprintln(os.Stderr, "consumer:", err)
		return 1
	}
	return 0
}
