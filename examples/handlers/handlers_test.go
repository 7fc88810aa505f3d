// Package handlers holds the example handlers (Python and Node) that run
// behind eventpipe's idempotency gateway, and the end-to-end tests that run
// each of them against the real consumer binary and a real store.
package handlers

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/route"
	"github.com/eventpipe/eventpipe/internal/testing/otlptest"
	"github.com/eventpipe/eventpipe/internal/testing/pgtest"
	"github.com/eventpipe/eventpipe/internal/testing/proctest"
	"github.com/eventpipe/eventpipe/spec"
)

// examples are the handlers under test: an executable each (shebang), run
// from Debian's python3 and node.
var examples = []struct{ name, path, interpreter string }{
	{"python", "python/handler.py", "python3"},
	{"node", "node/handler.js", "node"},
}

// consumer is the consumer binary, built on first use.
var consumer = &proctest.Binary{Pkg: "../../cmd/consumer"}

// skipShort skips an end-to-end run of the handlers behind the consumer binary under go
// test -short (make quick); make test runs it.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the handlers behind the consumer binary: make test runs it")
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	consumer.Remove()
	os.Exit(code)
}

// routes returns examples/handlers/routes.json with the orders route's
// action durations replaced (tests need sub-second leases), as inline JSON.
func routes(t testing.TB, timeout, leaseTTL, heartbeat string) string {
	t.Helper()
	b, err := os.ReadFile("routes.json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	action := cfg["routes"].([]any)[0].(map[string]any)["action"].(map[string]any)
	action["timeout"], action["leaseTTL"], action["heartbeat"] = timeout, leaseTTL, heartbeat
	out, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// env is the minimal environment of the child processes.
func env() []string { return []string{"PATH=" + os.Getenv("PATH")} }

func startHandler(t testing.TB, path, interpreter string) *proctest.Proc {
	t.Helper()
	if _, err := exec.LookPath(interpreter); err != nil {
		t.Fatalf("%s is needed to run %s (fix: apt-get install %s, as make deps does)", interpreter, path, interpreter)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return proctest.Start(t, abs, proctest.Options{Base: env()})
}

// gateway starts the consumer in front of h with store and routes.
func gateway(t testing.TB, h *proctest.Proc, store, routes string, extra ...string) *proctest.Proc {
	t.Helper()
	return proctest.Start(t, consumer.Path(t), proctest.Options{Base: env(), Env: append([]string{
		"EVENTPIPE_HANDLER_URL=" + h.URL, "EVENTPIPE_STORE=" + store, "EVENTPIPE_ROUTES=" + routes,
		"EVENTPIPE_SHUTDOWN_TIMEOUT=2s"}, extra...)})
}

func boltStore(t testing.TB) string { return "bbolt://" + filepath.Join(t.TempDir(), "gateway.db") }

// order is an order_placed event; knobs are the handlers' demo knobs.
func order(eventID, orderID string, knobs map[string]any) []byte {
	p := map[string]any{"eventType": "order_placed", "eventId": eventID, "orderId": orderID}
	for k, v := range knobs {
		p[k] = v
	}
	b, _ := json.Marshal(p)
	return b
}

// push posts one Pub/Sub push envelope to the gateway and returns the status.
func push(t testing.TB, gw *proctest.Proc, messageID string, data []byte, attempt int) int {
	t.Helper()
	st, err := tryPush(gw, messageID, data, attempt, map[string]string{"source": "checkout"})
	if err != nil {
		t.Fatalf("push %s: %v", messageID, err)
	}
	return st
}

// tryPush is push without failing the test (the gateway may die under it),
// with the message's attributes.
func tryPush(gw *proctest.Proc, messageID string, data []byte, attempt int, attrs map[string]string) (int, error) {
	env := map[string]any{"message": map[string]any{"data": base64.StdEncoding.EncodeToString(data),
		"attributes": attrs, "messageId": messageID, "publishTime": "2026-11-27T10:00:00.123Z"},
		"subscription": "projects/acme/subscriptions/orders"}
	if attempt > 0 {
		env["deliveryAttempt"] = attempt
	}
	b, _ := json.Marshal(env)
	resp, err := http.Post(gw.URL+"/pubsub/push", "application/json", bytes.NewReader(b))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// answer is one HTTP response, read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func post(t testing.TB, url, key, body string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("POST %s: %v", url, err)
		return answer{}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("read %s: %v", url, err)
	}
	return answer{resp.StatusCode, resp.Header, b}
}

// delivery is one delivery the handler received (its /stats).
type delivery struct {
	Key             string            `json:"key"`
	BodyKey         string            `json:"bodyKey"`
	Route           string            `json:"route"`
	Attempt         int               `json:"attempt"`
	MessageID       string            `json:"messageId"`
	PublishTime     string            `json:"publishTime"`
	DeliveryAttempt int               `json:"deliveryAttempt"`
	Attributes      map[string]string `json:"attributes"`
	Event           map[string]any    `json:"event"`
	Fields          map[string]any    `json:"fields"`
	Traceparent     string            `json:"traceparent"`
}

type stats struct {
	Deliveries []delivery `json:"deliveries"`
	API        []struct {
		Key  string         `json:"key"`
		Body map[string]any `json:"body"`
	} `json:"api"`
	Callbacks []struct {
		Key      string         `json:"key"`
		BodyKey  string         `json:"bodyKey"`
		Route    string         `json:"route"`
		Callback map[string]any `json:"callback"`
		Fields   map[string]any `json:"fields"`
	} `json:"callbacks"`
}

func (s stats) callbackCalls(key string) int {
	n := 0
	for _, c := range s.Callbacks {
		if c.Key == key && c.BodyKey == key && c.Route == "jobs" {
			n++
		}
	}
	return n
}

// calls reads the handler's record of its calls, straight from the handler.
func calls(t testing.TB, h *proctest.Proc) stats {
	t.Helper()
	resp, err := http.Get(h.URL + "/stats")
	if err != nil {
		t.Fatalf("handler stats: %v", err)
	}
	defer resp.Body.Close()
	var s stats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatalf("handler stats: %v", err)
	}
	return s
}

func (s stats) deliveriesOf(eventID string) []delivery {
	var out []delivery
	for _, d := range s.Deliveries {
		if d.Event["eventId"] == eventID {
			out = append(out, d)
		}
	}
	return out
}

func (s stats) apiCalls(key string) int {
	n := 0
	for _, c := range s.API {
		if c.Key == key {
			n++
		}
	}
	return n
}

func ok(status int) bool { return status >= 200 && status < 300 }

// TestHandlers runs each example handler end to end behind the real
// consumer binary on a bbolt store.
func TestHandlers(t *testing.T) {
	skipShort(t)
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			t.Run("duplicate publish is one call", func(t *testing.T) { testDuplicatePublish(t, ex.path, ex.interpreter) })
			t.Run("api keys", func(t *testing.T) { testAPIKeys(t, ex.path, ex.interpreter) })
			t.Run("longer than the lease", func(t *testing.T) { testLongCall(t, ex.path, ex.interpreter) })
			t.Run("hang is one call until its bound", func(t *testing.T) { testHang(t, ex.path, ex.interpreter) })
			t.Run("traceparent", func(t *testing.T) { testTraceparent(t, ex.path, ex.interpreter) })
			t.Run("callbacks", func(t *testing.T) { testCallbacks(t, ex.path, ex.interpreter) })
			t.Run("out of order is stale", func(t *testing.T) { testOutOfOrder(t, ex.path, ex.interpreter) })
		})
	}
}

