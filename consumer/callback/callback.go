// Package callback serves POST /callbacks/{route}: retried HTTP callbacks
// (for example a Cloud Run Job reporting a validation run) applied once per
// idempotency key:
//
//   - with a verifier (an OIDC audience is configured), the caller's token
//     is checked first: 401 without a valid one, 403 for an account not
//     allowed, 503 when Google's keys cannot be fetched;
//   - the key is the body's callback_id field or the Idempotency-Key header;
//   - an unknown target resource is a 404 before any receipt is written;
//   - the first request reserves a receipt and is processed: the target's
//     update and the receipt's final status are one transaction;
//   - a retry while that delivery is processing gets 409 with Retry-After
//     (never a "done" it could not promise); once the reservation lapses
//     (its holder died) a retry takes it over and processes; after the
//     callback was processed a retry gets 200 with idempotent_replayed:
//     true, the original received-at and the status recorded;
//   - a request without a key is processed and logged as unprotected
//     (backwards compatible);
//   - a route without a target of its own (route.Route.ToHandler) applies
//     the callback by POSTing it to the team's handler container
//     (handler.CallbackPath) once per key, through the one call
//     (downstream) and its answer table: done completes the receipt (the
//     handler's answer, replayed after); refused rejects it for good
//     (replayed after); retried or in doubt releases it (503), so the
//     caller's retry calls the handler again; an answer later than the
//     call's timeout is 503 while the call runs on, and its answer settles
//     the receipt. Such a route needs a key (400 without one).
package callback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strconv"
	"time"

	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventpipe/eventpipe/consumer/auth"
	"github.com/eventpipe/eventpipe/consumer/budget"
	"github.com/eventpipe/eventpipe/consumer/classify"
	"github.com/eventpipe/eventpipe/consumer/downstream"
	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/consumer/handler"
	"github.com/eventpipe/eventpipe/consumer/limits"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/logging"
	"github.com/eventpipe/eventpipe/consumer/route"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/opcount"
	"github.com/eventpipe/eventpipe/consumer/tracing"
)

// Pattern is the ServeMux pattern of the handler.
const Pattern = "POST /callbacks/{route}"

// PathPrefix is the path prefix of every callback (Pattern's).
const PathPrefix = "/callbacks/"

// MaxBody bounds a callback body.
const MaxBody = limits.MaxCallbackBodyBytes

// Handler serves callbacks.
type Handler struct {
	routes   *route.Table
	engine   *engine.Engine
	env      string
	log      *slog.Logger
	verifier *auth.Verifier
	tracer   *tracing.Tracer
	// handlerURL and caller reach the handler (routes that name it).
	handlerURL string
	caller     *downstream.Caller
	// maxStoredBody bounds the handler's response body kept for replay.
	maxStoredBody int
	budget        *budget.Budget
	now           func() time.Time
}

// Config configures a Handler.
type Config struct {
	Routes *route.Table
	// Engine holds the receipts and runs every write to a target.
	Engine *engine.Engine
	Env    string
	Logger *slog.Logger
	// Verifier, when set, checks every callback's OIDC token (the calling
	// job's service account); nil leaves authentication to Cloud Run IAM.
	Verifier *auth.Verifier
	// Tracer, when set, makes every callback a span whose parent is the
	// request's traceparent header.
	Tracer *tracing.Tracer
	// HandlerURL is the handler container's base URL (handler.URLEnv),
	// required when a callback route names the handler (CheckHandler).
	HandlerURL string
	// Caller posts callbacks to the handler (default: a client carrying
	// traceparent when Tracer is set; the server gives the one its doors
	// share, cut at the shutdown deadline).
	Caller *downstream.Caller
	// MaxStoredBody bounds the handler's response body stored with a
	// callback's receipt and replayed (default handler.DefaultMaxStoredBody,
	// the Idempotency-Key API's bound: EVENTPIPE_IDEMPOTENCY_MAX_STORED_BODY).
	MaxStoredBody int
	// Budget is the instance's memory budget for request bodies, shared
	// with the other doors (nil: none): a callback that does not fit is
	// refused (503 with Retry-After) before its body is read or its key
	// reserved.
	Budget *budget.Budget
}

