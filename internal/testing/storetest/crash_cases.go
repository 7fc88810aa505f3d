package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/store"
)

// errCrashed is what crashOnce's hook returns: a simulated crash.
var errCrashed = errors.New("simulated crash at failpoint")

// crashOnce returns a failpoint hook that returns errCrashed the first
// time fp is hit, so that a case crashes the first delivery only.
func crashOnce(fp engine.Failpoint) engine.FailpointHook {
	var fired atomic.Bool
	return func(_ context.Context, at engine.Failpoint) error {
		if at == fp && fired.CompareAndSwap(false, true) {
			return errCrashed
		}
		return nil
	}
}

// Worker is a side-effect worker for one event: claim a lease, apply the side
// effect (an insert-once document in coll, standing in for the TerminusDB
// apply), mark it done, hitting the four worker failpoints on the way. It
// returns the outcome of the side effect's write.
func Worker(ctx context.Context, eng *engine.Engine, coll string, ev engine.Event) (engine.Outcome, error) {
	l, err := eng.Claim(ctx, engine.Request{Scope: "terminus-apply", Event: &ev})
	if err != nil {
		return "", err
	}
	if l.Replayed {
		return engine.Duplicate, nil
	}
	if err := eng.Hit(ctx, engine.WorkerBeforeApply); err != nil {
		return "", err
	}
	r, err := eng.Materialize(ctx, ev, engine.Write{Collection: coll, Mode: engine.ModeCreate, Fields: map[string]any{"applied": true}})
	if err != nil {
		return "", err
	}
	if err := eng.Hit(ctx, engine.WorkerAfterApply); err != nil {
		return r.Outcome, err
	}
	_, err = eng.Settle(ctx, l, engine.Settlement{Status: engine.StatusCompleted})
	return r.Outcome, err
}

// Projection is a read-model projection for one event: materialise the latest
// state into coll, then hit the before-ack failpoint (the ack itself is the
// caller's), hitting the three projection failpoints on the way.
func Projection(ctx context.Context, eng *engine.Engine, coll string, ev engine.Event, w engine.Write) (engine.Outcome, error) {
	w.Collection = coll
	r, err := eng.Materialize(ctx, ev, w)
	if err != nil {
		return "", err
	}
	return r.Outcome, eng.Hit(ctx, engine.ProjectionBeforeAck)
}

func workerDeliver(ctx context.Context, eng *engine.Engine, coll string, ev engine.Event, applied *atomic.Int64) error {
	o, err := Worker(ctx, eng, coll, ev)
	if o == engine.Applied {
		applied.Add(1)
	}
	return err
}

func workerCrashes(t *testing.T, e *env) {
	for _, fp := range []engine.Failpoint{engine.WorkerAfterClaim, engine.WorkerBeforeApply, engine.WorkerAfterApply, engine.WorkerBeforeMarkDone} {
		t.Run(string(fp), func(t *testing.T) {
			eng := e.engine(func(c *engine.Config) { c.Failpoint = crashOnce(fp) })
			coll := e.collection("effects_" + string(fp[len("worker-"):]))
			ev := emailEvent("crash-" + string(fp))
			ctx := context.Background()
			var applied atomic.Int64
			if err := workerDeliver(ctx, eng, coll, ev, &applied); !errors.Is(err, errCrashed) {
				t.Fatalf("first delivery: %v, want a crash at %s", err, fp)
			}
			// Redeliver until done, as Pub/Sub would; the crashed holder's lease
			// must lapse before anyone takes over.
			var err error
			for i := 0; i < 3; i++ {
				err = workerDeliver(ctx, eng, coll, ev, &applied)
				if errType(err) != engine.TypeInProgress {
					break
				}
				e.clock.Advance(2 * time.Minute)
			}
			if err != nil {
				t.Fatalf("redelivery after crash at %s: %v", fp, err)
			}
			if o, err := Worker(ctx, eng, coll, ev); err != nil || o != engine.Duplicate {
				t.Errorf("delivery after completion: %s, %v; want duplicate", o, err)
			}
			if applied.Load() != 1 {
				t.Errorf("side effect applied %d times, want exactly 1", applied.Load())
			}
			if d := e.get(store.Key{Collection: coll, ID: "prod__e-crash-" + string(fp)}); d == nil {
				t.Errorf("effect document missing")
			}
		})
	}
}

func projectionCrashes(t *testing.T, e *env) {
	want := map[engine.Failpoint]engine.Outcome{
		engine.ProjectionBeforeWrite: engine.Applied,   // nothing was written before the crash
		engine.ProjectionAfterWrite:  engine.Duplicate, // written, then crashed before the ack
		engine.ProjectionBeforeAck:   engine.Duplicate,
	}
	for _, fp := range []engine.Failpoint{engine.ProjectionBeforeWrite, engine.ProjectionAfterWrite, engine.ProjectionBeforeAck} {
		t.Run(string(fp), func(t *testing.T) {
			eng := e.engine(func(c *engine.Config) { c.Failpoint = crashOnce(fp) })
			coll := e.collection(fmt.Sprintf("proj_%d", len(fp)))
			h := hb(7, "healthy")
			if _, err := Projection(context.Background(), eng, coll, h.event(), h.write(coll)); !errors.Is(err, errCrashed) {
				t.Fatalf("first delivery: %v, want a crash at %s", err, fp)
			}
			o, err := Projection(context.Background(), eng, coll, h.event(), h.write(coll))
			if err != nil || o != want[fp] {
				t.Fatalf("redelivery: %s, %v; want %s", o, err, want[fp])
			}
			if got := stateOf(t, e, coll, "strategy-engine")["status"]; got != "healthy" {
				t.Errorf("state = %v", got)
			}
		})
	}
}

// outage wraps a store: while down, every transaction runs and is then
// failed with UNAVAILABLE, so the driver must roll it back.
type outage struct {
	store.Store
	down atomic.Bool
}

func (o *outage) RunTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	return o.Store.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := fn(ctx, tx); err != nil {
			return err
		}
		if o.down.Load() {
			return &store.Error{Op: "commit", Code: "UNAVAILABLE", Kind: store.KindTransient, Err: errors.New("connection refused")}
		}
		return nil
	})
}

func storeOutage(t *testing.T, e *env) {
	o := &outage{Store: e.st}
	o.down.Store(true)
	e.st = o
	eng, coll := e.engine(), e.collection("ops_services")
	h := hb(1, "healthy")
	_, err := eng.Materialize(context.Background(), h.event(), h.write(coll))
	var ee *engine.Error
	if !errors.As(err, &ee) || ee.Type != engine.TypeTransient || ee.Code != "UNAVAILABLE" || !ee.Retryable() {
		t.Fatalf("during the outage: %v; want a retryable transient error with code UNAVAILABLE", err)
	}
	_, err = eng.Claim(context.Background(), emailReq(emailEvent("ev-out")))
	wantType(t, "claim during the outage", err, engine.TypeTransient)
	o.down.Store(false)
	if d := e.get(store.Key{Collection: coll, ID: "prod__strategy-engine"}); d != nil {
		t.Fatalf("the outage left a document behind: %+v", d)
	}
	if r := deliver(t, eng, coll, h); r.Outcome != engine.Applied {
		t.Fatalf("redelivery after the outage: %s, want applied", r.Outcome)
	}
	if _, err := eng.Claim(context.Background(), emailReq(emailEvent("ev-out"))); err != nil {
		t.Fatalf("claim after the outage: %v (the failed claim must not have been recorded)", err)
	}
}