// testDuplicatePublish: the same event published twice (two message ids)
// and each message redelivered reaches the handler once, with the contract's
// headers and body; an event the handler rejects (4xx) is poison, not retried.
func testDuplicatePublish(t *testing.T, path, interpreter string) {
	h := startHandler(t, path, interpreter)
	gw := gateway(t, h, boltStore(t), routes(t, "10s", "1m", "10s"))
	data := order("evt-1", "o-1", nil)
	for i, id := range []string{"m-1", "m-1", "m-2", "m-2"} {
		if st := push(t, gw, id, data, i+1); !ok(st) {
			t.Fatalf("push %d (%s) answered %d, want 2xx (applied or duplicate)", i, id, st)
		}
	}
	ds := calls(t, h).deliveriesOf("evt-1")
	if len(ds) != 1 {
		t.Fatalf("handler got %d deliveries of one event, want 1: %+v", len(ds), ds)
	}
	d := ds[0]
	if d.Key == "" || d.Key != d.BodyKey || d.Route != "orders" || d.Attempt != 1 || d.MessageID != "m-1" ||
		d.DeliveryAttempt != 1 || d.Attributes["source"] != "checkout" || d.Fields["orderId"] != "o-1" ||
		!strings.HasPrefix(d.PublishTime, "2026-11-27T10:00:00.123") {
		t.Fatalf("delivery does not follow the contract: %+v", d)
	}
	// No dead-letter policy (no deliveryAttempt): a 4xx is acked as poison.
	if st := push(t, gw, "m-3", order("evt-2", "", nil), 0); !ok(st) {
		t.Fatalf("poison without a DLQ answered %d, want 2xx (acked, recorded)", st)
	}
	if n := len(calls(t, h).deliveriesOf("evt-2")); n != 1 {
		t.Fatalf("rejected event: %d handler calls, want 1", n)
	}
}