// New returns a callback handler.
func New(cfg Config) *Handler {
	if cfg.Caller == nil {
		cfg.Caller = downstream.New(cfg.Tracer.HTTPClient(nil), nil)
	}
	if cfg.MaxStoredBody <= 0 {
		cfg.MaxStoredBody = handler.DefaultMaxStoredBody
	}
	return &Handler{routes: cfg.Routes, engine: cfg.Engine, env: cfg.Env, log: cfg.Logger,
		verifier: cfg.Verifier, tracer: cfg.Tracer, handlerURL: cfg.HandlerURL, caller: cfg.Caller, maxStoredBody: cfg.MaxStoredBody,
		budget: cfg.Budget, now: time.Now}
}

// CheckHandler reports a callback route that names the handler (it has no
// target of its own) when no handler URL is configured.
func CheckHandler(routes *route.Table, handlerURL string) error {
	if handlerURL != "" {
		return nil
	}
	for _, r := range routes.Routes() {
		if r.Ingress == route.IngressCallback && r.ToHandler() {
			return fmt.Errorf("callback route %s has no target, so it sends its callbacks to the handler, but %s is not set (fix: set it to the handler container's address, e.g. http://localhost:8081, or give the route a target)", r.Name, handler.URLEnv)
		}
	}
	return nil
}

// outcome collects one request's log fields.
type outcome struct {
	route, key, doc, receipt, result string
	unprotected                      bool
	status                           int
	err                              error
	class                            classify.Class
	ops                              opcount.Counts
	started                          time.Time
	// retryAfter, when set, is the Retry-After of a 409 for a callback
	// another delivery is processing.
	retryAfter time.Duration
	// response, when set, is the handler's stored answer
	// (handler.StoredResponse), written instead of the JSON body; replayed
	// says it is a retry's.
	response map[string]any
	replayed bool
	// late marks the line of a handler's answer that came after the
	// callback was answered (its call outlived its timeout).
	late bool
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o := &outcome{route: r.PathValue("route"), started: time.Now()}
	var span trace.Span
	if h.tracer.Enabled() {
		var ctx context.Context
		ctx, span = h.tracer.StartCallback(r, o.route)
		r = r.WithContext(ctx)
	}
	resp := h.handle(r, o)
	h.logLine(r.Context(), o)
	if span != nil {
		tracing.Finish(span, o.result, o.err, semconv.HTTPResponseStatusCode(o.status))
	}
	if o.response != nil {
		handler.WriteStored(w, o.response, o.replayed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if o.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((o.retryAfter+time.Second-1)/time.Second)))
	}
	w.WriteHeader(o.status)
	_ = json.NewEncoder(w).Encode(resp)
}

