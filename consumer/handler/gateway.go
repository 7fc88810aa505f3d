package handler

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"time"

	"github.com/eventpipe/eventpipe/consumer/budget"
	"github.com/eventpipe/eventpipe/consumer/downstream"
	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/keys"
	"github.com/eventpipe/eventpipe/consumer/limits"
	"github.com/eventpipe/eventpipe/consumer/logfields"
)

// Response headers of the gateway's own answers.
const (
	// ReplayedHeader is "true" on a stored response replayed for a key
	// whose request completed before.
	ReplayedHeader = "Idempotent-Replayed"
	// BodyOmittedHeader is "true" on a replay whose original body was
	// larger than Config.MaxStoredBody and was not stored.
	BodyOmittedHeader = "Idempotent-Body-Omitted"
)

// keyRoute is the receipt route of API keys: their records live with the
// callback receipts ({prefix}receipts, under the same TTL policy), as
// {env}__http-idempotency__{scope hash}.
const keyRoute = "http-idempotency"

// MaxKeyLength bounds an Idempotency-Key value, in bytes.
const MaxKeyLength = 255

// finishTimeout bounds the store write that settles a key once the handler
// answered (the request's own deadline may be nearly spent by then).
const finishTimeout = 10 * time.Second

// storedHeaders are the response headers stored and replayed with a key's
// response (canonical names); others are not replayed.
var storedHeaders = []string{"Cache-Control", "Content-Encoding", "Content-Language", "Content-Location", "Content-Type",
	"Etag", "Last-Modified", "Link", "Location", "Vary"}

// GatewayOptions configure a Gateway besides Config.
type GatewayOptions struct {
	// Engine holds the key records (its receipts); required.
	Engine *engine.Engine
	// Logger receives one line per keyed request; required.
	Logger *slog.Logger
	// Transport carries requests to the handler (default NewTransport()).
	Transport http.RoundTripper
	// Caller makes the keyed calls (default: one on Transport, never cut);
	// the server gives the one its doors share, cut at the shutdown
	// deadline.
	Caller *downstream.Caller
	// Own are the consumer's own paths, never proxied (a path ending in
	// "/" is a prefix). ReservedPrefix is always own.
	Own []string
	// Budget is the instance's memory budget for request bodies, shared
	// with the other doors (nil: none): a keyed request that does not fit
	// is refused (budget.Refuse) before its body is read or its key
	// reserved.
	Budget *budget.Budget
}

// Gateway proxies requests to the handler; a POST or PATCH with an
// Idempotency-Key is forwarded at most once per key scope and its response
// replayed (docs/handlers.md). It is safe for concurrent use.
type Gateway struct {
	cfg   Config
	opts  GatewayOptions
	proxy *httputil.ReverseProxy
}

// NewGateway returns the gateway to cfg.URL.
func NewGateway(cfg Config, opts GatewayOptions) (*Gateway, error) {
	switch {
	case opts.Engine == nil:
		return nil, errors.New("handler gateway: no engine")
	case opts.Logger == nil:
		return nil, errors.New("handler gateway: no logger")
	}
	target, err := ParseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if opts.Transport == nil {
		opts.Transport = NewTransport()
	}
	if opts.Caller == nil {
		opts.Caller = downstream.New(&http.Client{Transport: opts.Transport}, nil)
	}
	opts.Own = append(opts.Own, ReservedPrefix)
	g := &Gateway{cfg: cfg, opts: opts}
	g.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.SetXForwarded()
		},
		Transport:      keyedTransport{g},
		ModifyResponse: g.settle,
		ErrorHandler:   g.failed,
		ErrorLog:       slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn),
	}
	return g, nil
}

// NewTransport returns the transport to the handler: the default one,
// keeping up to 256 idle connections (the default keeps 2 per host, too few
// for a busy instance talking to one container).
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = 256, 256
	return t
}

// keyed is the state of one keyed request, carried in its context from
// ServeHTTP to the transport, settle or failed.
type keyed struct {
	rc      engine.Reservation
	outcome string // forwarded, refused, released, late, unsettled
	status  int    // answered: the handler's status, or failed's own
	err     error
	// lateLog logs the settling of a call that outlived the timeout.
	lateLog func(outcome string, status int, err error)
}

