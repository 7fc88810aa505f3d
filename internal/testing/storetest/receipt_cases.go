package storetest

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/store"
)

func callback(id string) engine.ReceiptRequest {
	return engine.ReceiptRequest{Route: "validation-finished", CallbackID: id,
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

func receipts(t *testing.T, e *env) {
	eng := e.engine() // LeaseDuration 1 minute
	ctx := context.Background()
	effect, applied := e.runCounter("cb-1")
	rc, err := eng.Reserve(ctx, callback("cb-1"))
	if err != nil || rc.Replayed || rc.Status != engine.ReceiptProcessing {
		t.Fatalf("reserve: %+v, %v", rc, err)
	}
	if rc.Ops.Reads > 1 || rc.Ops.Writes > 1 {
		t.Errorf("reserve cost %+v, want <= 1 read + 1 write", rc.Ops)
	}
	received := rc.ReceivedAt
	e.clock.Advance(time.Second)
	// A retry while the first delivery processes: in progress, never done.
	busy, err := eng.Reserve(ctx, callback("cb-1"))
	if errType(err) != engine.TypeInProgress || busy.Replayed || !busy.HeldUntil.Equal(received.Add(time.Minute)) {
		t.Fatalf("retry while processing: %+v, %v; want in_progress held until %v", busy, err, received.Add(time.Minute))
	}
	if busy.Ops.Writes != 0 {
		t.Errorf("an in-progress answer wrote %d documents", busy.Ops.Writes)
	}
	if _, err := eng.Finish(ctx, busy, "SUCCEEDED", effect); errType(err) != engine.TypeConfiguration {
		t.Errorf("finishing a receipt this call did not reserve: %v, want a configuration error", err)
	}
	if _, err := eng.Finish(ctx, rc, "SUCCEEDED", effect); err != nil {
		t.Fatalf("finish: %v", err)
	}
	dup, err := eng.Reserve(ctx, callback("cb-1"))
	if err != nil || !dup.Replayed || !dup.ReceivedAt.Equal(received) || dup.Status != "SUCCEEDED" {
		t.Fatalf("replay after finish: %+v, %v; want the original received-at %v and status SUCCEEDED", dup, err, received)
	}
	if dup.Ops.Writes != 0 {
		t.Errorf("a replay wrote %d documents", dup.Ops.Writes)
	}
	if n := applied(); n != 1 {
		t.Errorf("effect applied %d times, want 1", n)
	}
	// A failed processing releases the receipt: the retry processes.
	rc2, err := eng.Reserve(ctx, callback("cb-2"))
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Release(ctx, rc2); err != nil {
		t.Fatalf("release: %v", err)
	}
	if again, err := eng.Reserve(ctx, callback("cb-2")); err != nil || again.Replayed || again.Status != engine.ReceiptProcessing {
		t.Fatalf("reserve after release: %+v, %v; want a fresh reservation", again, err)
	}
}

// receiptHolderDies: a delivery that reserved a receipt and died (SIGKILL)
// leaves it processing: retries are in progress until its reservation
// lapses, then one takes over and applies the effect; the dead holder, if
// it wakes, can neither apply nor finish (its token is fenced), even after
// a later holder released the receipt.
func receiptHolderDies(t *testing.T, e *env) {
	eng := e.engine() // LeaseDuration 1 minute
	ctx := context.Background()
	effect, applied := e.runCounter("cb-3")
	dead, err := eng.Reserve(ctx, callback("cb-3"))
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(30 * time.Second)
	if _, err := eng.Reserve(ctx, callback("cb-3")); errType(err) != engine.TypeInProgress {
		t.Fatalf("retry within the reservation: %v, want in_progress", err)
	}
	e.clock.Advance(31 * time.Second)
	second, err := eng.Reserve(ctx, callback("cb-3"))
	if err != nil || second.Replayed || !second.ReceivedAt.Equal(dead.ReceivedAt) {
		t.Fatalf("retry after the reservation lapsed: %+v, %v; want a takeover keeping received-at", second, err)
	}
	// The second holder fails and releases; a third delivery reserves.
	if err := eng.Release(ctx, second); err != nil {
		t.Fatal(err)
	}
	third, err := eng.Reserve(ctx, callback("cb-3"))
	if err != nil || third.Replayed {
		t.Fatalf("reserve after release: %+v, %v", third, err)
	}
	if _, err := eng.Finish(ctx, dead, "SUCCEEDED", effect); errType(err) != engine.TypeStale {
		t.Errorf("finish by the dead holder: %v, want stale (fenced)", err)
	}
	if n := applied(); n != 0 {
		t.Errorf("the fenced holder's effect was applied %d times", n)
	}
	if _, err := eng.Finish(ctx, third, "SUCCEEDED", effect); err != nil {
		t.Fatalf("finish by the current holder: %v", err)
	}
	if n := applied(); n != 1 {
		t.Errorf("effect applied %d times, want 1", n)
	}
	if r, err := eng.Reserve(ctx, callback("cb-3")); err != nil || !r.Replayed || r.Status != "SUCCEEDED" {
		t.Errorf("replay: %+v, %v", r, err)
	}
	// A per-request lease shorter than the engine's.
	short := callback("cb-4")
	short.Lease = 5 * time.Second
	if _, err := eng.Reserve(ctx, short); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(6 * time.Second)
	if r, err := eng.Reserve(ctx, short); err != nil || r.Replayed {
		t.Errorf("retry after a 5s reservation lapsed: %+v, %v; want a takeover", r, err)
	}
}

func receiptsRace(t *testing.T, e *env) {
	eng := e.engine()
	var processed, inProgress, failed countErrs
	e.parallel(func(int) {
		_, err := eng.Reserve(context.Background(), callback("cb-race"))
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

// receiptResult: a result set before Finish is what every replay returns,
// as stored (the gateway's stored API responses); a receipt with its own
// TTL expires then (a new reservation follows), and a caller-computed
// fingerprint guards the id like a payload's.
func receiptResult(t *testing.T, e *env) {
	eng := e.engine()
	ctx := context.Background()
	req := engine.ReceiptRequest{Route: "http-idempotency", CallbackID: "scope-1", Fingerprint: "raw-sha256:aa", TTL: time.Hour}
	rc, err := eng.Reserve(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	result := map[string]any{"status": int64(201), "body": "eyJpZCI6MX0=", "headers": map[string]any{"Location": []any{"/o/1"}}}
	rc.Result = result
	if _, err := eng.Finish(ctx, rc, "completed", nil); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(59 * time.Minute)
	dup, err := eng.Reserve(ctx, req)
	if err != nil || !dup.Replayed || !reflect.DeepEqual(dup.Result, result) {
		t.Fatalf("replay: %+v, %v; want the stored result %v", dup, err, result)
	}
	other := req
	other.Fingerprint = "raw-sha256:bb"
	if _, err := eng.Reserve(ctx, other); errType(err) != engine.TypePoison {
		t.Fatalf("another fingerprint: %v, want poison (a reused key)", err)
	}
	e.clock.Advance(2 * time.Minute) // past the request's TTL, far within ReceiptTTL
	again, err := eng.Reserve(ctx, other)
	if err != nil || again.Replayed || again.Result != nil {
		t.Fatalf("after the TTL: %+v, %v; want a new reservation", again, err)
	}
}
