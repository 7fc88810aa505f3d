// Package server wires the consumer together: store, routes, processor,
// push, callback and health endpoints, streaming pull, HTTP timeouts and an
// idle-connection bound, and a shutdown bounded by its timeout: it takes
// no new delivery or keyed request (503 with Retry-After; pulled messages
// nacked), lets in-flight requests, messages and handler calls finish
// until the drain deadline, then cancels what is left (unanswered, so not
// acked), and closes the store within what remains.
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
	"github.com/eventpipe/eventpipe/consumer/budget"
	"github.com/eventpipe/eventpipe/consumer/callback"
	"github.com/eventpipe/eventpipe/consumer/downstream"
	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/handler"
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
	// Now, when set, is the engine's clock (tests that let a dead
	// consumer's reservations lapse without waiting for them).
	Now func() time.Time
	// Budget, when set, is the memory budget of the request bodies at
	// every door instead of the one the Go runtime's memory limit gives
	// (budget.ForMemoryLimit).
	Budget *budget.Budget
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
			return err // names EVENTPIPE_STORE itself
		}
	}
	// Until shutdown closes it (within its deadline), a start-up that
	// fails closes the store.
	storeClosed := false
	defer func() {
		if !storeClosed {
			_ = closeStore(st, cfg.ShutdownTimeout, log)
		}
	}()
	st = opts.Tracer.Store(st, scheme(cfg.StoreURL))
	host, _ := os.Hostname()
	// Requests' contexts derive from work, which the shutdown deadline
	// cancels; so do the calls of every door (one caller), which run on
	// past their request when the handler's answer is late, and which the
	// drain waits for.
	work, cut := context.WithCancel(context.WithoutCancel(ctx))
	defer cut()
	caller := downstream.New(opts.Tracer.HTTPClient(nil), work)
	proc, err := process.New(process.Config{Store: st, Env: cfg.Env, CollectionPrefix: cfg.CollectionPrefix,
		Routes: routes, DLQ: cfg.DLQ, Logger: log, Owner: cfg.Service + "@" + host, Failpoint: opts.Failpoint, MaxEventSkew: cfg.MaxEventSkew,
		Tracer: opts.Tracer, MaxWaitingPerDocument: cfg.MaxWaitingPerDocument, HandlerURL: cfg.Handler.URL,
		MaxSequenceJump: cfg.MaxSequenceJump, Downstream: caller, Now: opts.Now})
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
	memoryLimit := debug.SetMemoryLimit(-1)
	// One budget for the bodies of every door: pushes, callbacks, keyed requests.
	bodies := opts.Budget
	if bodies == nil {
		bodies = budget.ForMemoryLimit(memoryLimit)
	}
	mux := http.NewServeMux()
	// The handler answers other methods with 405.
	mux.Handle(push.Path, push.New(proc, verifier, bodies))
	if err := callback.CheckHandler(routes, cfg.Handler.URL); err != nil {
		return err
	}
	mux.Handle(callback.Pattern, callback.New(callback.Config{Routes: routes, Engine: proc.Engine(), Env: cfg.Env, Logger: log,
		Verifier: callbackVerifier, Tracer: opts.Tracer, HandlerURL: cfg.Handler.URL, MaxStoredBody: cfg.Handler.MaxStoredBody, Caller: caller,
		Budget: bodies}))
	mux.HandleFunc("GET "+HealthPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	if err := mountGateway(mux, cfg, proc, log, opts.Tracer, caller, bodies); err != nil {
		return err
	}

	ln := opts.Listener
	if ln == nil {
		if ln, err = net.Listen("tcp", ":"+cfg.Port); err != nil {
			return fmt.Errorf("listen on PORT %s: %w", cfg.Port, err)
		}
	}
	// The requests in flight are counted, so the drain waits for them and
	// the shutdown for the cancelled ones before it closes the store; once
	// draining, new deliveries and keyed requests are refused (drain.gate).
	drain := newDrain(log)
	counted := drain.gate(mux)
	timeouts, tracked := cfg.Timeouts(), newConns(MaxIdleConns)
	srv := &http.Server{Handler: counted, ReadHeaderTimeout: timeouts.ReadHeader, ReadTimeout: timeouts.Read, IdleTimeout: timeouts.Idle,
		ConnState: tracked.track, BaseContext: func(net.Listener) context.Context { return work },
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}

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
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Nothing is pulled before the handler answers: a message taken
			// earlier would spend a handler attempt on a refused connection.
			if err := handler.WaitReady(pullCtx, nil, cfg.Handler, log); err != nil {
				if pullCtx.Err() != nil {
					err = nil // shut down while waiting
				}
				pullErr <- err
				return
			}
			pullErr <- pull.Run(pullCtx, pull.Config{Client: client, Subscriptions: cfg.PullSubscriptions,
				Settings: cfg.PullSettings, Processor: proc, Cut: work, Logger: log})
		}()
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("consumer started", "addr", ln.Addr().String(), "routes", len(routes.Routes()),
		"store", scheme(cfg.StoreURL), "oidc", verifier != nil, "callback_oidc", callbackVerifier != nil, "pull_subscriptions", len(cfg.PullSubscriptions), "tracing", opts.Tracer.Enabled(),
		"memory_limit_bytes", memoryLimit, "body_budget_bytes", bodies.Size(), "startup_ms", time.Since(started).Milliseconds())
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
	deadline := time.Now().Add(cfg.ShutdownTimeout)
	sctx, cancel := context.WithDeadline(context.Background(), deadline.Add(-CutBudget(cfg.ShutdownTimeout)))
	defer cancel()
	// Drain: take no new delivery or keyed request (503 with Retry-After;
	// pulled messages are nacked), stop pulling, and let the requests,
	// messages and handler calls in flight finish until the drain
	// deadline.
	drain.start()
	stopPull()
	drained := true
	if !drain.wait(sctx) {
		drained = false
		runErr = errors.Join(runErr, fmt.Errorf("%w: in-flight requests did not finish within EVENTPIPE_SHUTDOWN_TIMEOUT (%s)", ErrShutdownTimeout, cfg.ShutdownTimeout))
	}
	if !caller.Wait(sctx) {
		drained = false
		runErr = errors.Join(runErr, fmt.Errorf("%w: handler calls in flight did not end within EVENTPIPE_SHUTDOWN_TIMEOUT (%s); their keys stay held until their reservations lapse", ErrShutdownTimeout, cfg.ShutdownTimeout))
	}
	pullDone := make(chan struct{})
	go func() { wg.Wait(); close(pullDone) }()
	if len(cfg.PullSubscriptions) > 0 {
		select {
		case <-pullDone:
		case <-sctx.Done():
			drained = false
			runErr = errors.Join(runErr, fmt.Errorf("%w: pull did not drain within EVENTPIPE_SHUTDOWN_TIMEOUT (%s)", ErrShutdownTimeout, cfg.ShutdownTimeout))
		}
	}
	// Stop accepting and close the idle connections.
	closing, cancelClosing := context.WithTimeout(context.Background(), storeCloseMin)
	defer cancelClosing()
	if err := srv.Shutdown(closing); err != nil && !errors.Is(err, http.ErrServerClosed) && drained {
		drained = false
		runErr = errors.Join(runErr, fmt.Errorf("%w: in-flight requests did not finish within EVENTPIPE_SHUTDOWN_TIMEOUT (%s): %w", ErrShutdownTimeout, cfg.ShutdownTimeout, err))
	}
	if !drained {
		// The drain deadline: cancel what is still in flight and close its
		// connections unanswered, so nothing is acked after this point but
		// what committed before it; Pub/Sub delivers the rest again. A
		// handler call cut now leaves its key held until its reservation
		// lapses (docs/handlers.md).
		// Connections first: work that wakes when cut answers nobody.
		requests := tracked.activeCount()
		_ = srv.Close()
		cut()
		log.Error("shutdown deadline: in-flight work cancelled, not acked; Pub/Sub delivers it again",
			"in_flight_requests", requests, "pull_draining", len(cfg.PullSubscriptions) > 0 && !isClosed(pullDone),
			logfields.ErrorType, logfields.ErrorTypeTransient)
		if !waitUntil(deadline, func() { drain.idle(); caller.Wait(context.Background()); <-pullDone }) {
			log.Error("cancelled work still running at the shutdown deadline; the store is closed under it", logfields.ErrorType, logfields.ErrorTypeTransient)
		}
	}
	storeClosed = true
	if err := closeStore(st, time.Until(deadline), log); err != nil {
		runErr = errors.Join(runErr, err)
	}
	log.Info("consumer stopped")
	return runErr
}

