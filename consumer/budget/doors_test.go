package budget_test

import (
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/budget"
	"github.com/eventpipe/eventpipe/consumer/callback"
	"github.com/eventpipe/eventpipe/consumer/handler"
	"github.com/eventpipe/eventpipe/consumer/limits"
	"github.com/eventpipe/eventpipe/consumer/push"
	"github.com/eventpipe/eventpipe/consumer/route"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

// rounds is how many generated mixes TestBudgetHoldsAtEveryDoor sends; raise it to
// search further: go test ./consumer/budget -run EveryDoor -budget.rounds 50
var rounds = flag.Int("budget.rounds", 2, "generated mixes of concurrent requests per run")

// doors is the consumer's three doors behind one budget, as server.Run mounts them, on
// the memory store, with a handler that counts its calls by key.
type doors struct {
	b       *budget.Budget
	url     string
	log     *ct.Log
	handler *countingHandler
	// read counts the body bytes the server read, by request (X-Test-Id);
	// short is set when a body was read while the budget did not hold what
	// its door reserves for it and every other request being read.
	mu     sync.Mutex
	read   map[string]int64
	active map[string]int64 // what each request being read or processed reserves
	short  []string
	onRead func() // called at each read of a body, when set
}

// countingHandler is the team's handler: it reads each request whole and answers 201,
// counting its calls by path and Idempotency-Key.
type countingHandler struct {
	mu    sync.Mutex
	calls map[string]int
}

func (h *countingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	h.mu.Lock()
	h.calls[r.URL.Path+" "+r.Header.Get("Idempotency-Key")]++
	h.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, `{"created":true}`)
}

func (h *countingHandler) count(path, key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[path+" "+key]
}

func startDoors(t *testing.T, size int64) *doors {
	t.Helper()
	hs := httptest.NewServer(&countingHandler{calls: map[string]int{}})
	t.Cleanup(hs.Close)
	proc, _, log := ct.NewProcessor(t, ct.Options{Routes: []byte(ct.HandlerRoutes)})
	table, err := route.Parse([]byte(ct.HandlerRoutes))
	if err != nil {
		t.Fatal(err)
	}
	d := &doors{b: budget.New(size), log: log, handler: hs.Config.Handler.(*countingHandler), read: map[string]int64{}, active: map[string]int64{}}
	gw, err := handler.NewGateway(handler.Config{URL: hs.URL}, handler.GatewayOptions{Engine: proc.Engine(), Logger: slog.New(slog.DiscardHandler),
		Own: []string{push.Path, callback.PathPrefix}, Budget: d.b})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(push.Path, d.watch(limits.PushDoor(), push.New(proc, nil, d.b)))
	mux.Handle(callback.Pattern, d.watch(limits.CallbackDoor(), callback.New(callback.Config{Routes: table, Engine: proc.Engine(), Env: ct.Env,
		Logger: slog.New(slog.DiscardHandler), HandlerURL: hs.URL, Budget: d.b})))
	mux.Handle("/", d.watch(limits.KeyedDoor(handler.DefaultMaxRequestBody), gw))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	d.url = srv.URL
	return d
}

// watch wraps a door: from the first read of a request's body until its answer's
// header is written, the request counts what its door reserves for it; at each read the
// budget must hold at least what every counted request reserves, and never more than
// its size. A door that reads a body it has not reserved for is found out when another
// request's reservation does not happen to cover it.
func (d *doors) watch(door limits.Door, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Test-Id")
		cost := door.Bytes(r.ContentLength)
		r.Body = &watchedBody{ReadCloser: r.Body, read: func(n int) {
			d.mu.Lock()
			defer d.mu.Unlock()
			d.active[id] = cost
			d.read[id] += int64(n)
			var need int64
			for _, c := range d.active {
				need += c
			}
			if held := d.b.Held(); held < need || held > d.b.Size() {
				d.short = append(d.short, fmt.Sprintf("%s read with %d bytes held, %d reserved by the requests being read, budget %d", id, held, need, d.b.Size()))
			}
			if d.onRead != nil {
				d.onRead()
			}
		}}
		h.ServeHTTP(&answered{ResponseWriter: w, done: func() {
			d.mu.Lock()
			delete(d.active, id)
			d.mu.Unlock()
		}}, r)
	})
}

