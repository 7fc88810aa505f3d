package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/keys"
	"github.com/eventpipe/eventpipe/consumer/store"
)

// heartbeat is one service-health event of the system-events shape.
type heartbeat struct {
	msgID   string
	eventID string
	service string
	status  string
	at      time.Time
	seq     *int64
}

// t0 is the time the suite's events start from.
func t0() time.Time { return time.Date(2026, 1, 8, 10, 0, 0, 0, time.UTC) }

func (h heartbeat) event() engine.Event {
	payload, err := json.Marshal(map[string]any{"eventId": h.eventID, "service": h.service, "status": h.status, "producedAt": h.at})
	if err != nil {
		panic(err) // cannot happen: strings and a time
	}
	return engine.Event{MessageID: h.msgID, PublishTime: h.at.Add(time.Second), EventID: h.eventID, Payload: payload}
}

func (h heartbeat) write(coll string) engine.Write {
	return engine.Write{Collection: coll, ID: h.service, EventTime: h.at, Sequence: h.seq,
		Fields: map[string]any{"service": h.service, "status": h.status, "updatedAt": h.at}}
}

func deliver(t *testing.T, eng *engine.Engine, coll string, h heartbeat) engine.Result {
	t.Helper()
	res, err := eng.Materialize(context.Background(), h.event(), h.write(coll))
	if err != nil {
		t.Fatalf("deliver %s: %v", h.msgID, err)
	}
	return res
}

func hb(i int, status string) heartbeat {
	return heartbeat{msgID: fmt.Sprintf("m%d", i), eventID: fmt.Sprintf("e%d", i), service: "strategy-engine",
		status: status, at: t0().Add(time.Duration(i) * time.Second)}
}

func stateOf(t *testing.T, e *env, coll, service string) map[string]any {
	t.Helper()
	d := e.get(store.Key{Collection: coll, ID: "prod__" + service})
	if d == nil {
		t.Fatalf("no state document for %s", service)
	}
	return d.Fields
}

func duplicateDelivery(t *testing.T, e *env) {
	eng, coll := e.engine(), e.collection("ops_services")
	first := deliver(t, eng, coll, hb(1, "healthy"))
	if first.Outcome != engine.Applied {
		t.Fatalf("first delivery: %s, want applied", first.Outcome)
	}
	for i := 0; i < 3; i++ {
		if r := deliver(t, eng, coll, hb(1, "healthy")); r.Outcome != engine.Duplicate {
			t.Fatalf("redelivery %d: %s, want duplicate", i, r.Outcome)
		}
	}
	if got := stateOf(t, e, coll, "strategy-engine")["status"]; got != "healthy" {
		t.Errorf("status = %v", got)
	}
}

// operationCounts asserts the cost goal: <= 1 read + 1 write per applied
// latest-state message, <= 1 read + 0 writes per duplicate or stale one.
func operationCounts(t *testing.T, e *env) {
	eng, coll := e.engine(), e.collection("ops_services")
	cases := []struct {
		name    string
		h       heartbeat
		outcome engine.Outcome
		reads   int64
		writes  int64
	}{
		{"applied (first)", hb(5, "healthy"), engine.Applied, 1, 1},
		{"applied (newer)", hb(6, "degraded"), engine.Applied, 1, 1},
		{"duplicate", hb(6, "degraded"), engine.Duplicate, 1, 0},
		{"stale", hb(2, "down"), engine.Stale, 1, 0},
	}
	for _, c := range cases {
		r := deliver(t, eng, coll, c.h)
		t.Logf("store ops per message: %-16s outcome=%-13s reads=%d writes=%d", c.name, r.Outcome, r.Reads(), r.Writes())
		if r.Outcome != c.outcome || r.Reads() > c.reads || r.Writes() > c.writes {
			t.Errorf("%s: outcome=%s reads=%d writes=%d; want %s with at most %d reads and %d writes",
				c.name, r.Outcome, r.Reads(), r.Writes(), c.outcome, c.reads, c.writes)
		}
	}
}