// keyedTransport carries a keyed request through the one call
// (downstream.Caller.RoundTrip: attempt header, heartbeat, a late answer
// settled in the background), everything else straight to the transport.
type keyedTransport struct{ g *Gateway }

// RoundTrip implements http.RoundTripper.
func (t keyedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	g := t.g
	st, _ := req.Context().Value(keyedCtx{}).(*keyed)
	if st == nil {
		return g.opts.Transport.RoundTrip(req)
	}
	length := g.cfg.reservation()
	return g.opts.Caller.RoundTrip(g.opts.Transport, req, downstream.Call{Attempt: st.rc.Attempt, MaxBody: g.cfg.MaxStoredBody,
		Timeout: g.cfg.Timeout, Bound: length, Heartbeat: length / 5,
		Extend: func(ctx context.Context) error { _, err := g.opts.Engine.Extend(ctx, st.rc); return err },
		Late:   func(a downstream.Answer) { g.settleLate(req.Context(), st, a) }})
}

type keyedCtx struct{}

// ServeHTTP proxies r, applying the Idempotency-Key rules to POST and PATCH.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if g.own(r.URL.Path) {
		problem(w, http.StatusNotFound, "Not Found", fmt.Sprintf("%s is served by the eventpipe consumer, not proxied to the handler", r.URL.Path))
		return
	}
	raw := r.Header.Values(IdempotencyKeyHeader)
	if len(raw) == 0 || (r.Method != http.MethodPost && r.Method != http.MethodPatch) {
		g.proxy.ServeHTTP(w, r)
		return
	}
	g.serveKeyed(w, r, raw)
}

func (g *Gateway) own(path string) bool {
	for _, p := range g.opts.Own {
		if path == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(path, p)) || path+"/" == p {
			return true
		}
	}
	return false
}

func (g *Gateway) serveKeyed(w http.ResponseWriter, r *http.Request, raw []string) {
	started := time.Now()
	line := []any{"method", r.Method, "path", r.URL.Path}
	finish := func(outcome string, status int, extra ...any) {
		attrs := append(line, logfields.Outcome, outcome, logfields.HTTPStatus, status, logfields.LatencyMS, time.Since(started).Milliseconds())
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		}
		g.opts.Logger.Log(r.Context(), level, "idempotency key", append(attrs, extra...)...)
	}
	// refuse answers with a problem document instead of forwarding.
	refuse := func(outcome string, status int, title, detail string, extra ...any) {
		problem(w, status, title, detail)
		finish(outcome, status, extra...)
	}
	key, err := ParseKey(raw)
	if err != nil {
		refuse("invalid_key", http.StatusBadRequest, "Invalid Idempotency-Key", err.Error(), logfields.Error, err.Error())
		return
	}
	line = append(line, logfields.IdempotencyKey, key)
	tooLarge := func() {
		refuse("too_large", http.StatusRequestEntityTooLarge, "Request body too large",
			fmt.Sprintf("a request with an Idempotency-Key may carry at most %d bytes (it is fingerprinted whole)", g.cfg.MaxRequestBody))
	}
	door := limits.KeyedDoor(g.cfg.MaxRequestBody)
	if r.ContentLength > door.MaxBody {
		tooLarge()
		return
	}
	release, err := g.opts.Budget.Take(door, r.ContentLength)
	if err != nil {
		refuse("over_budget", budget.Refuse(w), "Instance at its memory budget",
			"the request was not read and its key not reserved; retry after the Retry-After seconds with the same Idempotency-Key", logfields.Error, err.Error())
		return
	}
	defer release()
	body, err := budget.ReadBody(w, r, door.MaxBody)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		tooLarge()
		return
	case err != nil:
		refuse("bad_request", http.StatusBadRequest, "Unreadable request body", err.Error(), logfields.Error, err.Error())
		return
	}
	rc, err := g.opts.Engine.Claim(r.Context(), engineRequest(r, key, body, g.cfg))
	line = append(line, logfields.IdempotencyDoc, rc.Doc)
	var ee *engine.Error
	switch {
	case err == nil && rc.Replayed:
		finish("replayed", WriteStored(w, rc.Result, true))
		return
	case errors.As(err, &ee) && ee.Type == engine.TypeInProgress:
		// The first request usually finishes well before its reservation
		// (HeldUntil) would lapse: ask for a retry soon, not then.
		w.Header().Set("Retry-After", "1")
		refuse("in_progress", http.StatusConflict, "A request with this Idempotency-Key is being processed",
			"retry after the Retry-After seconds: you will get its response")
		return
	case errors.As(err, &ee) && ee.Code == "FINGERPRINT_MISMATCH":
		refuse("key_reused", http.StatusUnprocessableEntity, "Idempotency-Key is already used",
			"this key was used with a different request payload: use a new key for a new request")
		return
	case err != nil:
		w.Header().Set("Retry-After", "1")
		refuse("store_error", http.StatusServiceUnavailable, "Idempotency store unavailable",
			"the request was not forwarded; retry with the same Idempotency-Key", logfields.Error, err.Error())
		return
	}
	st := &keyed{rc: rc, lateLog: func(outcome string, status int, err error) {
		extra := []any{"attempt", rc.Attempt, "late", true}
		if err != nil {
			extra = append(extra, logfields.Error, err.Error())
		}
		finish(outcome, status, extra...)
	}}
	// The handler's call is not cut short when the client goes away: its
	// response is still stored, and the client's retry gets it. The one
	// call (keyedTransport) bounds it.
	ctx := context.WithValue(context.WithoutCancel(r.Context()), keyedCtx{}, st)
	out := r.Clone(ctx)
	out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	out.Header.Del("Content-Length")
	g.proxy.ServeHTTP(w, out)
	extra := []any{"attempt", rc.Attempt}
	if st.err != nil {
		extra = append(extra, logfields.Error, st.err.Error())
	}
	finish(st.outcome, st.status, extra...)
}