type watchedBody struct {
	io.ReadCloser
	read func(n int)
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read(n)
	return n, err
}

// answered calls done when the header is written, before the door gives its
// reservation back.
type answered struct {
	http.ResponseWriter
	once sync.Once
	done func()
}

func (a *answered) WriteHeader(code int) {
	a.once.Do(a.done)
	a.ResponseWriter.WriteHeader(code)
}

func (a *answered) Write(p []byte) (int, error) {
	a.once.Do(a.done)
	return a.ResponseWriter.Write(p)
}

// request is one generated request: its door, path, body (built as it is sent) and
// length, and whether it declares the length.
type request struct {
	id, door, path, key string
	size                int64 // of the body
	chunked             bool  // sent without a Content-Length
	over                bool  // larger than its door takes
}

// body returns a reader of r's body, and its length: a push envelope around a system
// event of about r.size bytes in base64, a keyed request's or a callback's JSON
// object, each padded with a long string to the size drawn.
func (r request) body() (io.Reader, int64) {
	pad := func(head, tail string, n int64) io.Reader {
		return io.MultiReader(strings.NewReader(head), io.LimitReader(repeat('x'), max(0, n-int64(len(head)+len(tail)))), strings.NewReader(tail))
	}
	switch r.door {
	case "push":
		data := max(64, r.size/4*3)
		head := `{"message":{"messageId":"` + r.id + `","publishTime":"2026-01-02T03:04:06Z","data":"`
		tail := `"},"subscription":"projects/p/subscriptions/system-events"}`
		payload := pad(`{"service":"`+r.id+`","status":"ok","producedAt":"2026-01-02T03:04:05Z","detail":"`, `"}`, data)
		pr, pw := io.Pipe()
		go func() {
			enc := base64.NewEncoder(base64.StdEncoding, pw)
			_, err := io.Copy(enc, payload)
			if err == nil {
				err = enc.Close()
			}
			pw.CloseWithError(err)
		}()
		n := int64(len(head) + len(tail) + base64.StdEncoding.EncodedLen(int(data)))
		return io.MultiReader(strings.NewReader(head), pr, strings.NewReader(tail)), n
	case "keyed":
		return pad(`{"order":"`+r.id+`","detail":"`, `"}`, r.size), max(r.size, int64(len(`{"order":"`+r.id+`","detail":""}`)))
	}
	return pad(`{"callback_id":"`+r.key+`","status":"done","detail":"`, `"}`, r.size), max(r.size, int64(len(`{"callback_id":"`+r.key+`","status":"done","detail":""}`)))
}

type repeater byte

func repeat(b byte) io.Reader { return repeater(b) }

func (r repeater) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// cutStatus is send's status for a connection the server closed while the
// client still wrote the body (a refusal it answered unread, which the
// client did not get to read).
const cutStatus = -1

// refusedUnseen reports whether status is a cut connection and the server
// read none of r's body: a refusal the client could not see, which it
// retries as it does a 503.
func (d *doors) refusedUnseen(r request, status int) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return status == cutStatus && d.read[r.id] == 0
}

