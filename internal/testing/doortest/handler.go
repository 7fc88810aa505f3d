package doortest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/eventpipe/eventpipe/consumer/downstream"
)

// A behavior is what the handler does on one call of a key.
type behavior struct {
	// kind: "answer" (status, at once), "slow" (200 after the door's
	// answer timeout, before the call's bound), "drop" (does the work,
	// then drops the connection without an answer), "hang" (until the
	// consumer cuts the call at its bound), "wait" (200 once the test
	// releases it, or nothing if the call is cut first).
	kind   string
	status int
}

func (b behavior) String() string {
	if b.kind == "answer" {
		return strconv.Itoa(b.status)
	}
	return b.kind
}

// final reports whether the behavior settles its key for good: done (2xx)
// or refused; the others leave it to be called again.
func (b behavior) final() bool {
	switch b.kind {
	case "slow", "wait":
		return true
	case "answer":
		return downstream.VerdictOf(b.status) != downstream.Retry
	}
	return false
}

// done reports whether a final behavior is a 2xx (else a refusal).
func (b behavior) done() bool { return b.kind != "answer" || b.status/100 == 2 }

// call is one call the handler got.
type call struct {
	key     string // the Idempotency-Key header
	attempt string // the attempt header
	start   time.Time
}

// handler is the team's handler, scripted per key (the "script" field
// every test request carries): call n of a key does script[n] (200 past
// its end). It counts the calls of each key, the calls in flight at once,
// and the effects (the work done: 2xx answers and drops after the work).
//
// A call in flight when another call of its key starts is counted as an
// overlap, unless it is a hanging call past its bound: the consumer cut
// it, and a handler that has not noticed its client went away is still
// in it — the one way docs/handlers.md names to two calls at once.
type handler struct {
	// slow is how long a slow answer takes, by the path prefix it serves;
	// bound is a call's bound there (the consumer cuts it then).
	slow, bound func(path string) time.Duration

	mu       sync.Mutex
	scripts  map[string][]behavior
	calls    map[string][]call
	active   map[string]map[*call]behavior
	overlaps map[string]int
	effects  map[string]int
	// started is signalled once per call that starts (for tests that act
	// while a call runs); release lets "wait" calls answer.
	started chan string
	release chan struct{}
}

func newHandler(slow, bound func(string) time.Duration) *handler {
	return &handler{slow: slow, bound: bound, scripts: map[string][]behavior{}, calls: map[string][]call{},
		active: map[string]map[*call]behavior{}, overlaps: map[string]int{}, effects: map[string]int{},
		started: make(chan string, 1024), release: make(chan struct{})}
}

// script sets key's script.
func (h *handler) script(key string, bs []behavior) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.scripts[key] = bs
}

// scriptOf reads the script id of a request: a delivery's event field, a
// callback's callback field, or an API request's body field.
func scriptOf(path string, body []byte) string {
	var v struct {
		Script   string          `json:"script"`
		Event    json.RawMessage `json:"event"`
		Callback json.RawMessage `json:"callback"`
	}
	_ = json.Unmarshal(body, &v)
	inner := v.Event
	if strings.Contains(path, "/callbacks/") {
		inner = v.Callback
	}
	if len(inner) > 0 {
		var w struct{ Script string }
		_ = json.Unmarshal(inner, &w)
		return w.Script
	}
	return v.Script
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		return // health
	}
	body, _ := io.ReadAll(r.Body)
	id := scriptOf(r.URL.Path, body)
	if id == "" {
		w.WriteHeader(http.StatusOK)
		return
	}
	h.mu.Lock()
	n := len(h.calls[id])
	b := behavior{kind: "answer", status: http.StatusOK}
	if s := h.scripts[id]; n < len(s) {
		b = s[n]
	}
	c := &call{key: r.Header.Get(downstream.IdempotencyKeyHeader), attempt: r.Header.Get(downstream.AttemptHeader), start: time.Now()}
	h.calls[id] = append(h.calls[id], *c)
	if h.active[id] == nil {
		h.active[id] = map[*call]behavior{}
	}
	for o, ob := range h.active[id] {
		if ob.kind != "hang" || c.start.Sub(o.start) < h.bound(r.URL.Path) {
			h.overlaps[id]++
		}
	}
	h.active[id][c] = b
	h.mu.Unlock()
	done := func() {
		h.mu.Lock()
		delete(h.active[id], c)
		h.mu.Unlock()
	}
	defer done()
	h.started <- id
	switch b.kind {
	case "slow", "wait":
		var until <-chan time.Time
		if b.kind == "slow" {
			until = time.After(h.slow(r.URL.Path))
		}
		select {
		case <-until:
		case <-h.release:
		case <-r.Context().Done():
			return // cut: the handler stops with its caller, having done nothing
		}
		h.effect(id)
		h.answer(w, id, n, http.StatusOK)
	case "drop":
		h.effect(id)
		done() // ended on the handler's side before the connection drops
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
			}
		}
	case "hang":
		<-r.Context().Done()
	default:
		if b.status/100 == 2 {
			h.effect(id)
		}
		h.answer(w, id, n, b.status)
	}
}

func (h *handler) effect(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.effects[id]++
}

func (h *handler) answer(w http.ResponseWriter, id string, n, status int) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Location", fmt.Sprintf("/things/%s/%d", id, n))
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"script":%q,"call":%d}`, id, n)
}

// stats returns key's calls, how many started while another was in
// flight (but a hanging one past its bound), and its effects.
func (h *handler) stats(id string) (calls []call, overlaps, effects int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]call(nil), h.calls[id]...), h.overlaps[id], h.effects[id]
}
