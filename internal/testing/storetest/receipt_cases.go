package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/store"
)

// callback is the reservation request of a callback with id.
func callback(id string) engine.Request {
	return engine.Request{Scope: "validation-finished", ID: id,
		Payload: []byte(`{"run_id":"r1","callback_id":"` + id + `","status":"SUCCEEDED"}`), Fields: map[string]any{"runId": "r1"}}
}

// runCounter is a callback's effect in the tests: it counts its runs in a
// document, so a second application shows.
func (e *env) runCounter(name string) (engine.Effect, func() int64) {
	key := store.Key{Collection: e.collection("runs"), ID: name}
	effect := func(ctx context.Context, tx store.Tx) error {
		d, err := tx.Get(ctx, key)
		if err != nil && !isNotFound(err) {
			return err
		}
		n, _ := d.Fields["applied"].(int64)
		return tx.Set(ctx, key, store.Document{Fields: map[string]any{"applied": n + 1}})
	}
	count := func() int64 {
		d := e.get(key)
		if d == nil {
			return 0
		}
		n, _ := d.Fields["applied"].(int64)
		return n
	}
	return effect, count
}

// settled completes a reservation with the callback's own status as its
// result, running effect in the same transaction.
func settled(status string, effect engine.Effect) engine.Settlement {
	return engine.Settlement{Status: engine.StatusCompleted, Result: map[string]any{"status": status}, Effect: effect}
}