// operationCountsHotDocument asserts the cost of a hot aggregate: while
// one delivery's transaction is in flight, 2*e.n more deliveries for the
// same document arrive (newer events, and an older event republished);
// they are decided together, so the whole burst costs a few writes, not
// one per message, each delivery gets its own outcome and the newest
// event wins. With dedupe markers the republished event is a duplicate
// (found by its marker), without them stale.
func operationCountsHotDocument(t *testing.T, e *env) {
	for _, marker := range []bool{false, true} {
		t.Run(fmt.Sprintf("marker=%v", marker), func(t *testing.T) {
			coll := e.collection(fmt.Sprintf("ops_services_%v", marker))
			deliveries := []heartbeat{hb(1, "status-1")}
			for i := 2; i <= 2*e.n; i++ {
				deliveries = append(deliveries, hb(i, fmt.Sprintf("status-%d", i)))
			}
			republished := hb(0, "status-0")
			republished.msgID = "m0-again"
			deliveries = append(deliveries, republished)
			write := func(h heartbeat) engine.Write {
				w := h.write(coll)
				w.DedupeMarker = marker
				return w
			}
			// Event 0 was applied before the burst.
			if _, err := e.engine().Materialize(context.Background(), hb(0, "status-0").event(), write(hb(0, "status-0"))); err != nil {
				t.Fatal(err)
			}
			n := len(deliveries)
			gate := &firstTxGate{Store: e.st, entered: make(chan struct{}), release: make(chan struct{})}
			var arrived atomic.Int64
			eng := e.engine(func(c *engine.Config) {
				c.Store = gate
				c.Failpoint = func(_ context.Context, fp engine.Failpoint) error {
					// Every delivery passes here before it runs or waits.
					if fp == engine.ProjectionBeforeWrite && arrived.Add(1) == int64(n) {
						close(gate.release)
					}
					return nil
				}
			})
			results := make([]engine.Result, n)
			var failed countErrs
			var wg sync.WaitGroup
			for i, h := range deliveries {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, err := eng.Materialize(context.Background(), h.event(), write(h))
					failed.add(err)
					results[i] = r
				}()
				if i == 0 {
					<-gate.entered // the first delivery's transaction is in flight
				}
			}
			wg.Wait()
			if len(failed.errs) > 0 {
				t.Fatalf("errors: %v", failed.errs)
			}
			var reads, writes int64
			applied := 0
			for _, r := range results {
				reads, writes = reads+r.Reads(), writes+r.Writes()
				if r.Outcome == engine.Applied {
					applied++
				}
			}
			t.Logf("store ops per message: hot document, %d deliveries at once, dedupe marker %v: reads=%.2f writes=%.2f (%d applied)",
				n, marker, float64(reads)/float64(n), float64(writes)/float64(n), applied)
			perApplied := int64(1)
			wantRepublished := engine.Stale
			if marker {
				perApplied, wantRepublished = 2, engine.Duplicate
			}
			if writes > perApplied*int64(n)/4 || int64(applied)*perApplied != writes {
				t.Errorf("%d deliveries for one document cost %d writes, %d applied; want at most %d (one transaction's per group, not per message)",
					n, writes, applied, perApplied*int64(n)/4)
			}
			if got := results[n-1].Outcome; got != wantRepublished {
				t.Errorf("republished older event: %s, want %s", got, wantRepublished)
			}
			if e.h.NoIsolation == "" {
				if got := stateOf(t, e, coll, "strategy-engine")["status"]; got != fmt.Sprintf("status-%d", 2*e.n) {
					t.Errorf("final status %v, want status-%d", got, 2*e.n)
				}
			}
		})
	}
}

// firstTxGate holds the first transaction at its start until release is
// closed, and closes entered when it gets there.
type firstTxGate struct {
	store.Store
	once             sync.Once
	entered, release chan struct{}
}

func (g *firstTxGate) RunTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.entered)
		<-g.release
	}
	return g.Store.RunTx(ctx, fn)
}

func concurrentSameMessage(t *testing.T, e *env) {
	eng, coll := e.engine(), e.collection("ops_services")
	var applied, dup countErrs
	var failed countErrs
	e.parallel(func(int) {
		r, err := eng.Materialize(context.Background(), hb(1, "healthy").event(), hb(1, "healthy").write(coll))
		switch {
		case err != nil:
			failed.add(err)
		case r.Outcome == engine.Applied:
			applied.add(nil)
		case r.Outcome == engine.Duplicate:
			dup.add(nil)
		}
	})
	if len(failed.errs) > 0 {
		t.Fatalf("errors: %v", failed.errs)
	}
	if applied.n != 1 || dup.n != e.n-1 {
		t.Fatalf("%d concurrent deliveries of one message: %d applied, %d duplicate; want exactly 1 applied", e.n, applied.n, dup.n)
	}
}

