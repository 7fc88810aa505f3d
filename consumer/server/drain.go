package server

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/eventpipe/eventpipe/consumer/callback"
	"github.com/eventpipe/eventpipe/consumer/downstream"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/push"
)

// drainRetryAfter is the Retry-After of a request refused while the
// consumer drains: another instance takes it.
const drainRetryAfter = "1"

// drain counts the requests in flight and, once started (SIGTERM), turns
// away new deliveries (pushes, callbacks) and keyed API requests with 503
// and Retry-After, so that no new work starts that the shutdown deadline
// could cut; health checks and unkeyed requests pass.
type drain struct {
	log      *slog.Logger
	mu       sync.Mutex
	draining bool
	active   int
	// idleC is closed when active drops to 0 while draining.
	idleC chan struct{}
}

func newDrain(log *slog.Logger) *drain {
	return &drain{log: log, idleC: make(chan struct{})}
}

// gate serves h, counting its requests, and refuses new work once the
// drain started.
func (d *drain) gate(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		if d.draining && takesWork(r) {
			d.mu.Unlock()
			d.log.LogAttrs(r.Context(), slog.LevelWarn, "request refused: shutting down",
				slog.String(logfields.Outcome, logfields.OutcomeRetry), slog.String(logfields.ErrorType, logfields.ErrorTypeTransient),
				slog.Int(logfields.HTTPStatus, http.StatusServiceUnavailable), slog.String("method", r.Method), slog.String("path", r.URL.Path))
			w.Header().Set("Retry-After", drainRetryAfter)
			w.Header().Set("Connection", "close")
			http.Error(w, "the consumer is shutting down: retry", http.StatusServiceUnavailable)
			return
		}
		d.active++
		d.mu.Unlock()
		defer d.done()
		h.ServeHTTP(w, r)
	})
}

// takesWork reports whether r starts work the shutdown could cut: a push,
// a callback, or a keyed API request (a POST or PATCH with
// Idempotency-Key).
func takesWork(r *http.Request) bool {
	switch {
	case r.URL.Path == push.Path, strings.HasPrefix(r.URL.Path, callback.PathPrefix):
		return true
	case r.Method == http.MethodPost || r.Method == http.MethodPatch:
		return len(r.Header.Values(downstream.IdempotencyKeyHeader)) > 0
	}
	return false
}

func (d *drain) done() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.active--
	if d.draining && d.active == 0 {
		d.closeIdle()
	}
}

func (d *drain) closeIdle() {
	select {
	case <-d.idleC:
	default:
		close(d.idleC)
	}
}

// start begins draining.
func (d *drain) start() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.draining = true
	if d.active == 0 {
		d.closeIdle()
	}
}

// wait waits until no counted request is in flight, or ctx ends, and
// reports whether none is.
func (d *drain) wait(ctx context.Context) bool {
	select {
	case <-d.idleC:
		return true
	case <-ctx.Done():
		return false
	}
}

// idle waits until no counted request is in flight.
func (d *drain) idle() { <-d.idleC }