func (h *Handler) handle(r *http.Request, o *outcome) map[string]any {
	if h.verifier != nil {
		if _, err := h.verifier.Verify(r); err != nil {
			status, transient, public := auth.Refusal(err)
			o.status, o.err, o.result = status, err, logfields.OutcomeRetry
			o.class = classify.Class{Type: logfields.ErrorTypeConfiguration}
			if transient {
				o.class = classify.Class{Type: logfields.ErrorTypeTransient, Retryable: true}
			}
			return map[string]any{"error": public}
		}
	}
	rt := h.routes.Callback(o.route)
	if rt == nil {
		return o.fail(http.StatusNotFound, classify.Poison(fmt.Errorf("no callback route %q (fix: call /callbacks/<name> with a route of ingress \"callback\")", o.route)))
	}
	release, err := h.budget.Take(limits.CallbackDoor(), r.ContentLength)
	if err != nil {
		o.retryAfter = budget.RetryAfter
		return o.fail(budget.Status, classify.Transient(err, ""))
	}
	defer release()
	body, err := budget.ReadBody(nil, r, MaxBody)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return o.fail(http.StatusRequestEntityTooLarge, classify.Poison(fmt.Errorf("callback body larger than %d bytes", MaxBody)))
		}
		return o.fail(http.StatusBadRequest, classify.Poison(fmt.Errorf("read body: %w", err)))
	}
	payload, err := envelope.DecodePayload(body)
	if err != nil {
		return o.fail(http.StatusBadRequest, classify.Poison(fmt.Errorf("callback body: %w", err)))
	}
	key, err := idempotencyKey(rt.Receipt, payload, r.Header)
	if err != nil {
		return o.fail(http.StatusBadRequest, classify.Poison(err))
	}
	o.key, o.unprotected = key, key == ""
	now := h.now().UTC()
	msg := &envelope.Message{ID: key, Data: body, Payload: payload, Attributes: map[string]string{}, PublishTime: now}
	routed, err := rt.Apply(msg, h.env)
	if err != nil {
		return o.fail(http.StatusBadRequest, err)
	}
	o.doc = routed.Target.String()
	// Fetch the target first, so an unknown resource is a clean
	// 404 and no receipt is written for it.
	if rt.Target.MustExist {
		exists, err := h.exists(r.Context(), routed.Target, o)
		if err != nil {
			return o.fail(http.StatusInternalServerError, err)
		}
		if !exists {
			return o.fail(http.StatusNotFound, classify.Poison(fmt.Errorf("%s does not exist (unknown %s %s; fix: send the %s of an existing one: the event that creates it comes first)",
				routed.Target, rt.Target.ID, envelope.Quote(routed.AggregateID), rt.Target.ID)))
		}
	}
	if key == "" && rt.ToHandler() {
		return o.fail(http.StatusBadRequest, classify.Poison(fmt.Errorf("callback route %s sends callbacks to the handler once per key, and this one has none (fix: send the callback_id you were given in %s or the %s header)", rt.Name, rt.Receipt.KeyField, rt.Receipt.Header)))
	}
	if key == "" {
		if err := h.apply(r.Context(), routed, rt.Target.MustExist, o); err != nil {
			return o.fail(statusOf(err), err)
		}
		o.status, o.result = http.StatusOK, logfields.OutcomeApplied
		return map[string]any{"message": "Callback processed without an idempotency key", "idempotent_replayed": false, "unprotected": true}
	}
	rc, err := h.engine.Claim(r.Context(), engine.Request{Scope: rt.Name, ID: key, Payload: body,
		Fields: map[string]any{"target": routed.Target.String()}, Lease: time.Duration(rt.Receipt.LeaseTTL)})
	o.ops = o.ops.Add(rc.Ops)
	o.receipt = rc.Doc
	if err != nil {
		switch classify.Of(err).Type {
		case logfields.ErrorTypeInProgress:
			return o.inProgress(err, rc.HeldUntil.Sub(h.now()), rc)
		case logfields.ErrorTypePoison:
			return o.fail(http.StatusConflict, err) // the callback id was reused with another body
		}
		return o.fail(http.StatusInternalServerError, err)
	}
	if rc.Replayed {
		return o.replay(rc)
	}
	if rt.ToHandler() {
		return h.forward(r.Context(), rt, rc, key, body, routed, o)
	}
	status := "processed"
	if s, ok := routed.Fields()["status"].(string); ok && s != "" {
		status = s
	}
	// The update and the receipt's settling commit together, and only
	// while this delivery still holds the receipt.
	done, err := h.engine.Settle(context.WithoutCancel(r.Context()), rc, engine.Settlement{Status: engine.StatusCompleted,
		Result: map[string]any{resultStatus: status},
		Effect: func(ctx context.Context, tx store.Tx) error { return h.merge(ctx, tx, routed, rt.Target.MustExist) }})
	o.ops = o.ops.Add(done.Ops)
	if err != nil {
		if classify.Of(err).Type == logfields.ErrorTypeStale {
			// Taken over by a retry after this delivery's reservation
			// lapsed: that delivery applies it; ask the caller to retry.
			return o.inProgress(err, time.Second, rc)
		}
		// Nothing was applied: give the receipt back so the caller's
		// retry processes it.
		err = h.release(context.WithoutCancel(r.Context()), rc, err, false)
		return o.fail(statusOf(err), err)
	}
	o.status, o.result = http.StatusOK, logfields.OutcomeApplied
	return map[string]any{"message": "Callback processed", "idempotent_replayed": false,
		"received_at": rc.ReceivedAt.UTC().Format(time.RFC3339Nano), "status": status}
}

// replay answers a callback whose receipt was settled before: the
// handler's stored answer byte for byte, or the receipt's status.
func (o *outcome) replay(rc engine.Reservation) map[string]any {
	o.status, o.result = http.StatusOK, logfields.OutcomeDuplicate
	if stored, ok := rc.Result[responseField].(map[string]any); ok {
		// The handler's own answer, byte for byte.
		status, _ := stored["status"].(int64)
		o.response, o.replayed, o.status = stored, true, int(status)
		return nil
	}
	// A receipt without the handler's answer (recorded before it was
	// kept, or of a target route) replays the receipt's status.
	body := map[string]any{"message": "Callback already processed", "idempotent_replayed": true,
		"original_received_at": rc.ReceivedAt.UTC().Format(time.RFC3339Nano), "status": callbackStatus(rc)}
	if hs, ok := rc.Result[handlerStatusField]; ok {
		body[handlerStatusField] = hs
		if rc.Status == engine.StatusRejected {
			o.status = http.StatusUnprocessableEntity
			body["message"] = "Callback already rejected by the handler"
		}
	}
	return body
}

