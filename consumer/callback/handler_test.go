package callback

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/downstream"
	"github.com/eventpipe/eventpipe/consumer/handler"
	"github.com/eventpipe/eventpipe/consumer/route"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

// handlerRoutes has a callback route without a target: it names the handler.
const handlerRoutes = `{"routes":[{"name":"jobs","ingress":"callback","mode":"receipt",
  "fields":{"status":{"from":["status"]}}}]}`

// drop is a scripted answer: the handler closes the connection unanswered.
const drop = -1

// fakeHandler answers callbacks by a script per callback id (the last
// answer repeats) and records every call.
type fakeHandler struct {
	mu      sync.Mutex
	script  map[string][]int
	calls   map[string]int
	bodies  []handler.Callback
	headers []http.Header
	// block, when set, holds every call until it is closed; entered gets
	// a value when a call arrives.
	block   chan struct{}
	entered chan struct{}
}

func (fh *fakeHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != handler.CallbackPath("jobs") || r.Method != http.MethodPost {
		http.Error(w, "wrong path "+r.URL.Path, http.StatusNotFound)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	var cb handler.Callback
	if err := json.Unmarshal(raw, &cb); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	key := r.Header.Get(handler.IdempotencyKeyHeader)
	fh.mu.Lock()
	n := fh.calls[key]
	fh.calls[key]++
	fh.bodies, fh.headers = append(fh.bodies, cb), append(fh.headers, r.Header.Clone())
	answers := fh.script[key]
	fh.mu.Unlock()
	if fh.entered != nil {
		fh.entered <- struct{}{}
	}
	if fh.block != nil {
		<-fh.block
	}
	status := http.StatusOK
	if len(answers) > 0 {
		status = answers[min(n, len(answers)-1)]
	}
	if status == drop {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return
	}
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"answer":%d}`, status)
}

func (fh *fakeHandler) callsOf(key string) int {
	fh.mu.Lock()
	defer fh.mu.Unlock()
	return fh.calls[key]
}

// serveHandlerRoute serves the callback handler with the handler route in
// front of fh.
func serveHandlerRoute(t *testing.T, fh *fakeHandler) *fixture {
	t.Helper()
	fh.calls = map[string]int{}
	hsrv := httptest.NewServer(fh)
	t.Cleanup(hsrv.Close)
	fs := &ct.FailingStore{Store: memstore.New()}
	proc, _, log := ct.NewProcessor(t, ct.Options{Store: fs, Routes: []byte(handlerRoutes)})
	if err := CheckHandler(proc.Routes(), hsrv.URL); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	// Without keep-alives: net/http repeats a keyed POST whose reused
	// connection dropped, which would blur the count of handler calls.
	caller := downstream.New(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}})
	mux.Handle(Pattern, New(Config{Routes: proc.Routes(), Engine: proc.Engine(), Store: fs, Env: ct.Env, Logger: proc.Logger(),
		HandlerURL: hsrv.URL, Caller: caller}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &fixture{srv: srv, st: fs, log: log}
}

func jobBody(id string) string { return fmt.Sprintf(`{"callback_id":%q,"status":"done"}`, id) }

// TestHandlerCallbackForwarded: one callback is one handler call carrying
// the callback, its key and the route's fields; the same id again is
// answered from the receipt without a second call.
func TestHandlerCallbackForwarded(t *testing.T) {
	fh := &fakeHandler{}
	f := serveHandlerRoute(t, fh)
	code, first := f.call(t, "/callbacks/jobs", jobBody("cb-1"), map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
	if code != 200 || first["status"] != statusProcessed || first[handlerStatusField] != float64(200) {
		t.Fatalf("first: %d %v", code, first)
	}
	code, again := f.call(t, "/callbacks/jobs", jobBody("cb-1"), nil)
	if code != 200 || again["idempotent_replayed"] != true || again["original_received_at"] != first["received_at"] || again[handlerStatusField] != float64(200) {
		t.Fatalf("retry: %d %v (first %v)", code, again, first)
	}
	if n := fh.callsOf("cb-1"); n != 1 {
		t.Fatalf("handler called %d times, want 1", n)
	}
	cb := fh.bodies[0]
	if cb.IdempotencyKey != "cb-1" || cb.Route != "jobs" || cb.Fields["status"] != "done" || string(cb.Callback) != jobBody("cb-1") {
		t.Fatalf("handler got %+v", cb)
	}
	if ct := fh.headers[0].Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
}

// TestHandlerCallbackConcurrent: while the first delivery of an id is at
// the handler, every other delivery of it gets 409 and never reaches the
// handler; after it, retries replay its answer.
func TestHandlerCallbackConcurrent(t *testing.T) {
	fh := &fakeHandler{block: make(chan struct{}), entered: make(chan struct{}, 1)}
	f := serveHandlerRoute(t, fh)
	done := make(chan int)
	go func() {
		code, _ := f.call(t, "/callbacks/jobs", jobBody("cb-c"), nil)
		done <- code
	}()
	<-fh.entered
	var wg sync.WaitGroup
	codes := make([]int, 8)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], _ = f.call(t, "/callbacks/jobs", jobBody("cb-c"), nil)
		}()
	}
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusConflict {
			t.Errorf("concurrent delivery %d: %d, want 409", i, c)
		}
	}
	close(fh.block)
	if c := <-done; c != 200 {
		t.Fatalf("first delivery: %d", c)
	}
	fh.entered = nil
	if code, out := f.call(t, "/callbacks/jobs", jobBody("cb-c"), nil); code != 200 || out["idempotent_replayed"] != true {
		t.Fatalf("after: %d %v", code, out)
	}
	if n := fh.callsOf("cb-c"); n != 1 {
		t.Fatalf("handler called %d times, want 1", n)
	}
}

// TestHandlerCallbackAnswers is exhaustive over scripts of three handler
// answers (2xx, permanent 4xx, retryable 4xx/5xx, a dropped connection),
// each retried by the caller four times. Invariants: the handler is called
// until its first non-retryable answer and never after; every retryable
// answer is a 503 to the caller; a 2xx is 200 and a permanent 4xx is 422,
// and each retry after gets the same status replayed.
func TestHandlerCallbackAnswers(t *testing.T) {
	answers := []int{200, 201, 400, 404, 408, 429, 500, 503, drop}
	retryable := func(s int) bool { return s == drop || s >= 500 || s == 408 || s == 429 }
	fh := &fakeHandler{script: map[string][]int{}}
	var scripts [][]int
	for _, a := range answers {
		for _, b := range answers {
			for _, c := range answers {
				scripts = append(scripts, []int{a, b, c})
			}
		}
	}
	for i, s := range scripts {
		fh.script[fmt.Sprintf("cb-%d", i)] = s
	}
	f := serveHandlerRoute(t, fh)
	for i, script := range scripts {
		key := fmt.Sprintf("cb-%d", i)
		wantCalls, final := 0, 0
		for _, a := range script {
			wantCalls++
			if !retryable(a) {
				final = a
				break
			}
		}
		if final == 0 {
			wantCalls = 4 // the last answer repeats: retryable every time
		}
		settled := false
		for attempt := range 4 {
			code, out := f.call(t, "/callbacks/jobs", jobBody(key), nil)
			var want int
			switch {
			case attempt < len(script) && !settled && retryable(script[attempt]):
				want = http.StatusServiceUnavailable
			case !settled && final == 0:
				want = http.StatusServiceUnavailable
			case final < 300:
				want = http.StatusOK
			default:
				want = http.StatusUnprocessableEntity
			}
			if code != want {
				t.Fatalf("script %v attempt %d: %d, want %d: %v", script, attempt, code, want, out)
			}
			if want != http.StatusServiceUnavailable {
				if settled != (out["idempotent_replayed"] == true) {
					t.Fatalf("script %v attempt %d: idempotent_replayed %v, want %v", script, attempt, out["idempotent_replayed"], settled)
				}
				if out[handlerStatusField] != float64(final) {
					t.Fatalf("script %v attempt %d: handler_status %v, want %d", script, attempt, out[handlerStatusField], final)
				}
				settled = true
			}
		}
		if n := fh.callsOf(key); n != wantCalls {
			t.Fatalf("script %v: handler called %d times, want %d", script, n, wantCalls)
		}
	}
}

// TestHandlerCallbackNeedsKey: a callback to the handler without an id is
// refused before the handler is called.
func TestHandlerCallbackNeedsKey(t *testing.T) {
	fh := &fakeHandler{}
	f := serveHandlerRoute(t, fh)
	code, out := f.call(t, "/callbacks/jobs", `{"status":"done"}`, nil)
	if code != 400 || !strings.Contains(fmt.Sprint(out["error"]), "callback_id") {
		t.Fatalf("%d %v", code, out)
	}
	if len(fh.bodies) != 0 {
		t.Fatalf("handler called %d times", len(fh.bodies))
	}
}

// TestCheckHandler: a route naming the handler needs a handler URL.
func TestCheckHandler(t *testing.T) {
	tb, err := route.Parse([]byte(handlerRoutes))
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckHandler(tb, ""); err == nil || !strings.Contains(err.Error(), handler.URLEnv) {
		t.Fatalf("want an error naming %s, got %v", handler.URLEnv, err)
	}
	if err := CheckHandler(tb, "http://localhost:8081"); err != nil {
		t.Fatal(err)
	}
}
