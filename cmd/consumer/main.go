// Command consumer is the idempotent Pub/Sub consumer that eventpipe's Cloud
// Run component deploys. It serves Pub/Sub push (POST /pubsub/push),
// callbacks (POST /callbacks/{route}) and health (GET /healthz), pulls the
// subscriptions in EVENTPIPE_PULL_SUBSCRIPTIONS, and writes one JSON log line
// per message to stdout. Configuration is environment only (see
// server.ConfigFromEnv); with none it serves on :8080 with the embedded
// default routes and a bbolt store in the temporary directory. The standard
// OTEL_* variables turn on OpenTelemetry tracing (see tracing.FromEnv);
// GOOGLE_CLOUD_PROJECT then names the traces' project in log lines.
// With EVENTPIPE_HANDLER_URL it is an idempotency gateway in front of the
// team's handler container: every other path is proxied to it, with
// Idempotency-Key handling (package handler, docs/handlers.md).
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
	"time"

	"go.opentelemetry.io/otel"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/logging"
	"github.com/eventpipe/eventpipe/consumer/server"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/tracing"
)

// TraceProjectEnv names the Google Cloud project of the traces in log lines
// (logging.googleapis.com/trace is projects/PROJECT/traces/TRACE_ID).
const TraceProjectEnv = "GOOGLE_CLOUD_PROJECT"

// traceFlushTimeout bounds the export of the last spans after shutdown:
// what is left of Cloud Run's 10 s SIGTERM grace after the default 9 s
// EVENTPIPE_SHUTDOWN_TIMEOUT.
const traceFlushTimeout = time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := run(ctx)
	stop()
	os.Exit(code)
}

func run(ctx context.Context) int {
	log := logging.New(os.Stdout, slog.LevelInfo)
	read := map[string]bool{}
	lookup := recordingLookup(read, os.LookupEnv)
	cfg, err := server.ConfigFromEnv(lookup)
	failpoints, _ := lookup(failpointEnv)
	// Before any error: a misspelt variable is often why a value is missing.
	warnUnread(ctx, log, unreadVariables(os.Environ(), read))
	var tracer *tracing.Tracer
	var flush tracing.Shutdown
	if err == nil {
		tracer, flush, err = tracing.FromEnv(ctx, tracing.Identity{Service: cfg.Service, Version: cfg.Version})
	}
	if err != nil {
		log.Log(ctx, logging.LevelCritical, "consumer cannot start", logfields.ErrorType, logfields.ErrorTypeConfiguration, logfields.Error, err.Error())
		fmt.Fprintln(os.Stderr, "consumer:", err)
		return 2
	}
	if tracer.Enabled() {
		// Lines of a traced delivery name their trace in the project
		// Cloud Trace keeps it in: the service's own.
		project := os.Getenv(TraceProjectEnv)
		log = logging.New(os.Stdout, slog.LevelInfo, logging.WithTrace(project))
		if project == "" {
			log.Warn("tracing is on but " + TraceProjectEnv + " is unset: log lines carry span ids but no logging.googleapis.com/trace (fix: set it to the project id)")
		}
		defer func() {
			fctx, cancel := context.WithTimeout(context.Background(), traceFlushTimeout)
			defer cancel()
			if err := flush(fctx); err != nil {
				log.Warn("spans not exported before exit", logfields.Error, err.Error())
			}
		}()
	}
	log = log.With(logfields.Service, cfg.Service, logfields.Env, cfg.Env, logfields.Version, cfg.Version)
	if tracer.Enabled() {
		// The SDK reports spans it cannot export to otel's error handler, by default a
		// plain-text line on stderr: make it one of the consumer's JSON lines.
		exportLog := log
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			exportLog.Warn("tracing: spans not exported", logfields.ErrorType, logfields.ErrorTypeTransient, logfields.Error, err.Error())
		}))
	}
	// Crash tests only: SIGKILL this process at the failpoints named in EVENTPIPE_FAILPOINT.
	hook, err := engine.KillAtFailpoints(failpoints)
	if err != nil {
		fmt.Fprintln(os.Stderr, "consumer:", err)
		return 2
	}
	if err := server.Run(ctx, cfg, log, server.Options{Failpoint: hook, Tracer: tracer}); err != nil {
		if errors.Is(err, server.ErrShutdownTimeout) {
			// Work cut short by the shutdown deadline: Pub/Sub redelivers it.
			log.Error("consumer stopped before in-flight work finished", logfields.ErrorType, logfields.ErrorTypeTransient, logfields.Error, err.Error())
			return 1
		}
		log.Log(ctx, logging.LevelCritical, "consumer stopped with an error", logfields.ErrorType, logfields.ErrorTypeConfiguration, logfields.Error, err.Error())
		fmt.Fprintln(os.Stderr, "consumer:", err)
		if _, kind, ok := store.Code(err); ok && kind == store.KindConfiguration {
			return 2 // a bad EVENTPIPE_STORE is a bad value, as docs/consumer.md says
		}
		return 1
	}
	return 0
}