// callbackStatus is the status a settled receipt answers with: the one
// recorded (the callback's own, or processed or rejected for a callback
// sent to the handler); a receipt recorded before the one status
// vocabulary kept it as the record's status.
func callbackStatus(rc engine.Reservation) string {
	if s, ok := rc.Result[resultStatus].(string); ok {
		return s
	}
	return rc.Status
}

// Receipt result fields.
const (
	// resultStatus is the callback's own status (a target route), or
	// processed or rejected (a callback sent to the handler).
	resultStatus       = "status"
	statusProcessed    = "processed"
	statusRejected     = "rejected"
	handlerStatusField = "handler_status"
	// responseField holds the handler's answer (handler.StoredResponse),
	// replayed byte for byte to a retry of the callback.
	responseField = "handler_response"
)

// forward sends a claimed callback to the handler through the one call
// and settles its receipt by the answer table: done completes it (the
// handler's answer, 200 and the like), a refusal rejects it for good (the
// handler's answer; a redirect is 422), retried or in doubt releases it
// (503). A call still running at the call's timeout is answered 503 and
// runs on, to the receipt's length; its answer settles the receipt.
func (h *Handler) forward(ctx context.Context, rt *route.Route, rc engine.Reservation, key string, body []byte, routed *route.Routed, o *outcome) map[string]any {
	// The call is not cut short when the caller goes away: its answer is
	// still recorded for the caller's retry.
	ctx = context.WithoutCancel(ctx)
	msg, err := json.Marshal(handler.Callback{IdempotencyKey: key, Route: rt.Name, ReceivedAt: rc.ReceivedAt.UTC(),
		Callback: json.RawMessage(body), Fields: routed.Fields()})
	if err != nil {
		err = classify.Poison(fmt.Errorf("callback to the handler: %w", err))
		return o.fail(http.StatusBadRequest, h.release(ctx, rc, err, false))
	}
	o.doc = handler.CallbackPath(rt.Name)
	lease := time.Duration(rt.Receipt.LeaseTTL)
	a, err := h.caller.Do(ctx, downstream.Call{URL: handler.CallbackURL(h.handlerURL, rt.Name), Key: key, Attempt: rc.Attempt, Body: msg,
		MaxBody: h.maxStoredBody, Timeout: callTimeout(rt), Bound: lease, Heartbeat: lease / 5,
		Extend: func(ctx context.Context) error { _, err := h.engine.Extend(ctx, rc); return err },
		Late: func(a downstream.Answer) {
			late := &outcome{route: rt.Name, key: key, receipt: rc.Doc, doc: o.doc, started: time.Now().Add(-a.Took)}
			late.late = true
			h.settle(ctx, rc, a, late)
			h.logLine(ctx, late)
		}})
	if errors.Is(err, downstream.ErrLate) {
		o.retryAfter = time.Second
		return o.fail(http.StatusServiceUnavailable, classify.InProgress(fmt.Errorf("the handler has not answered within %s: the call runs on, at most %s, and its answer settles the callback; retry to get it", callTimeout(rt), lease)))
	}
	return h.settle(ctx, rc, a, o)
}

