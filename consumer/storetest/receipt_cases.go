package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/engine"
)

func callback(id string) engine.ReceiptRequest {
	return engine.ReceiptRequest{Route: "validation-finished", CallbackID: id,
		Payload: []byte(`{"run_id":"r1","callback_id":"` + id + `","status":"SUCCEEDED"}`), Fields: map[string]any{"runId": "r1"}}
}

func receipts(t *testing.T, e *env) {
	eng := e.engine()
	ctx := context.Background()
	rc, err := eng.Reserve(ctx, callback("cb-1"))
	if err != nil || rc.Replayed || rc.Status != engine.ReceiptProcessing {
		t.Fatalf("reserve: %+v, %v", rc, err)
	}
	if rc.Ops.Reads > 1 || rc.Ops.Writes > 1 {
		t.Errorf("reserve cost %+v, want <= 1 read + 1 write", rc.Ops)
	}
	received := rc.ReceivedAt
	e.clock.Advance(time.Second)
	dup, err := eng.Reserve(ctx, callback("cb-1"))
	if err != nil || !dup.Replayed || !dup.ReceivedAt.Equal(received) || dup.Status != engine.ReceiptProcessing {
		t.Fatalf("duplicate while processing: %+v, %v", dup, err)
	}
	if dup.Ops.Writes != 0 {
		t.Errorf("a replay wrote %d documents", dup.Ops.Writes)
	}
	if _, err := eng.Finish(ctx, dup, "SUCCEEDED"); errType(err) != engine.TypeConfiguration {
		t.Errorf("finishing a replayed receipt: %v, want a configuration error", err)
	}
	if _, err := eng.Finish(ctx, rc, "SUCCEEDED"); err != nil {
		t.Fatalf("finish: %v", err)
	}
	dup, err = eng.Reserve(ctx, callback("cb-1"))
	if err != nil || !dup.Replayed || !dup.ReceivedAt.Equal(received) || dup.Status != "SUCCEEDED" {
		t.Fatalf("replay after finish: %+v, %v; want the original received-at %v and status SUCCEEDED", dup, err, received)
	}
	// A failed processing releases the receipt: the retry processes.
	rc2, err := eng.Reserve(ctx, callback("cb-2"))
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Release(ctx, rc2); err != nil {
		t.Fatalf("release: %v", err)
	}
	if again, err := eng.Reserve(ctx, callback("cb-2")); err != nil || again.Replayed {
		t.Fatalf("reserve after release: %+v, %v; want a fresh reservation", again, err)
	}
	// A holder that crashed leaves "processing": taken over after LeaseDuration.
	rc3, err := eng.Reserve(ctx, callback("cb-3"))
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Minute)
	taken, err := eng.Reserve(ctx, callback("cb-3"))
	if err != nil || taken.Replayed || !taken.ReceivedAt.Equal(rc3.ReceivedAt) {
		t.Fatalf("reserve of a stuck receipt: %+v, %v; want a takeover keeping received-at", taken, err)
	}
	if _, err := eng.Finish(ctx, rc3, "SUCCEEDED"); errType(err) != engine.TypeStale {
		t.Errorf("finish by the crashed holder: %v, want stale (fenced)", err)
	}
}

func receiptsRace(t *testing.T, e *env) {
	eng := e.engine()
	var processed, replayed, failed countErrs
	var mu sync.Mutex
	var received []time.Time
	e.parallel(func(int) {
		rc, err := eng.Reserve(context.Background(), callback("cb-race"))
		switch {
		case err != nil:
			failed.add(err)
		case rc.Replayed:
			replayed.add(nil)
		default:
			processed.add(nil)
		}
		mu.Lock()
		received = append(received, rc.ReceivedAt)
		mu.Unlock()
	})
	if processed.n != 1 || replayed.n != e.n-1 {
		t.Fatalf("%d concurrent callbacks: %d processed, %d replayed, errors %v; want exactly one processed", e.n, processed.n, replayed.n, failed.errs)
	}
	for _, r := range received {
		if !r.Equal(received[0]) {
			t.Fatalf("replays disagree on received-at: %v", received)
		}
	}
}
