package handler

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/downstream"
	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
)

// fakeHandler is a team's handler: it answers every call with a new body
// (so a replay is told from a second call), a status chosen by the JSON
// body's "a" (2: 400, 3: 503, else 201), and counts its calls.
type fakeHandler struct {
	calls atomic.Int64
	delay time.Duration
	big   int // bytes of padding in each body
}

func (h *fakeHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := h.calls.Add(1)
	body, _ := io.ReadAll(r.Body)
	time.Sleep(h.delay)
	var p struct{ A int }
	_ = json.Unmarshal(body, &p)
	status := http.StatusCreated
	switch p.A {
	case 2:
		status = http.StatusBadRequest
	case 3:
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", fmt.Sprintf("/things/%d", n))
	w.Header().Set("X-Not-Stored", "1")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"call":%d,"path":%q,"pad":%q}`, n, r.URL.Path, strings.Repeat("x", h.big))
}

// clock is a settable clock for the engine.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

type rig struct {
	gw    *Gateway
	h     *fakeHandler
	clock *clock
	cfg   Config
}

func newRig(t testing.TB, h *fakeHandler, cfg Config, st store.Store) *rig {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := &clock{now: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)}
	if st == nil {
		st = memstore.New()
	}
	eng, err := engine.New(engine.Config{Store: st, Env: "test", Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	cfg.URL = srv.URL
	gw, err := NewGateway(cfg, GatewayOptions{Engine: eng, Logger: slog.New(slog.DiscardHandler), Own: []string{"/pubsub/push", "/callbacks/", "/healthz"}})
	if err != nil {
		t.Fatal(err)
	}
	return &rig{gw: gw, h: h, clock: c, cfg: gw.cfg}
}

func (r *rig) do(method, path, key, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if key != "" {
		req.Header.Set(IdempotencyKeyHeader, key)
	}
	w := httptest.NewRecorder()
	r.gw.ServeHTTP(w, req)
	return w
}

// payloads of the model test: 0 and 1 are one JSON value spelt two ways
// (one fingerprint); 4 is not JSON.
var payloads = []string{`{"a":1,"b":[1,2]}`, "{ \"b\": [1, 2],\n \"a\": 1.0 }", `{"a":2}`, `{"a":3}`, `not json`}

// stored is the model's record of a completed key scope.
type stored struct {
	fp     string
	status int
	body   []byte
}

// FuzzGatewaySequence checks the gateway against a model, for any sequence
// of requests (method, path, key or none, payload) and clock jumps past the
// key TTL: a request reaches the handler exactly when it has no key, is not
// a POST or PATCH, or its scope (method, path, key) has no live completed
// request; a scope's completed request is replayed byte for byte to the
// same payload (canonically: JSON spelt otherwise is the same) and answered
// 422 to another; a retryable answer (5xx) keeps nothing.
func FuzzGatewaySequence(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 1, 0, 0, 2, 0, 0, 3})          // POST, same key: spelling, 422, 422
	f.Add([]byte{0, 0, 3, 0, 0, 3, 0, 0, 0, 0, 0, 0})          // 503 then retries
	f.Add([]byte{0, 0, 2, 0, 0, 2, 7, 0, 0, 0, 0, 1})          // 400 stored, TTL passes, key reused
	f.Add([]byte{1, 1, 0, 2, 1, 0, 3, 1, 0, 0, 2, 4, 0, 2, 4}) // PATCH, PUT, GET, non-JSON
	f.Add([]byte{4, 0, 0, 4, 0, 0, 0, 5, 0, 0, 5, 1})          // no key; another path
	f.Fuzz(func(t *testing.T, ops []byte) {
		r := newRig(t, &fakeHandler{}, Config{KeyTTL: time.Hour}, nil)
		model := map[string]stored{}
		methods := []string{http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodGet, http.MethodPost}
		for i := 0; i+2 < len(ops) && i < 3*40; i += 3 {
			if ops[i]%8 == 7 {
				r.clock.Advance(r.cfg.KeyTTL + time.Second)
				clear(model)
				continue
			}
			method := methods[int(ops[i]%8)%len(methods)]
			key := ""
			if ops[i]%8 != 4 {
				key = fmt.Sprintf("k%d", ops[i+1]%3)
			}
			path := fmt.Sprintf("/p%d", ops[i+1]/3%2)
			body := payloads[int(ops[i+2])%len(payloads)]
			before := r.h.calls.Load()
			w := r.do(method, path, key, body)
			called := r.h.calls.Load() - before
			op := fmt.Sprintf("op %d: %s %s key %q body %q", i/3, method, path, key, body)
			if key == "" || (method != http.MethodPost && method != http.MethodPatch) {
				if called != 1 || w.Header().Get(ReplayedHeader) != "" {
					t.Fatalf("%s: %d calls, replayed %q; want passed through once", op, called, w.Header().Get(ReplayedHeader))
				}
				continue
			}
			scope, fp := method+" "+path+" "+key, Fingerprint([]byte(body))
			prev, done := model[scope]
			switch {
			case done && prev.fp != fp:
				if called != 0 || w.Code != http.StatusUnprocessableEntity {
					t.Fatalf("%s: %d calls, status %d; want 422 for another payload and no call", op, called, w.Code)
				}
			case done:
				if called != 0 || w.Code != prev.status || !bytes.Equal(w.Body.Bytes(), prev.body) || w.Header().Get(ReplayedHeader) != "true" ||
					w.Header().Get("X-Not-Stored") != "" || w.Header().Get("Location") == "" {
					t.Fatalf("%s: %d calls, %d %q %s; want the replay %d %s", op, called, w.Code, w.Header(), w.Body, prev.status, prev.body)
				}
			default:
				if called != 1 || w.Header().Get(ReplayedHeader) != "" {
					t.Fatalf("%s: %d calls, replayed %q; want forwarded once", op, called, w.Header().Get(ReplayedHeader))
				}
				if downstream.VerdictOf(w.Code) != downstream.Retry {
					model[scope] = stored{fp: fp, status: w.Code, body: bytes.Clone(w.Body.Bytes())}
				}
			}
		}
	})
}

// TestConcurrentRequestsOneCall: of concurrent requests with one key, one
// reaches the handler; the others get 409 with Retry-After or the replay.
func TestConcurrentRequestsOneCall(t *testing.T) {
	r := newRig(t, &fakeHandler{delay: 50 * time.Millisecond}, Config{}, nil)
	const n = 32
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := r.do(http.MethodPost, "/orders", "same", `{"a":1}`)
			codes[i] = w.Code
			if w.Code == http.StatusConflict && w.Header().Get("Retry-After") == "" {
				t.Errorf("409 without Retry-After")
			}
		}()
	}
	wg.Wait()
	if c := r.h.calls.Load(); c != 1 {
		t.Fatalf("%d concurrent requests with one key: %d handler calls (codes %v), want 1", n, c, codes)
	}
	for _, c := range codes {
		if c != http.StatusCreated && c != http.StatusConflict {
			t.Fatalf("codes %v: want 201 or 409 only", codes)
		}
	}
}

// TestLargeResponseNotStored: a body over MaxStoredBody reaches the client
// whole; replays carry the status and headers, no body, and say so.
func TestLargeResponseNotStored(t *testing.T) {
	h := &fakeHandler{big: 2048}
	r := newRig(t, h, Config{MaxStoredBody: 1024}, nil)
	first := r.do(http.MethodPost, "/big", "k", `{}`)
	if first.Code != http.StatusCreated || first.Body.Len() < 2048 {
		t.Fatalf("first answer %d with %d bytes, want 201 with the whole body", first.Code, first.Body.Len())
	}
	again := r.do(http.MethodPost, "/big", "k", `{}`)
	if again.Code != http.StatusCreated || again.Body.Len() != 0 || again.Header().Get(BodyOmittedHeader) != "true" ||
		again.Header().Get("Location") != first.Header().Get("Location") || h.calls.Load() != 1 {
		t.Fatalf("replay %d %q %d bytes after %d calls", again.Code, again.Header(), again.Body.Len(), h.calls.Load())
	}
}

// TestOwnPathsNotProxied: the consumer's own paths and the delivery prefix
// are never proxied, whatever the method.
func TestOwnPathsNotProxied(t *testing.T) {
	r := newRig(t, &fakeHandler{}, Config{}, nil)
	for _, p := range []string{"/pubsub/push", "/callbacks/x", "/healthz", "/eventpipe/deliveries/orders", "/eventpipe"} {
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut} {
			if w := r.do(m, p, "k", `{}`); w.Code != http.StatusNotFound {
				t.Errorf("%s %s: %d, want 404", m, p, w.Code)
			}
		}
	}
	if c := r.h.calls.Load(); c != 0 {
		t.Fatalf("%d handler calls for own paths", c)
	}
	if w := r.do(http.MethodGet, "/healthzz", "", ""); w.Code != http.StatusCreated {
		t.Fatalf("/healthzz is the handler's: %d", w.Code)
	}
}

// failingStore fails every transaction: a store outage.
type failingStore struct{}

func (failingStore) RunTx(context.Context, func(context.Context, store.Tx) error) error {
	return errors.New("store unreachable")
}
func (failingStore) Close() error { return nil }

// TestStoreOutage: with the store down, a keyed request is answered 503
// with Retry-After and not forwarded; one without a key still passes.
func TestStoreOutage(t *testing.T) {
	r := newRig(t, &fakeHandler{}, Config{}, failingStore{})
	w := r.do(http.MethodPost, "/orders", "k", `{}`)
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || r.h.calls.Load() != 0 {
		t.Fatalf("store down: %d %q after %d calls; want 503 with Retry-After and no call", w.Code, w.Header(), r.h.calls.Load())
	}
	if w := r.do(http.MethodPost, "/orders", "", `{}`); w.Code != http.StatusCreated {
		t.Fatalf("without a key: %d, want passed through", w.Code)
	}
}

// TestHandlerDownReleasesKey: an unreachable handler is a 502 and gives the
// key back, so the retry is forwarded.
func TestHandlerDownReleasesKey(t *testing.T) {
	h := &fakeHandler{}
	srv := httptest.NewServer(h)
	url := srv.URL
	srv.Close()
	eng, err := engine.New(engine.Config{Store: memstore.New(), Env: "test"})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := NewGateway(Config{URL: url}, GatewayOptions{Engine: eng, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{}`))
	req.Header.Set(IdempotencyKeyHeader, "k")
	w := httptest.NewRecorder()
	gw.ServeHTTP(w, req)
	if w.Code != http.StatusBadGateway {
		t.Fatalf("handler down: %d, want 502", w.Code)
	}
	rc, err := eng.Claim(context.Background(), engineRequest(req, "k", []byte(`{}`), gw.cfg))
	if err != nil || rc.Replayed {
		t.Fatalf("after a 502 the key is not free: %+v %v", rc, err)
	}
}