func shuffledSequences(t *testing.T, e *env) {
	eng := e.engine()
	rng := rand.New(rand.NewPCG(1, 2))
	const events = 8
	for _, withSeq := range []bool{false, true} {
		coll := e.collection(fmt.Sprintf("seq_%v", withSeq))
		for perm := 0; perm < 4; perm++ {
			service := fmt.Sprintf("svc-%d", perm)
			var hs []heartbeat
			for i := 0; i < events; i++ {
				h := hb(i, fmt.Sprintf("status-%d", i))
				h.service = service
				if withSeq {
					// The sequence disagrees with the clock: it must win.
					s := int64(i)
					h.seq = &s
					h.at = t0().Add(time.Duration(events-i) * time.Second)
				}
				hs = append(hs, h)
			}
			// Every event twice, shuffled: duplicates and reordering together.
			all := append(append([]heartbeat(nil), hs...), hs...)
			rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
			applied := 0
			for _, h := range all {
				if deliver(t, eng, coll, h).Outcome == engine.Applied {
					applied++
				}
			}
			got := stateOf(t, e, coll, service)
			if got["status"] != fmt.Sprintf("status-%d", events-1) {
				t.Errorf("seq=%v perm %d: final status %v, want the maximum status-%d", withSeq, perm, got["status"], events-1)
			}
			if applied < 1 || applied > events {
				t.Errorf("seq=%v perm %d: %d applied of %d deliveries", withSeq, perm, applied, len(all))
			}
		}
	}
}

// concurrentShuffled delivers every event of one aggregate twice, shuffled,
// from e.n goroutines at once: the final document is still the maximum and
// each event is applied at most once.
func concurrentShuffled(t *testing.T, e *env) {
	eng, coll := e.engine(), e.collection("ops_services")
	const events = 24
	var all []heartbeat
	for i := 0; i < events; i++ {
		h := hb(i, fmt.Sprintf("status-%d", i))
		all = append(all, h, h)
	}
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	var mu sync.Mutex
	applied := map[string]int{}
	var failed countErrs
	e.parallel(func(w int) {
		for i := w; i < len(all); i += e.n {
			r, err := eng.Materialize(context.Background(), all[i].event(), all[i].write(coll))
			if err != nil {
				failed.add(err)
				continue
			}
			if r.Outcome == engine.Applied {
				mu.Lock()
				applied[all[i].msgID]++
				mu.Unlock()
			}
		}
	})
	if len(failed.errs) > 0 {
		t.Fatalf("errors: %v", failed.errs)
	}
	for id, n := range applied {
		if n > 1 {
			t.Errorf("%s applied %d times", id, n)
		}
	}
	if got := stateOf(t, e, coll, "strategy-engine")["status"]; got != fmt.Sprintf("status-%d", events-1) {
		t.Errorf("final status %v, want status-%d", got, events-1)
	}
}

func deterministicTies(t *testing.T, e *env) {
	eng := e.engine()
	// Same event time and publish time: the message id decides, whatever the order.
	a := heartbeat{msgID: "msg-a", eventID: "ea", service: "svc", status: "from-a", at: t0()}
	b := heartbeat{msgID: "msg-b", eventID: "eb", service: "svc", status: "from-b", at: t0()}
	for i, order := range [][]heartbeat{{a, b}, {b, a}} {
		coll := e.collection(fmt.Sprintf("ties%d", i))
		for _, h := range order {
			deliver(t, eng, coll, h)
		}
		if got := stateOf(t, e, coll, "svc")["status"]; got != "from-b" {
			t.Errorf("order %d: status %v, want from-b (the larger message id wins a tie)", i, got)
		}
	}
}