// testAPIKeys: 64 concurrent requests with one key are forwarded once; the
// others get 409 or the stored response; a replay is byte-identical; another
// payload with the key is 422; requests without a key pass through.
func testAPIKeys(t *testing.T, path, interpreter string) {
	h := startHandler(t, path, interpreter)
	gw := gateway(t, h, boltStore(t), routes(t, "10s", "1m", "10s"))
	apiKeysConcurrent(t, h, []*proctest.Proc{gw}, "key-64")

	first := post(t, gw.URL+"/orders", "key-64", `{"sku": "A-1", "quantity": 2, "sleepMs": 300}`)
	again := post(t, gw.URL+"/orders", "key-64", `{"quantity":2,"sleepMs":300,"sku":"A-1"}`) // same JSON, other spelling
	if first.status != http.StatusCreated || again.status != first.status || !bytes.Equal(first.body, again.body) ||
		first.header.Get("Location") != again.header.Get("Location") || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replays differ:\n%d %q %s\n%d %q %s", first.status, first.header, first.body, again.status, again.header, again.body)
	}
	other := post(t, gw.URL+"/orders", "key-64", `{"sku": "B-2", "sleepMs": 300}`)
	if other.status != http.StatusUnprocessableEntity || !strings.HasPrefix(other.header.Get("Content-Type"), "application/problem+json") {
		t.Fatalf("another payload with a used key: %d %s, want 422 problem+json", other.status, other.body)
	}
	if n := calls(t, h).apiCalls("key-64"); n != 1 {
		t.Fatalf("handler got %d calls for one key, want 1", n)
	}
	// A 4xx answer is final and stored too; requests without a key pass.
	bad := post(t, gw.URL+"/orders", "key-bad", `{"quantity": 1}`)
	badAgain := post(t, gw.URL+"/orders", "key-bad", `{"quantity": 1}`)
	if bad.status != http.StatusBadRequest || badAgain.status != http.StatusBadRequest || !bytes.Equal(bad.body, badAgain.body) {
		t.Fatalf("a 400 is not replayed: %d %s / %d %s", bad.status, bad.body, badAgain.status, badAgain.body)
	}
	for range 2 {
		if a := post(t, gw.URL+"/orders", "", `{"sku": "C-3"}`); a.status != http.StatusCreated || a.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("request without a key: %d %q", a.status, a.header)
		}
	}
	s := calls(t, h)
	if n := s.apiCalls("key-bad"); n != 1 {
		t.Fatalf("handler got %d calls for the key answered 400, want 1", n)
	}
	if n := s.apiCalls(""); n != 2 {
		t.Fatalf("handler got %d calls without a key, want 2 (passed through)", n)
	}
}