// send sends r once and returns the answer's status and Retry-After.
func (d *doors) send(t *testing.T, r request) (int, string) {
	body, n := r.body()
	req, err := http.NewRequest(http.MethodPost, d.url+r.path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = n
	if r.chunked {
		req.ContentLength = -1
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Test-Id", r.id)
	if r.door != "push" {
		req.Header.Set("Idempotency-Key", r.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
		// The server answered before the body was sent and closed the
		// connection under it; the client may see the cut before the
		// answer. Pub/Sub and callers retry a cut delivery as a refusal.
		return cutStatus, ""
	}
	if err != nil {
		t.Errorf("%s: %v", r.id, err)
		return 0, ""
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

// generate draws n requests at the three doors: bodies tiny, medium, large (up to the
// door's largest) or over it by up to a kilobyte; one in four sent without a length.
func generate(rng *rand.Rand, round, n int) []request {
	var out []request
	for i := range n {
		r := request{id: fmt.Sprintf("r%d-%02d", round, i), chunked: rng.IntN(4) == 0}
		var door limits.Door
		switch rng.IntN(3) {
		case 0:
			r.door, r.path, door = "push", push.Path, limits.PushDoor()
		case 1:
			r.door, r.path, door = "keyed", "/orders", limits.KeyedDoor(handler.DefaultMaxRequestBody)
		default:
			r.door, r.path, door = "callback", "/callbacks/jobs", limits.CallbackDoor()
		}
		r.key = "key-" + r.id
		switch k := rng.IntN(10); {
		case k < 3:
			r.size = 100 + rng.Int64N(1000)
		case k < 6:
			r.size = 1000 + rng.Int64N(256<<10)
		case k < 9:
			r.size = door.MaxBody/2 + rng.Int64N(door.MaxBody/2-4096)
		default:
			r.size, r.over = door.MaxBody+1+rng.Int64N(1000), true
		}
		out = append(out, r)
	}
	return out
}

// TestBudgetHoldsAtEveryDoor sends generated mixes of concurrent requests (pushes, keyed
// requests and callbacks of sizes up to each door's largest and a little over, with and
// without a length) to the three doors behind one budget too small for all of them, and
// retries each refused one, as Pub/Sub and a client do, until it is answered. It holds:
// a body is read only while the budget holds what the requests being read reserve, and
// never past its size; a request over budget gets 503 with Retry-After 1 before any of
// its body is read; one over its door's largest gets 413; no accepted request is lost
// (each push applied once, each keyed request and callback calls the handler once); and
// the budget is whole again at the end.
func TestBudgetHoldsAtEveryDoor(t *testing.T) {
	largest := int64(0)
	for _, door := range limits.Doors() {
		largest = max(largest, door.Bytes(door.MaxBody))
	}
	for round := range *rounds {
		rng := rand.New(rand.NewPCG(34, uint64(round)))
		d := startDoors(t, largest+rng.Int64N(2*largest))
		reqs := generate(rng, round, 12+rng.IntN(12))
		refused := ct.RetryRefused(len(reqs), func(i int) bool {
			r := reqs[i]
			status, retryAfter := d.send(t, r)
			if d.refusedUnseen(r, status) {
				return true
			}
			if status != budget.Status {
				checkAnswer(t, d, r, status)
				return false
			}
			d.mu.Lock()
			read := d.read[r.id]
			d.mu.Unlock()
			if retryAfter != "1" || read != 0 {
				t.Errorf("%s (%s, %d bytes) refused with Retry-After %q after %d bytes of its body were read; want 1 and none", r.id, r.door, r.size, retryAfter, read)
			}
			return true
		})
		d.mu.Lock()
		short := d.short
		d.mu.Unlock()
		for _, s := range short {
			t.Error(s)
		}
		if held := d.b.Held(); held != 0 {
			t.Errorf("round %d: %d bytes still held after every request was answered", round, held)
		}
		checkPushesApplied(t, d, reqs)
		t.Logf("round %d: %d requests, budget %d MB, %d refusals retried", round, len(reqs), d.b.Size()>>20, refused)
	}
}

// checkAnswer checks the final status of r: 413 over its door's largest body, else the
// door's success, and for a keyed request or callback exactly one call of the handler.
func checkAnswer(t *testing.T, d *doors, r request, status int) {
	t.Helper()
	want := map[string]int{"push": http.StatusOK, "keyed": http.StatusCreated, "callback": http.StatusCreated}[r.door]
	if r.over {
		want = http.StatusRequestEntityTooLarge
	}
	if status != want {
		t.Errorf("%s (%s, %d bytes, chunked %v): status %d, want %d", r.id, r.door, r.size, r.chunked, status, want)
	}
	path := map[string]string{"keyed": "/orders", "callback": handler.CallbackPath("jobs")}[r.door]
	if path == "" {
		return
	}
	calls := d.handler.count(path, r.key)
	if r.over && calls != 0 || !r.over && calls != 1 {
		t.Errorf("%s (%s, %d bytes): %d handler calls", r.id, r.door, r.size, calls)
	}
}

// checkPushesApplied: every push within the door's largest body was applied exactly once.
func checkPushesApplied(t *testing.T, d *doors, reqs []request) {
	t.Helper()
	applied := map[string]int{}
	for _, l := range ct.With(d.log.Lines(t), "outcome", "applied") {
		if id, ok := l["messageId"].(string); ok {
			applied[id]++
		}
	}
	for _, r := range reqs {
		if r.door == "push" && !r.over && applied[r.id] != 1 {
			t.Errorf("push %s (%d bytes): applied %d times", r.id, r.size, applied[r.id])
		}
	}
}

// TestEachDoorReservesBeforeReading: alone at its door, a request of any size (with or
// without a length) has exactly what its door reserves for it held from the first read
// of its body, and nothing after its answer; when what is left of the budget is less, it
// is refused 503 with Retry-After 1, unread.
func TestEachDoorReservesBeforeReading(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 7))
	for i, r := range generate(rng, 99, 24) {
		door := map[string]limits.Door{"push": limits.PushDoor(), "keyed": limits.KeyedDoor(handler.DefaultMaxRequestBody), "callback": limits.CallbackDoor()}[r.door]
		d := startDoors(t, 0)
		_, n := r.body()
		if r.chunked {
			n = -1
		}
		var held []int64
		status, _ := d.sendWatched(t, r, func() { held = append(held, d.b.Held()) })
		if !r.over {
			for _, h := range held {
				if h != door.Bytes(n) {
					t.Fatalf("request %d (%s, %d bytes, chunked %v): %d bytes held while its body was read, its door reserves %d", i, r.door, r.size, r.chunked, h, door.Bytes(n))
				}
			}
			if len(held) == 0 {
				t.Fatalf("request %d (%s): status %d, body never read", i, r.door, status)
			}
		}
		if d.b.Held() != 0 {
			t.Fatalf("request %d: %d bytes held after its answer", i, d.b.Held())
		}
		// With the budget taken but for less than this request needs: refused unread.
		release, err := d.b.Take(limits.Door{MaxBody: 1, Percent: 100, Fixed: d.b.Size() - door.Bytes(n) + 1}, 0)
		if err != nil {
			t.Fatal(err)
		}
		r.id += "-refused"
		status, retryAfter := d.send(t, r)
		release()
		if r.over && status == http.StatusRequestEntityTooLarge && !r.chunked {
			continue // a declared length past the door's largest is refused first
		}
		if d.refusedUnseen(r, status) {
			continue
		}
		if status != budget.Status || retryAfter != "1" || d.read[r.id] != 0 {
			t.Fatalf("request %d (%s, %d bytes) beside a budget held: %d, Retry-After %q, %d bytes read; want 503, 1, none", i, r.door, r.size, status, retryAfter, d.read[r.id])
		}
	}
}

// sendWatched sends r with onRead called at each read of its body on the server.
func (d *doors) sendWatched(t *testing.T, r request, onRead func()) (int, string) {
	d.mu.Lock()
	d.onRead = onRead
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.onRead = nil
		d.mu.Unlock()
	}()
	return d.send(t, r)
}
