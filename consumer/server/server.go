// Package server wires the consumer together: store, routes, processor,
// push, callback and health endpoints, streaming pull, and a graceful
// shutdown that stops accepting, finishes in-flight requests and messages
// within the timeout, and closes the store.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventpipe/eventpipe/consumer/auth"
	"github.com/eventpipe/eventpipe/consumer/callback"
	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/process"
	"github.com/eventpipe/eventpipe/consumer/pull"
	"github.com/eventpipe/eventpipe/consumer/push"
	"github.com/eventpipe/eventpipe/consumer/route"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/storeurl"
	"github.com/eventpipe/eventpipe/consumer/tracing"
)

// HealthPath serves Cloud Run's startup and liveness probes.
const HealthPath = "/healthz"

// ErrShutdownTimeout is wrapped by Run's error when work was still in
// flight at the end of the shutdown timeout: Pub/Sub redelivers what was
// not answered, so it is worth an ERROR, not a CRITICAL.
var ErrShutdownTimeout = errors.New("shutdown timed out")

// Options are what tests (and the binary) pass besides Config.
type Options struct {
	// Listener, when set, is served instead of listening on Config.Port.
	Listener net.Listener
	// Ready, when set, is called with the address once the server accepts.
	Ready func(addr string)
	// PubSubClient, when set, is used for pull instead of a new client.
	PubSubClient *pubsub.Client
	// Store, when set, is used instead of opening Config.StoreURL (the local
	// pipeline wraps its bbolt store to inject an outage); Run closes it.
	Store store.Store
	// Failpoint is the engine's crash-test hook (EVENTPIPE_FAILPOINT).
	Failpoint engine.FailpointHook
	// Tracer, when set, traces every delivery, store transaction and lease
	// action (tracing.FromEnv); nil turns tracing off.
	Tracer *tracing.Tracer
}