// apiKeysConcurrent sends 64 concurrent POSTs with key, spread over gws:
// exactly one is forwarded (201), the others get 409 or the replayed 201.
func apiKeysConcurrent(t *testing.T, h *proctest.Proc, gws []*proctest.Proc, key string) {
	t.Helper()
	const n = 64
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = post(t, gws[i%len(gws)].URL+"/orders", key, `{"sku": "A-1", "quantity": 2, "sleepMs": 300}`)
		}()
	}
	wg.Wait()
	var fresh, replayed, conflict []answer
	for _, a := range answers {
		switch {
		case a.status == http.StatusCreated && a.header.Get("Idempotent-Replayed") == "true":
			replayed = append(replayed, a)
		case a.status == http.StatusCreated:
			fresh = append(fresh, a)
		case a.status == http.StatusConflict && a.header.Get("Retry-After") != "":
			conflict = append(conflict, a)
		default:
			t.Fatalf("unexpected answer %d %q %s", a.status, a.header, a.body)
		}
	}
	if len(fresh) != 1 || len(fresh)+len(replayed)+len(conflict) != n {
		t.Fatalf("%d concurrent requests: %d forwarded, %d replayed, %d conflicts; want 1 forwarded", n, len(fresh), len(replayed), len(conflict))
	}
	for _, r := range replayed {
		if !bytes.Equal(r.body, fresh[0].body) {
			t.Fatalf("replay %s differs from the response %s", r.body, fresh[0].body)
		}
	}
	if got := calls(t, h).apiCalls(key); got != 1 {
		t.Fatalf("handler got %d calls for one key, want 1", got)
	}
}

// testLongCall: a handler call longer than the lease TTL stays fenced by
// heartbeats: redeliveries during it are told to retry, never called.
func testLongCall(t *testing.T, path, interpreter string) {
	h := startHandler(t, path, interpreter)
	gw := gateway(t, h, boltStore(t), routes(t, "20s", "1s", "200ms"))
	data := order("evt-long", "o-long", map[string]any{"sleepMs": 3000})
	done := make(chan int, 1)
	go func() { done <- push(t, gw, "m-long-1", data, 1) }()
	var during []int
	deadline := time.After(20 * time.Second)
wait:
	for i := 2; ; i++ {
		select {
		case st := <-done:
			if !ok(st) {
				t.Fatalf("the long call answered %d, want 2xx", st)
			}
			break wait
		case <-deadline:
			t.Fatal("the long call did not finish")
		case <-time.After(250 * time.Millisecond):
			during = append(during, push(t, gw, fmt.Sprintf("m-long-%d", i), data, 1))
		}
	}
	// The last redelivery may have raced the call's end (a duplicate then).
	if len(during) < 8 || slices.ContainsFunc(during[:len(during)-1], ok) {
		t.Fatalf("redeliveries during the call answered %v: want at least 8, each a nack (in progress)", during)
	}
	if st := push(t, gw, "m-long-after", data, 1); !ok(st) {
		t.Fatalf("redelivery after the call answered %d, want 2xx (duplicate)", st)
	}
	if n := len(calls(t, h).deliveriesOf("evt-long")); n != 1 {
		t.Fatalf("a call 3x the lease TTL was made %d times, want 1", n)
	}
}