// engineRequest is the reservation request of a keyed API request. The
// scope is method, path, query and key; the fingerprint is the canonical
// JSON of the body (keys.Fingerprint) or, for any other body, its SHA-256.
func engineRequest(r *http.Request, key string, body []byte, cfg Config) engine.Request {
	h := sha256.New()
	for _, part := range []string{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, key} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return engine.Request{Scope: keyRoute, ID: hex.EncodeToString(h.Sum(nil)), Fingerprint: Fingerprint(body),
		Fields: map[string]any{"method": r.Method, "path": r.URL.Path, "key": key},
		Lease:  cfg.reservation(), TTL: cfg.KeyTTL}
}

// Fingerprint is the fingerprint of a request body: keys.Fingerprint (the
// canonical JSON's SHA-256, blind to whitespace and member order) when the
// body is JSON, else "raw-sha256:" and the hex SHA-256 of the bytes.
func Fingerprint(body []byte) string {
	if fp, err := keys.Fingerprint(body); err == nil {
		return fp
	}
	sum := sha256.Sum256(body)
	return "raw-sha256:" + hex.EncodeToString(sum[:])
}

// ParseKey reads the Idempotency-Key field: one value, a Structured Field
// string ("..." as the draft specifies) or, leniently, a bare token, of 1
// to MaxKeyLength visible ASCII characters.
func ParseKey(values []string) (string, error) {
	if len(values) != 1 {
		return "", fmt.Errorf("%d %s fields: send exactly one", len(values), IdempotencyKeyHeader)
	}
	v := strings.TrimSpace(values[0])
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		var b strings.Builder
		for i := 1; i < len(v)-1; i++ {
			c := v[i]
			if c == '\\' {
				i++
				if i == len(v)-1 || (v[i] != '"' && v[i] != '\\') {
					return "", fmt.Errorf("%s %s: a backslash in a string escapes only \" and \\", IdempotencyKeyHeader, v)
				}
				c = v[i]
			} else if c == '"' {
				return "", fmt.Errorf("%s %s: unescaped quote inside the string", IdempotencyKeyHeader, v)
			}
			b.WriteByte(c)
		}
		v = b.String()
	}
	if v == "" || len(v) > MaxKeyLength {
		return "", fmt.Errorf("%s is %d bytes: use 1 to %d (a UUID is best)", IdempotencyKeyHeader, len(v), MaxKeyLength)
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return "", fmt.Errorf("%s has a byte 0x%02x: use visible ASCII (a UUID is best)", IdempotencyKeyHeader, v[i])
		}
	}
	return v, nil
}