func receipts(t *testing.T, e *env) {
	eng := e.engine() // LeaseDuration 1 minute
	ctx := context.Background()
	effect, applied := e.runCounter("cb-1")
	rc, err := eng.Claim(ctx, callback("cb-1"))
	if err != nil || rc.Replayed || rc.Status != engine.StatusPending {
		t.Fatalf("claim: %+v, %v", rc, err)
	}
	if rc.Ops.Reads > 1 || rc.Ops.Writes > 1 {
		t.Errorf("claim cost %+v, want <= 1 read + 1 write", rc.Ops)
	}
	received := rc.ReceivedAt
	e.clock.Advance(time.Second)
	// A retry while the first delivery processes: in progress, never done.
	busy, err := eng.Claim(ctx, callback("cb-1"))
	if errType(err) != engine.TypeInProgress || busy.Replayed || !busy.HeldUntil.Equal(received.Add(time.Minute)) {
		t.Fatalf("retry while processing: %+v, %v; want in_progress held until %v", busy, err, received.Add(time.Minute))
	}
	if busy.Ops.Writes != 0 {
		t.Errorf("an in-progress answer wrote %d documents", busy.Ops.Writes)
	}
	if _, err := eng.Settle(ctx, busy, settled("SUCCEEDED", effect)); errType(err) != engine.TypeConfiguration {
		t.Errorf("settling a reservation this call does not hold: %v, want a configuration error", err)
	}
	if _, err := eng.Settle(ctx, rc, settled("SUCCEEDED", effect)); err != nil {
		t.Fatalf("settle: %v", err)
	}
	dup, err := eng.Claim(ctx, callback("cb-1"))
	if err != nil || !dup.Replayed || !dup.ReceivedAt.Equal(received) || dup.Status != engine.StatusCompleted || dup.Result["status"] != "SUCCEEDED" {
		t.Fatalf("replay after settling: %+v, %v; want the original received-at %v and result SUCCEEDED", dup, err, received)
	}
	if dup.Ops.Writes != 0 {
		t.Errorf("a replay wrote %d documents", dup.Ops.Writes)
	}
	if n := applied(); n != 1 {
		t.Errorf("effect applied %d times, want 1", n)
	}
	// A failed processing releases the reservation: the retry processes.
	rc2, err := eng.Claim(ctx, callback("cb-2"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Release(ctx, rc2, nil, false); err != nil {
		t.Fatalf("release: %v", err)
	}
	if again, err := eng.Claim(ctx, callback("cb-2")); err != nil || again.Replayed || again.Status != engine.StatusPending || again.Attempt != 2 {
		t.Fatalf("claim after release: %+v, %v; want a fresh claim, attempt 2", again, err)
	}
}

// receiptHolderDies: a delivery that claimed a callback and died (SIGKILL)
// leaves it pending: retries are in progress until its claim lapses, then
// one takes over and applies the effect; the dead holder, if it wakes,
// can neither apply nor settle (its token is fenced), even after a later
// holder released it.
func receiptHolderDies(t *testing.T, e *env) {
	eng := e.engine() // LeaseDuration 1 minute
	ctx := context.Background()
	effect, applied := e.runCounter("cb-3")
	dead, err := eng.Claim(ctx, callback("cb-3"))
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(30 * time.Second)
	if _, err := eng.Claim(ctx, callback("cb-3")); errType(err) != engine.TypeInProgress {
		t.Fatalf("retry within the claim: %v, want in_progress", err)
	}
	e.clock.Advance(31 * time.Second)
	second, err := eng.Claim(ctx, callback("cb-3"))
	if err != nil || second.Replayed || !second.ReceivedAt.Equal(dead.ReceivedAt) || !second.TookOver {
		t.Fatalf("retry after the claim lapsed: %+v, %v; want a takeover keeping received-at", second, err)
	}
	// The second holder fails and releases; a third delivery claims.
	if _, err := eng.Release(ctx, second, nil, false); err != nil {
		t.Fatal(err)
	}
	third, err := eng.Claim(ctx, callback("cb-3"))
	if err != nil || third.Replayed {
		t.Fatalf("claim after release: %+v, %v", third, err)
	}
	if _, err := eng.Settle(ctx, dead, settled("SUCCEEDED", effect)); errType(err) != engine.TypeStale {
		t.Errorf("settle by the dead holder: %v, want stale (fenced)", err)
	}
	if n := applied(); n != 0 {
		t.Errorf("the fenced holder's effect was applied %d times", n)
	}
	if _, err := eng.Settle(ctx, third, settled("SUCCEEDED", effect)); err != nil {
		t.Fatalf("settle by the current holder: %v", err)
	}
	if n := applied(); n != 1 {
		t.Errorf("effect applied %d times, want 1", n)
	}
	if r, err := eng.Claim(ctx, callback("cb-3")); err != nil || !r.Replayed || r.Result["status"] != "SUCCEEDED" {
		t.Errorf("replay: %+v, %v", r, err)
	}
}

func receiptsRace(t *testing.T, e *env) {
	eng := e.engine()
	var processed, inProgress, failed countErrs
	e.parallel(func(int) {
		_, err := eng.Claim(context.Background(), callback("cb-race"))
		switch {
		case err == nil:
			processed.add(nil)
		case errType(err) == engine.TypeInProgress:
			inProgress.add(nil)
		default:
			failed.add(err)
		}
	})
	if processed.n != 1 || inProgress.n != e.n-1 {
		t.Fatalf("%d concurrent callbacks: %d processed, %d in progress, errors %v; want exactly one processed", e.n, processed.n, inProgress.n, failed.errs)
	}
}

// receiptResult: a result set when settling is what every replay returns,
// as stored (the gateway's stored API responses); a reservation with its
// own TTL expires then (a new claim follows), and a caller-computed
// fingerprint guards the id like a payload's.
func receiptResult(t *testing.T, e *env) {
	eng := e.engine()
	ctx := context.Background()
	req := engine.Request{Scope: "http-idempotency", ID: "scope-1", Fingerprint: "raw-sha256:aa", TTL: time.Hour}
	rc, err := eng.Claim(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	result := map[string]any{"status": int64(201), "body": "eyJpZCI6MX0=", "headers": map[string]any{"Location": []any{"/o/1"}}}
	if _, err := eng.Settle(ctx, rc, completed(result)); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(59 * time.Minute)
	dup, err := eng.Claim(ctx, req)
	if err != nil || !dup.Replayed || !reflect.DeepEqual(dup.Result, result) {
		t.Fatalf("replay: %+v, %v; want the stored result %v", dup, err, result)
	}
	other := req
	other.Fingerprint = "raw-sha256:bb"
	if _, err := eng.Claim(ctx, other); errType(err) != engine.TypePoison {
		t.Fatalf("another fingerprint: %v, want poison (a reused key)", err)
	}
	e.clock.Advance(2 * time.Minute) // past the request's TTL, far within ReceiptTTL
	again, err := eng.Claim(ctx, other)
	if err != nil || again.Replayed || again.Result != nil {
		t.Fatalf("after the TTL: %+v, %v; want a new claim", again, err)
	}
}