// testHang: a handler that hangs is not called again while its call
// runs: the delivery is nacked at the route's timeout (1s) and so is
// every redelivery (in progress), without a call, until the call reaches
// its bound (the route's leaseTTL, 3s) and is cut, in doubt; the next
// redelivery then calls again, with the same Idempotency-Key and attempt
// 2 (issue 34: the key was released at the timeout, and a second call
// ran beside the first).
func testHang(t *testing.T, path, interpreter string) {
	h := startHandler(t, path, interpreter)
	gw := gateway(t, h, boltStore(t), routes(t, "1s", "3s", "500ms"))
	data := order("evt-hang", "o-hang", map[string]any{"hangAttempts": 1})
	start := time.Now()
	if st := push(t, gw, "m-hang", data, 1); ok(st) {
		t.Fatalf("a hanging call answered %d, want a nack", st)
	}
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Fatalf("the hanging call was answered after %v, want about the route's 1s timeout", took)
	}
	if st := push(t, gw, "m-hang", data, 2); ok(st) {
		t.Fatalf("a redelivery while the call hangs answered %d, want a nack (in progress)", st)
	}
	if n := len(calls(t, h).deliveriesOf("evt-hang")); n != 1 {
		t.Fatalf("%d calls while the first hangs, want 1", n)
	}
	deadline := time.Now().Add(20 * time.Second)
	for attempt := 3; ; attempt++ {
		st := push(t, gw, "m-hang", data, attempt)
		if ok(st) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still %d 20s after the first call", st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if took := time.Since(start); took < 3*time.Second {
		t.Fatalf("the event settled %v after the first call, before its 3s bound", took)
	}
	if st := push(t, gw, "m-hang", data, 99); !ok(st) {
		t.Fatalf("a delivery after settling answered %d, want 2xx (duplicate)", st)
	}
	ds := calls(t, h).deliveriesOf("evt-hang")
	if len(ds) != 2 || ds[0].Key != ds[1].Key || ds[0].Attempt != 1 || ds[1].Attempt != 2 {
		t.Fatalf("deliveries %+v: want 2 calls with one Idempotency-Key, attempts 1 and 2", ds)
	}
}

// testTraceparent: with tracing on, the handler's call carries a
// traceparent in the trace of the publisher's span.
func testTraceparent(t *testing.T, path, interpreter string) {
	recv := otlptest.Start(t)
	h := startHandler(t, path, interpreter)
	gw := gateway(t, h, boltStore(t), routes(t, "10s", "1m", "10s"),
		"OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL, "OTEL_BSP_SCHEDULE_DELAY=600000", "GOOGLE_CLOUD_PROJECT=demo")
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	st, err := tryPush(gw, "m-trace", order("evt-trace", "o-t", nil), 0,
		map[string]string{"googclient_traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"})
	if err != nil {
		t.Fatal(err)
	}
	ds := calls(t, h).deliveriesOf("evt-trace")
	if st != http.StatusOK || len(ds) != 1 || !strings.HasPrefix(ds[0].Traceparent, "00-"+traceID+"-") {
		t.Fatalf("push %d, deliveries %+v: want one call with a traceparent in trace %s", st, ds, traceID)
	}
}

// TestTwoGateways runs two consumer processes on one PostgreSQL store in
// front of one handler: one key's concurrent requests across both, and one
// event delivered to both at once, each reach the handler once.
func TestTwoGateways(t *testing.T) {
	skipShort(t)
	cluster := pgtest.Start(t)
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			dsn, err := cluster.NewDatabase(t.Context(), "gw_"+ex.name)
			if err != nil {
				t.Fatal(err)
			}
			h := startHandler(t, ex.path, ex.interpreter)
			r := routes(t, "10s", "1m", "10s")
			gws := []*proctest.Proc{gateway(t, h, dsn, r), gateway(t, h, dsn, r)}
			apiKeysConcurrent(t, h, gws, "two-gateways")

			data := order("evt-both", "o-both", map[string]any{"sleepMs": 500})
			var wg sync.WaitGroup
			for i, gw := range gws {
				wg.Add(1)
				go func() { defer wg.Done(); push(t, gw, fmt.Sprintf("m-both-%d", i), data, 1) }()
			}
			wg.Wait()
			for i, gw := range gws {
				if st := push(t, gw, fmt.Sprintf("m-both-%d", i), data, 2); !ok(st) {
					t.Fatalf("redelivery to gateway %d answered %d, want 2xx (duplicate)", i, st)
				}
			}
			if n := len(calls(t, h).deliveriesOf("evt-both")); n != 1 {
				t.Fatalf("one event delivered to two gateways: %d handler calls, want 1", n)
			}
		})
	}
}