// settle settles rc by a's verdict and fills o with the answer to give.
func (h *Handler) settle(ctx context.Context, rc engine.Reservation, a downstream.Answer, o *outcome) map[string]any {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	switch a.Verdict {
	case downstream.Retry, downstream.Unknown:
		// The handler did not (durably) act, or nobody knows: give the
		// receipt back so the caller's retry calls it again (in doubt, the
		// handler is told by the attempt number).
		o.retryAfter = time.Second
		return o.fail(http.StatusServiceUnavailable, h.release(ctx, rc, a.Err, a.Verdict == downstream.Unknown))
	case downstream.Abandoned:
		o.retryAfter = time.Second
		return o.fail(http.StatusServiceUnavailable, a.Err)
	}
	status, final := engine.StatusCompleted, statusProcessed
	if a.Verdict == downstream.Refused {
		status, final = engine.StatusRejected, statusRejected
	}
	result := map[string]any{handlerStatusField: int64(a.Status), resultStatus: final}
	var stored map[string]any
	if a.Status < 300 || a.Status >= 400 { // a redirect is not passed to a caller that POSTed
		if !a.Cut {
			stored = handler.StoredResponse(a.Status, a.Header, a.Head, h.maxStoredBody)
			result[responseField] = stored
		}
	}
	done, err := h.engine.Settle(ctx, rc, engine.Settlement{Status: status, Result: result})
	o.ops = o.ops.Add(done.Ops)
	if err != nil {
		if classify.Of(err).Type == logfields.ErrorTypeStale {
			return o.inProgress(err, time.Second, rc)
		}
		// The handler answered but the receipt could not record it: until
		// the reservation lapses retries get 409, then one calls again.
		return o.fail(http.StatusInternalServerError, fmt.Errorf("handler answered HTTP %d; recording it failed: %w", a.Status, err))
	}
	if a.Verdict == downstream.Refused {
		out := o.fail(http.StatusUnprocessableEntity, a.Err)
		out["status"], out[handlerStatusField] = final, a.Status
		if stored != nil {
			o.response, o.status = stored, a.Status
		}
		return out
	}
	o.status, o.result = http.StatusOK, logfields.OutcomeApplied
	if stored != nil {
		o.response, o.status = stored, a.Status
	}
	return map[string]any{"message": "Callback processed by the handler", "idempotent_replayed": false,
		"received_at": rc.ReceivedAt.UTC().Format(time.RFC3339Nano), "status": final, handlerStatusField: a.Status}
}

// settleTimeout bounds the store writes that settle a callback's receipt
// once the handler answered.
const settleTimeout = 10 * time.Second

// release gives back rc after err stopped its processing (nothing was
// applied, or, inDoubt, nobody knows) and returns err, naming the
// release's own failure too.
func (h *Handler) release(ctx context.Context, rc engine.Reservation, err error, inDoubt bool) error {
	if _, rerr := h.engine.Release(ctx, rc, err, inDoubt); rerr != nil {
		return fmt.Errorf("%w; releasing the receipt also failed: %v", err, rerr)
	}
	return err
}

// callTimeout is how long a callback waits for the handler's answer: four
// fifths of the route's receipt lease (the call itself runs on to the
// lease, extended while it runs).
func callTimeout(rt *route.Route) time.Duration {
	return time.Duration(rt.Receipt.LeaseTTL) * 4 / 5
}

// inProgress answers a callback another delivery is processing: 409 with
// Retry-After (at least a second), never a "done" that may not come true.
func (o *outcome) inProgress(err error, retryAfter time.Duration, rc engine.Reservation) map[string]any {
	o.status, o.err, o.class = http.StatusConflict, err, classify.Of(err)
	o.result = logfields.OutcomeRetry
	o.retryAfter = max(retryAfter, time.Second)
	body := map[string]any{"message": "Callback is being processed by another delivery; retry after the Retry-After seconds",
		"idempotent_replayed": false, "status": "processing"}
	if !rc.ReceivedAt.IsZero() { // unknown when the receipt was in use and not read
		body["original_received_at"] = rc.ReceivedAt.UTC().Format(time.RFC3339Nano)
	}
	return body
}

// fail records a failure and returns the error body.
func (o *outcome) fail(status int, err error) map[string]any {
	o.status, o.err, o.class = status, err, classify.Of(err)
	o.result = logfields.OutcomeRetry
	if status < 500 {
		o.result = logfields.OutcomePoison
	}
	return map[string]any{"error": err.Error()}
}

// statusOf maps an apply error: a vanished target is 404, the rest 500.
func statusOf(err error) int {
	if errors.Is(err, errVanished) {
		return http.StatusNotFound
	}
	return http.StatusInternalServerError
}

// idempotencyKey reads the key from the body field or the header; both
// present must agree.
func idempotencyKey(rc *route.Receipt, payload envelope.Payload, hdr http.Header) (string, error) {
	var fromBody, fromHeader string
	if rc.KeyField != "" {
		v, _ := payload.Get(rc.KeyField)
		switch v := v.(type) {
		case nil:
		case string:
			fromBody = v
		default:
			return "", fmt.Errorf("callback field %s must be a string (fix: send the callback_id you were given as text)", rc.KeyField)
		}
	}
	if rc.Header != "" {
		fromHeader = hdr.Get(rc.Header)
	}
	for _, k := range [][2]string{{rc.KeyField, fromBody}, {rc.Header, fromHeader}} {
		if len(k[1]) > limits.MaxIDBytes {
			return "", fmt.Errorf("idempotency key %s is %d bytes long; keys are at most %d bytes (fix: send a shorter callback_id)", k[0], len(k[1]), limits.MaxIDBytes)
		}
	}
	if fromBody != "" && fromHeader != "" && fromBody != fromHeader {
		return "", fmt.Errorf("body %s %s and header %s %s disagree (fix: send one key, or the same in both)", rc.KeyField, envelope.Quote(fromBody), rc.Header, envelope.Quote(fromHeader))
	}
	if fromBody != "" {
		return fromBody, nil
	}
	return fromHeader, nil
}