// CutBudget is the part of a shutdown timeout kept for cutting work short:
// in-flight work has the timeout less this to finish; then it is
// cancelled, and what is left closes the store. A quarter of the timeout,
// at most a second.
func CutBudget(shutdownTimeout time.Duration) time.Duration {
	return min(shutdownTimeout/4, time.Second)
}

// closeStore closes st within timeout (at least storeCloseMin): a store
// whose connections are stuck can keep Close waiting for them, and the
// process must still exit. It returns an error wrapping ErrShutdownTimeout
// when Close did not return in time.
func closeStore(st store.Store, timeout time.Duration, log *slog.Logger) error {
	closed := make(chan error, 1)
	go func() { closed <- st.Close() }()
	timer := time.NewTimer(max(timeout, storeCloseMin))
	defer timer.Stop()
	select {
	case err := <-closed:
		if err != nil {
			log.Error("close store", logfields.Error, err.Error())
		}
		return nil
	case <-timer.C:
		err := fmt.Errorf("%w: the store did not close within EVENTPIPE_SHUTDOWN_TIMEOUT", ErrShutdownTimeout)
		log.Error("store not closed before exit", logfields.ErrorType, logfields.ErrorTypeTransient, logfields.Error, err.Error())
		return err
	}
}

// storeCloseMin is the least time a store is given to close.
const storeCloseMin = 100 * time.Millisecond

// waitUntil runs wait and reports whether it returned before deadline.
func waitUntil(deadline time.Time, wait func()) bool {
	done := make(chan struct{})
	go func() { wait(); close(done) }()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
		return false
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
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

func scheme(u string) string {
	s, _, _ := strings.Cut(u, "://")
	return s
}
