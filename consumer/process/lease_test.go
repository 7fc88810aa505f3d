package process_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/consumer/store"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

const leaseRoutes = `{"routes":[{
  "name": "document_processing",
  "match": {"typeField": "eventType", "types": ["document_uploaded"]},
  "mode": "lease",
  "fields": {
    "fileHash": {"from": ["fileHash"], "type": "string", "required": true},
    "path": {"from": ["path"], "type": "string"}
  },
  "dedupe": {"eventIdField": "fileHash"},
  "action": {"urlEnv": "DOC_URL", "maxAttempts": 3, "timeout": "5s", "leaseTTL": "%TTL%", "heartbeat": "%HB%"}
}]}`

// downstream is a loopback receiver that records calls and answers with
// the status its respond func chooses.
type downstream struct {
	calls   atomic.Int64
	mu      sync.Mutex
	keys    []string
	bodies  []string
	respond func(n int64) int
}

func (d *downstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := d.calls.Add(1)
	b := new(strings.Builder)
	_, _ = io.Copy(b, r.Body)
	d.mu.Lock()
	d.keys = append(d.keys, r.Header.Get("Idempotency-Key"))
	d.bodies = append(d.bodies, b.String())
	d.mu.Unlock()
	w.WriteHeader(d.respond(n))
}

func leaseSetup(t *testing.T, ttl, hb string, respond func(n int64) int) (*downstream, func(id, hash string) *resultView, store.Store) {
	t.Helper()
	d := &downstream{respond: respond}
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	routes := strings.NewReplacer("%TTL%", ttl, "%HB%", hb).Replace(leaseRoutes)
	proc, st, _ := ct.NewProcessor(t, ct.Options{Routes: []byte(routes), Env: map[string]string{"DOC_URL": srv.URL + "/process"}})
	deliver := func(id, hash string) *resultView {
		payload := `{"eventType":"document_uploaded","fileHash":"` + hash + `","path":"gs://in/` + hash + `.pdf"}`
		p, err := envelope.DecodePayload([]byte(payload))
		if err != nil {
			t.Fatal(err)
		}
		m := &envelope.Message{ID: id, Data: []byte(payload), Payload: p, Attributes: map[string]string{},
			PublishTime: time.Now(), Subscription: ct.Subscription}
		r := proc.Process(t.Context(), m)
		return &resultView{outcome: r.Outcome, status: r.HTTPStatus, errType: r.Class.Type, code: r.Class.Code, idem: r.IdemDoc, err: r.Err}
	}
	return d, deliver, st
}

type resultView struct {
	outcome, errType, code, idem string
	status                       int
	err                          error
}

func TestLeaseActionRunsOnce(t *testing.T) {
	d, deliver, _ := leaseSetup(t, "1m", "10s", func(int64) int { return http.StatusAccepted })
	if r := deliver("m1", "sha-1"); r.outcome != "applied" || r.status != 200 {
		t.Fatalf("first delivery: %+v", r)
	}
	if r := deliver("m1", "sha-1"); r.outcome != "duplicate" || r.status != 200 {
		t.Fatalf("redelivery: %+v", r)
	}
	if r := deliver("m2", "sha-1"); r.outcome != "duplicate" {
		t.Fatalf("republished event (new message id, same file hash): %+v", r)
	}
	if r := deliver("m3", "sha-2"); r.outcome != "applied" {
		t.Fatalf("another file: %+v", r)
	}
	if n := d.calls.Load(); n != 2 {
		t.Fatalf("downstream called %d times, want 2", n)
	}
	if d.keys[0] == "" || d.keys[0] == d.keys[1] || !strings.Contains(d.bodies[0], `"fileHash":"sha-1"`) {
		t.Fatalf("Idempotency-Key headers %q, bodies %q", d.keys, d.bodies)
	}
}

func TestLeaseActionRetriesThenPoison(t *testing.T) {
	d, deliver, st := leaseSetup(t, "1m", "10s", func(int64) int { return http.StatusServiceUnavailable })
	for i := 1; i <= 2; i++ {
		r := deliver("m1", "sha-x")
		if r.outcome != "retry" || r.status != 500 || r.errType != "transient" || r.code != "503" {
			t.Fatalf("attempt %d: %+v", i, r)
		}
	}
	r := deliver("m1", "sha-x")
	if r.outcome != "poison" || r.status != 200 {
		t.Fatalf("attempt 3 (maxAttempts): %+v", r)
	}
	if r := deliver("m1", "sha-x"); r.outcome != "poison" {
		t.Fatalf("after poison: %+v", r)
	}
	if n := d.calls.Load(); n != 3 {
		t.Fatalf("downstream called %d times, want 3", n)
	}
	// The poison line names the audit record.
	coll, id, _ := strings.Cut(r.idem, "/")
	rec, ok := ct.Get(t, st, store.Key{Collection: coll, ID: id})
	if !ok || !strings.Contains(rec.Fields["reason"].(string), "503") {
		t.Fatalf("poison record: %v %v", ok, rec.Fields)
	}
}

func TestLeaseActionRejectedIsPoison(t *testing.T) {
	_, deliver, _ := leaseSetup(t, "1m", "10s", func(int64) int { return http.StatusUnprocessableEntity })
	if r := deliver("m1", "sha-y"); r.outcome != "poison" || r.errType != "poison" {
		t.Fatalf("4xx: %+v", r)
	}
}

func TestLeaseHeldIsRetriedAndHeartbeatKeepsIt(t *testing.T) {
	release := make(chan struct{})
	d, deliver, _ := leaseSetup(t, "1s", "100ms", func(n int64) int {
		if n == 1 {
			<-release
		}
		return http.StatusOK
	})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // runs before the downstream server closes, even on failure
	first := make(chan *resultView, 1)
	go func() { first <- deliver("m1", "sha-slow") }()
	for d.calls.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	// Longer than the lease: only the heartbeat keeps it.
	time.Sleep(1500 * time.Millisecond)
	r := deliver("m2", "sha-slow")
	if r.outcome != "retry" || r.errType != "in_progress" || r.status != 500 {
		t.Fatalf("second worker while the lease is held: %+v", r)
	}
	unblock()
	if r := <-first; r.outcome != "applied" {
		t.Fatalf("holder: %+v", r)
	}
	if n := d.calls.Load(); n != 1 {
		t.Fatalf("downstream called %d times, want 1", n)
	}
}