var errVanished = errors.New("target vanished")

func (h *Handler) exists(ctx context.Context, key store.Key, o *outcome) (bool, error) {
	found := false
	// Read-only: the check waits for no transaction holding the target (a
	// delivery's Settle), so a retry reaches the receipt, which says at
	// once whether the callback is in progress. Settle checks again.
	ops, err := h.engine.Apply(store.ReadOnly(ctx), func(ctx context.Context, tx store.Tx) error {
		d, err := tx.Get(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			found = false
			return nil
		}
		found = err == nil && !d.Expired(h.now())
		return err
	})
	o.ops = o.ops.Add(ops)
	return found, err
}

// apply merges the callback's fields into the target document in a
// transaction of the engine (a callback without an idempotency key).
func (h *Handler) apply(ctx context.Context, routed *route.Routed, mustExist bool, o *outcome) error {
	ops, err := h.engine.Apply(ctx, func(ctx context.Context, tx store.Tx) error {
		return h.merge(ctx, tx, routed, mustExist)
	})
	o.ops = o.ops.Add(ops)
	return err
}

// merge merges the callback's fields into the target document in tx.
func (h *Handler) merge(ctx context.Context, tx store.Tx, routed *route.Routed, mustExist bool) error {
	cur, err := tx.Get(ctx, routed.Target)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if mustExist {
			return fmt.Errorf("%s: %w", routed.Target, errVanished)
		}
		cur = store.Document{Fields: map[string]any{}}
	case err != nil:
		return err
	}
	fields := make(map[string]any, len(cur.Fields)+len(routed.Fields())+1)
	maps.Copy(fields, cur.Fields)
	maps.Copy(fields, routed.Fields())
	fields["updatedAt"] = h.now().UTC()
	return tx.Set(ctx, routed.Target, store.Document{Fields: fields, ExpireAt: cur.ExpireAt})
}

func (h *Handler) logLine(ctx context.Context, o *outcome) {
	level := slog.LevelInfo
	switch {
	case o.status >= 500 && o.class.Type == logfields.ErrorTypeConfiguration:
		level = logging.LevelCritical
	case o.retryAfter > 0, o.status == http.StatusUnauthorized, o.status == http.StatusForbidden:
		level = slog.LevelWarn
	case o.status >= 400:
		level = slog.LevelError
	case o.unprotected:
		level = slog.LevelWarn
	}
	a := []slog.Attr{
		slog.String(logfields.Route, o.route),
		slog.String(logfields.Outcome, o.result),
		slog.Int(logfields.HTTPStatus, o.status),
		slog.String(logfields.WriteKind, writeKind(o)),
		slog.String(logfields.DocPath, o.doc),
		slog.String(logfields.IdempotencyDoc, o.receipt),
		slog.String(logfields.IdempotencyKey, o.key),
		slog.Bool(logfields.Unprotected, o.unprotected),
		slog.Int64(logfields.StoreReads, o.ops.Reads),
		slog.Int64(logfields.StoreWrites, o.ops.Writes+o.ops.Deletes),
		slog.Float64(logfields.LatencyMS, float64(time.Since(o.started).Microseconds())/1000),
		slog.Bool(logfields.Retryable, o.class.Retryable),
	}
	if o.late {
		a = append(a, slog.Bool("late", true))
	}
	if o.err != nil {
		a = append(a, slog.String(logfields.ErrorType, o.class.Type), slog.String(logfields.ErrorCode, o.class.Code),
			slog.String(logfields.Error, o.err.Error()))
	} else if o.result == logfields.OutcomeDuplicate {
		a = append(a, slog.String(logfields.ErrorType, logfields.ErrorTypeDuplicate))
	}
	h.log.LogAttrs(ctx, level, "callback "+o.result, a...)
}

func writeKind(o *outcome) string {
	switch {
	case o.result == logfields.OutcomeApplied && o.unprotected:
		return logfields.WriteKindSet
	case o.result == logfields.OutcomeApplied:
		return logfields.WriteKindReceipt
	}
	return logfields.WriteKindNone
}