// settle is the proxy's ModifyResponse: it settles a keyed request's key
// by the answer table (downstream.VerdictOf) before the client sees any of
// the answer: a done or refused answer is stored (completed or rejected)
// and replayed; a retryable one gives the key back.
func (g *Gateway) settle(resp *http.Response) error {
	st, _ := resp.Request.Context().Value(keyedCtx{}).(*keyed)
	if st == nil {
		return nil
	}
	st.status = resp.StatusCode
	ctx, cancel := context.WithTimeout(context.WithoutCancel(resp.Request.Context()), finishTimeout)
	defer cancel()
	if downstream.VerdictOf(resp.StatusCode) == downstream.Retry {
		st.outcome = "released"
		if _, err := g.opts.Engine.Release(ctx, st.rc, fmt.Errorf("HTTP %d", resp.StatusCode), false); err != nil {
			st.outcome, st.err = "unsettled", fmt.Errorf("release the key after HTTP %d: %w", resp.StatusCode, err)
		}
		return nil
	}
	head, err := io.ReadAll(io.LimitReader(resp.Body, int64(g.cfg.MaxStoredBody)+1))
	if err != nil {
		return fmt.Errorf("read the handler's response: %w", err)
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	st.outcome, st.err = g.store(ctx, st, downstream.Answer{Verdict: downstream.VerdictOf(resp.StatusCode), Status: resp.StatusCode,
		Header: resp.Header, Head: head})
	return nil
}

// store settles st's key with a done or refused answer, stored for
// replay, and returns the outcome for the log.
func (g *Gateway) store(ctx context.Context, st *keyed, a downstream.Answer) (string, error) {
	status, outcome := engine.StatusCompleted, "forwarded"
	if a.Verdict == downstream.Refused {
		status, outcome = engine.StatusRejected, "refused"
	}
	result := StoredResponse(a.Status, a.Header, a.Head, g.cfg.MaxStoredBody)
	if a.Cut {
		// The body did not arrive whole: keep the status and headers.
		delete(result, "body")
		result["bodyOmitted"] = true
	}
	if err := g.opts.Engine.Hit(ctx, engine.GatewayBeforeFinish); err != nil {
		return "unsettled", err
	}
	if _, err := g.opts.Engine.Settle(ctx, st.rc, engine.Settlement{Status: status, Result: result}); err != nil {
		// The handler acted; the client still gets its answer. Until the
		// reservation lapses retries get 409, then one is forwarded again.
		return "unsettled", fmt.Errorf("store the response: %w", err)
	}
	return outcome, nil
}

// failed is the proxy's ErrorHandler: the handler's answer did not come
// in time (the call runs on and settles the key later: 504), the handler
// could not be reached (the key is given back: 502), or the call ended
// without an answer (the key is given back in doubt: 502; or, cut at
// shutdown, left held: 503).
func (g *Gateway) failed(w http.ResponseWriter, r *http.Request, err error) {
	st, _ := r.Context().Value(keyedCtx{}).(*keyed)
	if st == nil {
		g.opts.Logger.WarnContext(r.Context(), "handler request failed", "method", r.Method, "path", r.URL.Path, logfields.Error, err.Error())
		problem(w, http.StatusBadGateway, "Handler unavailable", "the request may be retried")
		return
	}
	var ce *downstream.CallError
	switch {
	case errors.Is(err, downstream.ErrLate):
		st.outcome, st.status = "late", http.StatusGatewayTimeout
		w.Header().Set("Retry-After", "1")
		problem(w, st.status, "Handler timed out", "the handler is still working on it: retry with the same Idempotency-Key to get its answer")
		return
	case errors.As(err, &ce) && ce.Answer.Verdict == downstream.Abandoned:
		st.outcome, st.status, st.err = "cut", http.StatusServiceUnavailable, err
		w.Header().Set("Retry-After", "1")
		problem(w, st.status, "Consumer shutting down", "retry with the same Idempotency-Key")
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), finishTimeout)
	defer cancel()
	inDoubt := ce != nil && ce.Answer.Verdict == downstream.Unknown
	st.outcome, st.status, st.err = "released", http.StatusBadGateway, err
	if _, rerr := g.opts.Engine.Release(ctx, st.rc, err, inDoubt); rerr != nil && !isFenced(rerr) {
		st.outcome, st.err = "unsettled", errors.Join(err, fmt.Errorf("release the key: %w", rerr))
	}
	problem(w, st.status, "Handler unavailable", "the request may be retried")
}

