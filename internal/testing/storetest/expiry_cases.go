package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/keys"
	"github.com/eventpipe/eventpipe/consumer/store"
)

const (
	testDedupeTTL  = time.Hour
	testReceiptTTL = 2 * time.Hour
	testPoisonTTL  = 3 * time.Hour
)

func withTTLs(c *engine.Config) {
	c.DedupeTTL, c.ReceiptTTL, c.PoisonTTL = testDedupeTTL, testReceiptTTL, testPoisonTTL
}

func expiredRecordsAbsent(t *testing.T, e *env) {
	eng := e.engine(withTTLs)
	ctx := context.Background()
	// Reservation of an event: completed, then expired: a new delivery claims afresh.
	ev := emailEvent("ev-exp")
	l, err := eng.Claim(ctx, emailReq(ev))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Settle(ctx, l, completed(nil)); err != nil {
		t.Fatal(err)
	}
	// Receipt: settled, then expired.
	rc, err := eng.Claim(ctx, callback("cb-exp"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Settle(ctx, rc, completed(nil)); err != nil {
		t.Fatal(err)
	}
	// Dedupe marker: event 1 then 2; event 1 again is a duplicate by its marker.
	coll := e.collection("ops_services")
	marked := func(h heartbeat) engine.Outcome {
		w := h.write(coll)
		w.DedupeMarker = true
		r, err := eng.Materialize(ctx, h.event(), w)
		if err != nil {
			t.Fatalf("deliver %s: %v", h.msgID, err)
		}
		return r.Outcome
	}
	marked(hb(1, "a"))
	marked(hb(2, "b"))
	if o := marked(hb(1, "a")); o != engine.Duplicate {
		t.Fatalf("before expiry: %s, want duplicate", o)
	}

	e.clock.Advance(testReceiptTTL + time.Second) // past every TTL; nothing is deleted (TTL lag)
	if fresh, err := eng.Claim(ctx, emailReq(ev)); err != nil || fresh.Replayed {
		t.Errorf("claim after the completed reservation expired: %+v, %v, want a fresh claim", fresh, err)
	} else if fresh.Token <= l.Token || fresh.Attempt != 1 {
		t.Errorf("fresh claim over an expired record: token %d attempt %d; want a token above %d (fencing stays monotonic) and attempt 1", fresh.Token, fresh.Attempt, l.Token)
	}
	if again, err := eng.Claim(ctx, callback("cb-exp")); err != nil || again.Replayed {
		t.Errorf("reserve after the receipt expired: %+v, %v; want a fresh reservation", again, err)
	}
	if o := marked(hb(1, "a")); o != engine.Stale {
		t.Errorf("after the marker expired: %s, want stale (the marker is treated as absent; the state decides)", o)
	}
}

func expireAtOnEveryRecord(t *testing.T, e *env) {
	eng := e.engine(withTTLs)
	ctx := context.Background()
	now := e.clock.Now()
	h := hb(1, "a")
	w := h.write(e.collection("ops_services"))
	w.DedupeMarker = true
	if _, err := eng.Materialize(ctx, h.event(), w); err != nil {
		t.Fatal(err)
	}
	ev := emailEvent("ev-ttl")
	l, err := eng.Claim(ctx, emailReq(ev))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Release(ctx, l, fmt.Errorf("x"), false); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Claim(ctx, callback("cb-ttl")); err != nil {
		t.Fatal(err)
	}
	poisonDoc, err := eng.RecordPoison(ctx, ev, engine.PoisonRecord{Reason: "bad"})
	if err != nil {
		t.Fatal(err)
	}
	dedupe, leases, receipts, poison := eng.Collections()
	for _, c := range []struct {
		key store.Key
		ttl time.Duration
	}{
		{store.Key{Collection: dedupe, ID: "prod__e-e1"}, testDedupeTTL},
		{store.Key{Collection: leases, ID: "prod__send-email__e-ev-ttl"}, testDedupeTTL},
		{store.Key{Collection: receipts, ID: "prod__validation-finished__cb-ttl"}, testReceiptTTL},
		{store.Key{Collection: poison, ID: strings.TrimPrefix(poisonDoc, poison+"/")}, testPoisonTTL},
	} {
		d := e.get(c.key)
		if d == nil {
			t.Errorf("%s: missing", c.key)
			continue
		}
		if want := now.Add(c.ttl); !d.ExpireAt.Equal(want) {
			t.Errorf("%s: expireAt = %v, want %v", c.key, d.ExpireAt, want)
		}
	}
}

func idNormalisation(t *testing.T, e *env) {
	eng, coll := e.engine(), e.collection("aggregates")
	ids := []string{
		"Strategy-Engine", "strategy-engine", "  strategy-engine ", "strategy engine", "strategy\t engine",
		"strategy_engine", "strategy/engine", "strategy__engine", "strategy.engine", "strategy_2fengine",
		".", "..", "__name__", "_", "__", "a%2Fb", "ÄÖ", "äö", "日本", "a\x00b", "prod__x",
		strings.Repeat("x", 2000), strings.Repeat("x", 2000) + "y", strings.Repeat("/", 800),
	}
	last := map[string]int{} // doc id -> index of the last id delivered to it
	folds := map[string]string{}
	for i, id := range ids {
		h := heartbeat{msgID: fmt.Sprintf("m%d", i), eventID: fmt.Sprintf("e%d", i), service: id,
			status: fmt.Sprint(i), at: t0().Add(time.Duration(i) * time.Second)}
		r, err := eng.Materialize(context.Background(), h.event(), h.write(coll))
		if err != nil {
			t.Fatalf("id %q: %v", id, err)
		}
		docID, _ := keys.DocID("prod", id)
		if r.DocPath != coll+"/"+docID {
			t.Errorf("id %q: doc %s, want %s/%s", id, r.DocPath, coll, docID)
		}
		if err := keys.ValidFirestoreID(docID); err != nil {
			t.Errorf("id %q: invalid Firestore id %q: %v", id, docID, err)
		}
		if f, ok := folds[docID]; ok && f != keys.Fold(id) {
			t.Errorf("collision: %q and %q (different ids) share document %q", f, keys.Fold(id), docID)
		}
		folds[docID] = keys.Fold(id)
		last[docID] = i
	}
	for docID, i := range last {
		d := e.get(store.Key{Collection: coll, ID: docID})
		if d == nil || d.Fields["status"] != fmt.Sprint(i) {
			t.Errorf("document %.60q: %+v, want status %d", docID, d, i)
		}
	}
	distinct := map[string]bool{}
	for _, id := range ids {
		distinct[keys.Fold(id)] = true
	}
	if len(last) != len(distinct) {
		t.Errorf("%d documents for %d distinct ids", len(last), len(distinct))
	}
}