// TestRequestTooLarge: a keyed body over MaxRequestBody is 413, not forwarded.
func TestRequestTooLarge(t *testing.T) {
	r := newRig(t, &fakeHandler{}, Config{MaxRequestBody: 10}, nil)
	if w := r.do(http.MethodPost, "/orders", "k", `{"a":"0123456789"}`); w.Code != http.StatusRequestEntityTooLarge || r.h.calls.Load() != 0 {
		t.Fatalf("%d after %d calls, want 413 and no call", w.Code, r.h.calls.Load())
	}
}

// TestKeyedLogLine: each keyed request logs one line whose status is the
// one the client got and whose outcome says what happened to the key,
// whether the handler answered or could not be reached.
func TestKeyedLogLine(t *testing.T) {
	var buf bytes.Buffer
	r := newRig(t, &fakeHandler{}, Config{}, nil)
	r.gw.opts.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
	down := newRig(t, &fakeHandler{}, Config{}, nil)
	down.gw.opts.Logger = r.gw.opts.Logger
	down.gw.opts.Transport = roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("connection refused") })
	for _, tt := range []struct {
		rig       *rig
		key, body string
		status    int
		outcome   string
	}{
		{r, "k1", `{"a":1}`, http.StatusCreated, "forwarded"},
		{r, "k1", `{"a":1}`, http.StatusCreated, "replayed"},
		{r, "k2", `{"a":2}`, http.StatusBadRequest, "refused"},
		{r, "k3", `{"a":3}`, http.StatusServiceUnavailable, "released"},
		{r, "k1", `{"a":9}`, http.StatusUnprocessableEntity, "key_reused"},
		{down, "k4", `{"a":1}`, http.StatusBadGateway, "released"},
	} {
		buf.Reset()
		w := tt.rig.do(http.MethodPost, "/orders", tt.key, tt.body)
		var line map[string]any
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatalf("%s %s: log %q: %v", tt.key, tt.body, buf.String(), err)
		}
		if w.Code != tt.status || line[logfields.HTTPStatus] != float64(tt.status) || line[logfields.Outcome] != tt.outcome {
			t.Errorf("%s %s: answered %d, logged %v %v; want %d %s", tt.key, tt.body, w.Code, line[logfields.HTTPStatus], line[logfields.Outcome], tt.status, tt.outcome)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