func isFenced(err error) bool {
	var ee *engine.Error
	return errors.As(err, &ee) && ee.Code == "FENCED"
}

// settleLate settles the key of a call that outlived the timeout, once it
// ended (the client was answered 504), and logs it.
func (g *Gateway) settleLate(ctx context.Context, st *keyed, a downstream.Answer) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	var outcome string
	var err error
	switch a.Verdict {
	case downstream.Done, downstream.Refused:
		outcome, err = g.store(ctx, st, a)
	case downstream.Retry, downstream.Unknown:
		outcome, err = "released", a.Err
		if _, rerr := g.opts.Engine.Release(ctx, st.rc, a.Err, a.Verdict == downstream.Unknown); rerr != nil && !isFenced(rerr) {
			outcome, err = "unsettled", errors.Join(a.Err, rerr)
		}
	default:
		outcome, err = "cut", a.Err
	}
	st.lateLog(outcome, a.Status, err)
}

// StoredResponse is the record of a handler's response kept for replay
// (docs/handlers.md, "Stored response"): its status, the storedHeaders it
// has, and head, the start of its body, byte for byte when it is at most
// maxBody bytes long; a longer body is marked omitted, not stored. Both the
// Idempotency-Key gateway and callbacks to the handler store this, and
// WriteStored answers with it.
func StoredResponse(status int, header http.Header, head []byte, maxBody int) map[string]any {
	headers := map[string]any{}
	for _, name := range storedHeaders {
		if vs := header.Values(name); len(vs) > 0 {
			list := make([]any, len(vs))
			for i, v := range vs {
				list[i] = v
			}
			headers[name] = list
		}
	}
	result := map[string]any{"status": int64(status), "headers": headers}
	if len(head) > maxBody {
		result["bodyOmitted"] = true
	} else {
		result["body"] = base64.StdEncoding.EncodeToString(head)
	}
	return result
}

// WriteStored answers with a StoredResponse record and returns the status
// written: its status, headers and body, with ReplayedHeader when replayed
// and BodyOmittedHeader (and no body) when the body was not stored. A
// record that cannot be read is a 500 problem document.
func WriteStored(w http.ResponseWriter, result map[string]any, replayed bool) int {
	status, _ := result["status"].(int64)
	body, err := base64.StdEncoding.DecodeString(fmt.Sprint(result["body"]))
	if status < 100 || status > 999 || (result["body"] != nil && err != nil) {
		problem(w, http.StatusInternalServerError, "Stored response unreadable", "the stored response of this key is damaged; use a new key")
		return http.StatusInternalServerError
	}
	headers, _ := result["headers"].(map[string]any)
	for name, vs := range headers {
		list, _ := vs.([]any)
		for _, v := range list {
			if s, ok := v.(string); ok {
				w.Header().Add(name, s)
			}
		}
	}
	if replayed {
		w.Header().Set(ReplayedHeader, "true")
	}
	if omitted, _ := result["bodyOmitted"].(bool); omitted {
		w.Header().Set(BodyOmittedHeader, "true")
		body = nil
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(int(status))
	_, _ = w.Write(body)
	return int(status)
}

// problem writes an RFC 9457 problem document, as the draft's examples do.
func problem(w http.ResponseWriter, status int, title, detail string) {
	b, _ := json.Marshal(map[string]any{"type": "about:blank", "title": title, "status": status, "detail": detail})
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