// TestKills SIGKILLs the gateway at each failpoint of a handler call and
// restarts it on the same store: a crash before the handler was called
// leads to one call; a crash after the handler answered and before the
// answer was recorded leads to a second call with the same Idempotency-Key
// (the at-least-once edge docs/handlers.md describes; the handlers dedupe
// on the key).
func TestKills(t *testing.T) {
	skipShort(t)
	cases := []struct {
		failpoint string
		api       bool
		calls     int
	}{
		{"worker-after-claim", false, 1},
		{"worker-before-apply", false, 1},
		{"worker-after-apply", false, 2},
		{"worker-before-mark-done", false, 2},
		{"callback-after-reserve", true, 1},
		{"gateway-before-finish", true, 2},
	}
	for _, ex := range examples {
		for _, c := range cases {
			t.Run(ex.name+"/"+c.failpoint, func(t *testing.T) {
				t.Parallel()
				h := startHandler(t, ex.path, ex.interpreter)
				store, r := boltStore(t), routes(t, "10s", "1s", "200ms")
				timeout, inDoubt := "EVENTPIPE_HANDLER_TIMEOUT=1s", "EVENTPIPE_HANDLER_IN_DOUBT=1s"
				gw := gateway(t, h, store, r, timeout, inDoubt, "EVENTPIPE_FAILPOINT="+c.failpoint)
				send := func(gw *proctest.Proc) (int, error) {
					if c.api {
						return tryPost(gw.URL+"/orders", "kill-key", `{"sku": "K-1"}`)
					}
					return tryPush(gw, "m-kill", order("evt-kill", "o-kill", nil), 0, nil)
				}
				go func() { _, _ = send(gw) }()
				gw.WaitKilled(t)
				gw = gateway(t, h, store, r, timeout, inDoubt)
				// Retried until the dead holder's lease lapses (nack or 409 till then).
				deadline := time.Now().Add(20 * time.Second)
				for {
					st, err := send(gw)
					if err == nil && ok(st) {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("still %d (%v) 20s after the restart", st, err)
					}
					time.Sleep(100 * time.Millisecond) // the lease's own clock runs in the gateway: poll it
				}
				s := calls(t, h)
				var keys []string
				if c.api {
					for _, a := range s.API {
						keys = append(keys, a.Key)
					}
				} else {
					for _, d := range s.deliveriesOf("evt-kill") {
						keys = append(keys, d.Key)
					}
				}
				if distinct := slices.Compact(slices.Clone(keys)); len(keys) != c.calls || len(distinct) != 1 || distinct[0] == "" {
					t.Fatalf("killed at %s: handler calls with keys %q, want %d with one key", c.failpoint, keys, c.calls)
				}
			})
		}
	}
}