// Run serves until ctx is cancelled (SIGTERM), then shuts down gracefully.
// It returns nil after a clean shutdown and an error when start-up fails
// (bad routes, unreachable store, ...) or pull stops with an error.
func Run(ctx context.Context, cfg Config, log *slog.Logger, opts Options) error {
	started := time.Now()
	routes, err := route.LoadFile(cfg.RoutesPath)
	if err != nil {
		return err
	}
	st := opts.Store
	if st == nil {
		if st, err = storeurl.Open(ctx, cfg.StoreURL); err != nil {
			return fmt.Errorf("open store: %w", err)
		}
	}
	defer func() {
		if err := st.Close(); err != nil {
			log.Error("close store", logfields.Error, err.Error())
		}
	}()
	st = opts.Tracer.Store(st, scheme(cfg.StoreURL))
	proc, err := process.New(process.Config{Store: st, Env: cfg.Env, CollectionPrefix: cfg.CollectionPrefix,
		Routes: routes, DLQ: cfg.DLQ, Logger: log, Owner: owner(cfg), Failpoint: opts.Failpoint, MaxEventSkew: cfg.MaxEventSkew,
		Tracer: opts.Tracer, MaxWaitingPerDocument: cfg.MaxWaitingPerDocument, HandlerURL: cfg.Handler.URL})
	if err != nil {
		return err
	}
	verifier, callbackVerifier, err := verifiers(ctx, cfg)
	if err != nil {
		return err
	}
	if callbackVerifier != nil && len(cfg.CallbackAccounts) == 0 {
		log.Warn("callbacks are refused: tokens are verified but no account may call back (fix: set EVENTPIPE_CALLBACK_ACCOUNTS to the calling jobs' service accounts)")
	}
	mux := http.NewServeMux()
	mux.Handle(push.Path, push.New(proc, verifier)) // the handler answers other methods with 405
	mux.Handle(callback.Pattern, callback.New(callback.Config{Routes: routes, Engine: proc.Engine(), Store: st, Env: cfg.Env, Logger: log,
		Verifier: callbackVerifier, Tracer: opts.Tracer}))
	mux.HandleFunc("GET "+HealthPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	if err := mountGateway(mux, cfg, proc, log, opts.Tracer); err != nil {
		return err
	}

	ln := opts.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", ":"+cfg.Port); err != nil {
			return fmt.Errorf("listen on PORT %s: %w", cfg.Port, err)
		}
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}

	pullCtx, stopPull := context.WithCancel(context.WithoutCancel(ctx))
	defer stopPull()
	var wg sync.WaitGroup
	pullErr := make(chan error, 1)
	if len(cfg.PullSubscriptions) > 0 {
		client := opts.PubSubClient
		if client == nil {
			project := strings.Split(cfg.PullSubscriptions[0], "/")[1]
			if client, err = pubsub.NewClient(ctx, project); err != nil {
				return fmt.Errorf("pubsub client: %w", err)
			}
			defer client.Close()
		}
		// PullSettings.ShutdownOptions stays nil: the client's graceful
		// shutdown, which waits for in-flight messages and flushes their acks
		// (a timed shutdown returns before acks are sent). Run bounds the
		// wait with ShutdownTimeout.
		settings := cfg.PullSettings
		wg.Add(1)
		go func() {
			defer wg.Done()
			pullErr <- pull.Run(pullCtx, pull.Config{Client: client, Subscriptions: cfg.PullSubscriptions,
				Settings: settings, Processor: proc})
		}()
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("consumer started", "addr", ln.Addr().String(), "routes", len(routes.Routes()),
		"store", scheme(cfg.StoreURL), "oidc", verifier != nil, "callback_oidc", callbackVerifier != nil, "pull_subscriptions", len(cfg.PullSubscriptions), "tracing", opts.Tracer.Enabled(),
		"memory_limit_bytes", debug.SetMemoryLimit(-1), "startup_ms", time.Since(started).Milliseconds())
	if opts.Ready != nil {
		opts.Ready(ln.Addr().String())
	}

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		runErr = fmt.Errorf("serve: %w", err)
	case err := <-pullErr:
		if err != nil {
			runErr = err
		}
	}
	log.Info("consumer shutting down", "timeout", cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	// Stop accepting; wait for in-flight requests (their processing is not
	// cancelled) and stop pulling (in-flight messages finish and are acked).
	stopPull()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		runErr = errors.Join(runErr, fmt.Errorf("%w: in-flight requests did not finish within EVENTPIPE_SHUTDOWN_TIMEOUT (%s): %w", ErrShutdownTimeout, cfg.ShutdownTimeout, err))
	}
	if len(cfg.PullSubscriptions) > 0 {
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-sctx.Done():
			runErr = errors.Join(runErr, fmt.Errorf("%w: pull did not drain within EVENTPIPE_SHUTDOWN_TIMEOUT (%s)", ErrShutdownTimeout, cfg.ShutdownTimeout))
		}
	}
	log.Info("consumer stopped")
	return runErr
}

// verifiers returns the token verifiers of pushes and of callbacks (nil
// where no audience is configured), sharing one set of Google's keys.
// Callbacks verified without accounts refuse every caller (fail closed).
func verifiers(ctx context.Context, cfg Config) (push, callbacks *auth.Verifier, err error) {
	if cfg.Audience == "" && cfg.CallbackAudience == "" {
		return nil, nil, nil
	}
	keys := auth.NewKeys(context.WithoutCancel(ctx), cfg.JWKSURL, 0)
	if cfg.Audience != "" {
		if push, err = keys.Verifier(auth.Config{Audience: cfg.Audience, AllowedEmails: cfg.PushAccounts}); err != nil {
			return nil, nil, err
		}
	}
	if cfg.CallbackAudience != "" {
		callbacks, err = keys.Verifier(auth.Config{Audience: cfg.CallbackAudience, AllowedEmails: cfg.CallbackAccounts,
			AccountsSetting: "EVENTPIPE_CALLBACK_ACCOUNTS"})
	}
	return push, callbacks, err
}

func owner(cfg Config) string {
	host, _ := os.Hostname()
	return cfg.Service + "@" + host
}

func scheme(u string) string {
	s, _, _ := strings.Cut(u, "://")
	return s
}