func dedupeMarker(t *testing.T, e *env) {
	eng, coll := e.engine(), e.collection("ops_services")
	withMarker := func(h heartbeat) engine.Result {
		t.Helper()
		w := h.write(coll)
		w.DedupeMarker = true
		r, err := eng.Materialize(context.Background(), h.event(), w)
		if err != nil {
			t.Fatalf("deliver %s: %v", h.msgID, err)
		}
		return r
	}
	r := withMarker(hb(1, "healthy"))
	if r.Outcome != engine.Applied || r.Reads() > 1 || r.Writes() > 2 {
		t.Errorf("applied with marker: %s reads=%d writes=%d, want applied, <= 1 read + 2 writes (a marker in its own transaction spent 2 + 2)", r.Outcome, r.Reads(), r.Writes())
	}
	t.Logf("store ops with dedupe marker: applied reads=%d writes=%d", r.Reads(), r.Writes())
	// The marker as stored, read outside the engine: every driver gives back
	// the same fields, whatever form the engine handed it.
	markerKey := store.Key{Collection: e.prefix + "dedupe", ID: "prod__e-e1"}
	fp, err := keys.Fingerprint(hb(1, "healthy").event().Payload)
	if err != nil {
		t.Fatal(err)
	}
	wantMarker := map[string]any{"eventKey": "e-e1", "messageId": "m1", "fingerprint": fp,
		"target": coll + "/prod__strategy-engine", "createdAt": e.clock.Now().UTC()}
	switch d := e.get(markerKey); {
	case d == nil:
		t.Errorf("no dedupe marker %s", markerKey)
	case !reflect.DeepEqual(d.Fields, wantMarker) || !d.ExpireAt.Equal(e.clock.Now().Add(engine.DefaultDedupeTTL)):
		t.Errorf("dedupe marker %s = %#v expiring %v,\nwant %#v expiring %v", markerKey, d.Fields, d.ExpireAt,
			wantMarker, e.clock.Now().Add(engine.DefaultDedupeTTL))
	}
	withMarker(hb(2, "degraded"))
	// Event 1 republished under a new message id after event 2 replaced it:
	// the marker still knows it.
	again := hb(1, "healthy")
	again.msgID = "m1-republished"
	if r := withMarker(again); r.Outcome != engine.Duplicate {
		t.Errorf("republished event: %s, want duplicate (found by its dedupe marker)", r.Outcome)
	} else {
		t.Logf("store ops with dedupe marker: duplicate reads=%d writes=%d", r.Reads(), r.Writes())
	}
	if got := stateOf(t, e, coll, "strategy-engine")["status"]; got != "degraded" {
		t.Errorf("status = %v, want degraded", got)
	}
}

func createMode(t *testing.T, e *env) {
	eng, coll := e.engine(), e.collection("findings")
	ev := engine.Event{MessageID: "m1", EventID: "finding-1", Payload: []byte(`{"finding":1}`)}
	w := engine.Write{Collection: coll, Mode: engine.ModeCreate, Fields: map[string]any{"severity": "high"}}
	r, err := eng.Materialize(context.Background(), ev, w)
	if err != nil || r.Outcome != engine.Applied || r.Reads() != 0 || r.Writes() != 1 {
		t.Fatalf("first: %+v, %v; want applied with 0 reads and 1 write", r, err)
	}
	r, err = eng.Materialize(context.Background(), ev, w)
	if err != nil || r.Outcome != engine.Duplicate {
		t.Fatalf("second: %+v, %v; want duplicate", r, err)
	}
	if d := e.get(store.Key{Collection: coll, ID: "prod__e-finding-1"}); d == nil || d.Fields["severity"] != "high" {
		t.Errorf("created document = %+v", d)
	}
}

func fingerprintMismatch(t *testing.T, e *env) {
	coll := e.collection("ops_services")
	h := hb(1, "healthy")
	deliver(t, e.engine(), coll, h)
	changed := h
	changed.status = "down" // same event id, different payload
	_, err := e.engine().Materialize(context.Background(), changed.event(), changed.write(coll))
	if errType(err) != engine.TypePoison {
		t.Fatalf("same event id, different payload: err = %v, want poison (error mode)", err)
	}
	warn := e.engine(func(c *engine.Config) { c.Fingerprint = engine.FingerprintWarn })
	r, err := warn.Materialize(context.Background(), changed.event(), changed.write(coll))
	if err != nil || r.Outcome != engine.Duplicate || r.Warning == "" {
		t.Fatalf("warn mode: %+v, %v; want duplicate with a warning", r, err)
	}
	if got := stateOf(t, e, coll, "strategy-engine")["status"]; got != "healthy" {
		t.Errorf("status = %v: a reused event id must not overwrite", got)
	}
}