// tryPost is post without failing the test.
func tryPost(url, key, body string) (int, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// TestStackConfigs: each example's stack config is valid, gives the
// consumer the example's handler beside it, and the routes it names
// (routes.json) send the orders route to the handler.
func TestStackConfigs(t *testing.T) {
	routesJSON, err := os.ReadFile("routes.json")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := route.Parse(routesJSON)
	if err != nil {
		t.Fatalf("routes.json: %v", err)
	}
	if r := tb.Routes()[0]; r.Mode != route.ModeLease || !r.Action.ToHandler() {
		t.Fatalf("routes.json: route %s does not name the handler", r.Name)
	}
	for _, ex := range examples {
		path := filepath.Join(filepath.Dir(ex.path), "Pulumi.dev.yaml")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := spec.ParseStackFile(path, b)
		if err != nil {
			t.Fatal(err)
		}
		st, err := spec.Load("dev", f.Source)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		h := st.Pipelines["orders"].Consumer.Handler
		if h == nil || !strings.Contains(h.Image, ex.name+"-handler") || h.URL() != "http://localhost:8081" || h.HealthPath != "/healthz" {
			t.Fatalf("%s: handler %+v", path, h)
		}
	}
}

// testCallbacks: a callback to the jobs route (no target: the handler)
// reaches the handler once per callback_id and the caller gets the
// handler's answer; a retry gets that answer replayed byte for byte; a
// callback the handler rejects (4xx) gets its 4xx, replayed the same way,
// and is not retried.
func testCallbacks(t *testing.T, path, interpreter string) {
	h := startHandler(t, path, interpreter)
	gw := gateway(t, h, boltStore(t), routes(t, "10s", "1m", "10s"))
	var first [2]answer
	for i := range 3 {
		for j, c := range []struct {
			body   string
			status int
		}{{`{"callback_id": "cb-1", "status": "done"}`, http.StatusOK}, {`{"callback_id": "cb-2", "reject": true}`, http.StatusBadRequest}} {
			a := post(t, gw.URL+"/callbacks/jobs", "", c.body)
			if a.status != c.status || (a.header.Get("Idempotent-Replayed") == "true") != (i > 0) || !strings.Contains(a.header.Get("Content-Type"), "json") {
				t.Fatalf("callback %s, %d: %d %v %s", c.body, i, a.status, a.header, a.body)
			}
			if i == 0 {
				first[j] = a
			} else if !bytes.Equal(a.body, first[j].body) {
				t.Fatalf("callback %s, retry %d: %s, first %s", c.body, i, a.body, first[j].body)
			}
		}
	}
	if !strings.Contains(string(first[0].body), `"accepted"`) {
		t.Fatalf("cb-1 answer %s, want the handler's", first[0].body)
	}
	s := calls(t, h)
	if n, m := s.callbackCalls("cb-1"), s.callbackCalls("cb-2"); n != 1 || m != 1 {
		t.Fatalf("handler got %d calls for cb-1 and %d for cb-2, want 1 each: %+v", n, m, s.Callbacks)
	}
	if f := s.Callbacks[0].Fields; f["status"] != "done" {
		t.Fatalf("callback fields %v, want the route's status", f)
	}
}

// testOutOfOrder: one order's events delivered with sequences 1, 3, 2 and a
// second publish of 3 (another event id, so the event dedupe does not
// catch it): the route's per-aggregate sequence guard calls the handler
// for 1 and 3 only; 2 and the second 3 are acked as stale, never called.
func testOutOfOrder(t *testing.T, path, interpreter string) {
	h := startHandler(t, path, interpreter)
	gw := gateway(t, h, boltStore(t), routes(t, "10s", "1m", "10s"))
	steps := []struct {
		eventID string
		seq     int
		called  bool
	}{{"evt-s1", 1, true}, {"evt-s3", 3, true}, {"evt-s2", 2, false}, {"evt-s3b", 3, false}}
	for _, s := range steps {
		if st := push(t, gw, "m-"+s.eventID, order(s.eventID, "o-seq", map[string]any{"sequence": s.seq}), 1); !ok(st) {
			t.Fatalf("%s (sequence %d) answered %d, want 2xx", s.eventID, s.seq, st)
		}
	}
	got := calls(t, h)
	for _, s := range steps {
		want := 0
		if s.called {
			want = 1
		}
		if n := len(got.deliveriesOf(s.eventID)); n != want {
			t.Errorf("%s (sequence %d): %d handler calls, want %d", s.eventID, s.seq, n, want)
		}
		if !s.called {
			if o := logOutcome(t, gw, "m-"+s.eventID); o != logfields.OutcomeStale {
				t.Errorf("%s (sequence %d): logged outcome %q, want %q", s.eventID, s.seq, o, logfields.OutcomeStale)
			}
		}
	}
}

// logOutcome is the outcome of the consumer's log line for messageID.
func logOutcome(t testing.TB, gw *proctest.Proc, messageID string) string {
	t.Helper()
	for _, line := range strings.Split(gw.Output(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec[logfields.MessageID] != messageID {
			continue
		}
		if o, ok := rec[logfields.Outcome].(string); ok {
			return o
		}
	}
	t.Fatalf("no log line with an outcome for %s:\n%s", messageID, gw.Output())
	return ""
}
