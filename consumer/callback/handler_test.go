package callback

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/downstream"
	"github.com/eventpipe/eventpipe/consumer/handler"
	"github.com/eventpipe/eventpipe/consumer/route"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/boltstore"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	"github.com/eventpipe/eventpipe/consumer/store/pgstore"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
	"github.com/eventpipe/eventpipe/internal/testing/pgtest"
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
	// pad lengthens the answer to a callback id by that many bytes.
	pad map[string]int
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
	// Content-Type and ETag are stored with the answer; X-Call is not.
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("ETag", fmt.Sprintf(`"%s-%d"`, key, n))
	w.Header().Set("X-Call", strconv.Itoa(n))
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"answer":%d,"key":%q,"call":%d,"pad":%q}`, status, key, n, strings.Repeat("x", fh.pad[key]))
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
	return serveHandlerRouteOn(t, fh, memstore.New())
}

// maxStored is the stored body bound of the handler route's fixtures.
const maxStored = 2048

// serveHandlerRouteOn is serveHandlerRoute on the store st.
func serveHandlerRouteOn(t *testing.T, fh *fakeHandler, st store.Store) *fixture {
	t.Helper()
	fh.calls = map[string]int{}
	hsrv := httptest.NewServer(fh)
	t.Cleanup(hsrv.Close)
	fs := &ct.FailingStore{Store: st}
	proc, _, log := ct.NewProcessor(t, ct.Options{Store: fs, Routes: []byte(handlerRoutes)})
	if err := CheckHandler(proc.Routes(), hsrv.URL); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	// Without keep-alives: net/http repeats a keyed POST whose reused
	// connection dropped, which would blur the count of handler calls.
	caller := downstream.New(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}, nil)
	mux.Handle(Pattern, New(Config{Routes: proc.Routes(), Engine: proc.Engine(), Env: ct.Env, Logger: proc.Logger(),
		HandlerURL: hsrv.URL, Caller: caller, MaxStoredBody: maxStored}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &fixture{srv: srv, st: fs, log: log}
}

func jobBody(id string) string { return fmt.Sprintf(`{"callback_id":%q,"status":"done"}`, id) }

// answer is a callback's answer as the caller gets it.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// post sends a callback and returns the answer whole.
func (f *fixture) post(t *testing.T, path, body string, hdr map[string]string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, raw}
}

// sameAnswer reports how replay differs from first, the handler's answer
// as the first caller got it: status, stored headers and body byte for
// byte, and the replay marked Idempotent-Replayed.
func sameAnswer(first, replay answer) error {
	switch {
	case replay.status != first.status:
		return fmt.Errorf("status %d, first %d", replay.status, first.status)
	case !bytes.Equal(replay.body, first.body):
		return fmt.Errorf("body %q, first %q", replay.body, first.body)
	case replay.header.Get("Content-Type") != first.header.Get("Content-Type") || replay.header.Get("ETag") != first.header.Get("ETag"):
		return fmt.Errorf("headers %v, first %v", replay.header, first.header)
	case replay.header.Get(handler.ReplayedHeader) != "true" || first.header.Get(handler.ReplayedHeader) != "":
		return fmt.Errorf("%s: replay %q, first %q", handler.ReplayedHeader, replay.header.Get(handler.ReplayedHeader), first.header.Get(handler.ReplayedHeader))
	case replay.header.Get("X-Call") != "":
		return fmt.Errorf("a header that is not stored was replayed: X-Call %q", replay.header.Get("X-Call"))
	}
	return nil
}

// stores are the stores the handler route's answers are kept in: memory,
// bbolt and PostgreSQL.
func stores(t *testing.T) map[string]func(t *testing.T) store.Store {
	return map[string]func(t *testing.T) store.Store{
		"mem": func(*testing.T) store.Store { return memstore.New() },
		"bbolt": func(t *testing.T) store.Store {
			st, err := boltstore.Open(filepath.Join(t.TempDir(), "consumer.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		},
		"postgres": func(t *testing.T) store.Store {
			st, err := pgstore.Open(t.Context(), pgtest.Start(t).URL)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		},
	}
}

// TestHandlerCallbackForwarded (memory, bbolt, PostgreSQL): one callback is
// one handler call carrying the callback, its key and the route's fields,
// and the caller gets the handler's answer; the same id again gets that
// answer replayed from the receipt byte for byte (status, stored headers,
// body), without a second call. An answer over the stored bound is answered
// and replayed without its body, marked Idempotent-Body-Omitted.
func TestHandlerCallbackForwarded(t *testing.T) {
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			fh := &fakeHandler{pad: map[string]int{"cb-big": maxStored}}
			f := serveHandlerRouteOn(t, fh, open(t))
			first := f.post(t, "/callbacks/jobs", jobBody("cb-1"), map[string]string{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
			if first.status != 200 || !strings.HasPrefix(string(first.body), `{"answer":200,"key":"cb-1","call":0`) || first.header.Get("ETag") != `"cb-1-0"` {
				t.Fatalf("first: %d %v %s", first.status, first.header, first.body)
			}
			for range 2 {
				if err := sameAnswer(first, f.post(t, "/callbacks/jobs", jobBody("cb-1"), nil)); err != nil {
					t.Fatalf("retry: %v", err)
				}
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
			big := f.post(t, "/callbacks/jobs", jobBody("cb-big"), nil)
			if big.status != 200 || len(big.body) != 0 || big.header.Get(handler.BodyOmittedHeader) != "true" || big.header.Get("ETag") != `"cb-big-0"` {
				t.Fatalf("answer over %d bytes: %d %v %q", maxStored, big.status, big.header, big.body)
			}
			if err := sameAnswer(big, f.post(t, "/callbacks/jobs", jobBody("cb-big"), nil)); err != nil {
				t.Fatalf("retry of the big answer: %v", err)
			}
		})
	}
}

// TestHandlerCallbackRecordedBefore: a receipt recorded before the handler's
// answer was kept (its result has handler_status only) still replays, as it
// did: 200 with the receipt's status and handler_status in JSON.
func TestHandlerCallbackRecordedBefore(t *testing.T) {
	fh := &fakeHandler{}
	f := serveHandlerRoute(t, fh)
	if a := f.post(t, "/callbacks/jobs", jobBody("cb-old"), nil); a.status != 200 {
		t.Fatalf("first: %d %s", a.status, a.body)
	}
	var doc string
	for _, l := range ct.With(f.log.Lines(t), "idempotency_key", "cb-old") {
		doc, _ = l["idempotency_doc"].(string)
	}
	collection, id, ok := strings.Cut(doc, "/")
	if !ok {
		t.Fatalf("no receipt logged for cb-old: %q", doc)
	}
	key := store.Key{Collection: collection, ID: id}
	if err := f.st.RunTx(t.Context(), func(ctx context.Context, tx store.Tx) error {
		d, err := tx.Get(ctx, key)
		if err != nil {
			return err
		}
		result := d.Fields["result"].(map[string]any)
		delete(result, responseField) // as today's code records it
		return tx.Set(ctx, key, d)
	}); err != nil {
		t.Fatal(err)
	}
	code, hdr, out := f.callFull(t, "/callbacks/jobs", jobBody("cb-old"), nil)
	if code != 200 || out["idempotent_replayed"] != true || out["status"] != statusProcessed || out[handlerStatusField] != float64(200) ||
		hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("replay of a receipt without the answer: %d %v %v", code, hdr, out)
	}
	if n := fh.callsOf("cb-old"); n != 1 {
		t.Fatalf("handler called %d times, want 1", n)
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
	if a := f.post(t, "/callbacks/jobs", jobBody("cb-c"), nil); a.status != 200 || a.header.Get(handler.ReplayedHeader) != "true" {
		t.Fatalf("after: %d %v %s", a.status, a.header, a.body)
	}
	if n := fh.callsOf("cb-c"); n != 1 {
		t.Fatalf("handler called %d times, want 1", n)
	}
}

// TestHandlerCallbackAnswers is exhaustive over scripts of three handler
// answers (2xx, permanent 4xx, retryable 4xx/5xx, a dropped connection),
// each retried by the caller four times. Invariants: the handler is called
// until its first non-retryable answer and never after; every retryable
// answer is a 503 to the caller; the first 2xx or permanent 4xx reaches the
// caller as the handler gave it, and each retry after gets exactly that
// answer replayed (status, stored headers, body byte for byte).
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
		var settled *answer
		for attempt := range 4 {
			a := f.post(t, "/callbacks/jobs", jobBody(key), nil)
			want := final
			if settled == nil && (final == 0 || retryable(script[attempt])) {
				want = http.StatusServiceUnavailable
			}
			if a.status != want {
				t.Fatalf("script %v attempt %d: %d, want %d: %s", script, attempt, a.status, want, a.body)
			}
			switch {
			case want == http.StatusServiceUnavailable:
			case settled == nil:
				if !strings.HasPrefix(string(a.body), fmt.Sprintf(`{"answer":%d,"key":%q,"call":%d`, final, key, wantCalls-1)) {
					t.Fatalf("script %v attempt %d: body %s, want the handler's answer", script, attempt, a.body)
				}
				settled = &a
			default:
				if err := sameAnswer(*settled, a); err != nil {
					t.Fatalf("script %v attempt %d: %v", script, attempt, err)
				}
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
