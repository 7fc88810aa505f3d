package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/store"
)

// emailReq is the lease request of the cases' side effect.
func emailReq() engine.LeaseRequest { return engine.LeaseRequest{Handler: "send-email"} }

func emailEvent(id string) engine.Event {
	return engine.Event{MessageID: "msg-" + id, EventID: id, Payload: []byte(`{"eventId":"` + id + `","to":"ops@example.com"}`)}
}

func wantType(t *testing.T, what string, err error, want engine.ErrorType) {
	t.Helper()
	if got := errType(err); got != want {
		t.Fatalf("%s: error %v (type %q), want type %q", what, err, got, want)
	}
}

func leaseLifecycle(t *testing.T, e *env) {
	eng := e.engine()
	ctx := context.Background()
	ev := emailEvent("ev-1")
	l, err := eng.Claim(ctx, ev, emailReq())
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if l.Token != 1 || l.Attempt != 1 || l.TookOver {
		t.Errorf("first claim: %+v", l)
	}
	_, err = eng.Claim(ctx, ev, emailReq())
	wantType(t, "claim of a live PENDING lease", err, engine.TypeInProgress)
	var ee *engine.Error
	if !errors.As(err, &ee) || !ee.Retryable() {
		t.Errorf("in-progress must be retryable: %v", err)
	}
	e.clock.Advance(40 * time.Second)
	l, err = eng.Heartbeat(ctx, l)
	if err != nil {
		t.Fatalf("heartbeat: %v", err)
	}
	e.clock.Advance(40 * time.Second) // past the original expiry, within the extended one
	_, err = eng.Claim(ctx, ev, emailReq())
	wantType(t, "claim after heartbeat extended the lease", err, engine.TypeInProgress)
	if _, err := eng.Complete(ctx, l, map[string]any{"providerId": "abc"}); err != nil {
		t.Fatalf("complete: %v", err)
	}
	_, err = eng.Claim(ctx, ev, emailReq())
	wantType(t, "claim of a COMPLETED lease", err, engine.TypeDuplicate)
	// Another handler of the same event has its own lease.
	if _, err := eng.Claim(ctx, ev, engine.LeaseRequest{Handler: "index-search"}); err != nil {
		t.Errorf("claim by another handler: %v", err)
	}
}

func leaseTakeoverAndFencing(t *testing.T, e *env) {
	eng := e.engine()
	ctx := context.Background()
	ev := emailEvent("ev-2")
	old, err := eng.Claim(ctx, ev, emailReq())
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	e.clock.Advance(2 * time.Minute) // the holder hung: its lease expired
	taker, err := eng.Claim(ctx, ev, emailReq())
	if err != nil {
		t.Fatalf("takeover claim: %v", err)
	}
	if !taker.TookOver || taker.Token != old.Token+1 || taker.Attempt != 2 {
		t.Errorf("takeover: %+v, want TookOver, token %d, attempt 2", taker, old.Token+1)
	}
	_, err = eng.Heartbeat(ctx, old)
	wantType(t, "heartbeat by the fenced holder", err, engine.TypeStale)
	_, err = eng.Complete(ctx, old, nil)
	wantType(t, "complete by the fenced holder", err, engine.TypeStale)
	var ee *engine.Error
	if errors.As(err, &ee) && ee.Code != "FENCED" {
		t.Errorf("fenced error code = %q, want FENCED", ee.Code)
	}
	if _, err := eng.Fail(ctx, old, ev, errors.New("late failure")); errType(err) != engine.TypeStale {
		t.Errorf("fail by the fenced holder: %v, want stale", err)
	}
	if _, err := eng.Complete(ctx, taker, nil); err != nil {
		t.Fatalf("complete by the new holder: %v", err)
	}
}

func leaseRetryThenPoison(t *testing.T, e *env) {
	eng := e.engine() // MaxAttempts 3
	ctx := context.Background()
	ev := emailEvent("ev-3")
	for attempt := int64(1); attempt <= 3; attempt++ {
		l, err := eng.Claim(ctx, ev, emailReq())
		if err != nil {
			t.Fatalf("claim %d: %v", attempt, err)
		}
		if l.Attempt != attempt {
			t.Errorf("attempt = %d, want %d", l.Attempt, attempt)
		}
		poison, err := eng.Fail(ctx, l, ev, errors.New("smtp 451 try later"))
		if err != nil {
			t.Fatalf("fail %d: %v", attempt, err)
		}
		if poison != (attempt == 3) {
			t.Errorf("attempt %d: poison = %v", attempt, poison)
		}
	}
	_, err := eng.Claim(ctx, ev, emailReq())
	wantType(t, "claim after MaxAttempts failures", err, engine.TypePoison)
	coll, id, _ := strings.Cut(eng.PoisonDoc(ev), "/")
	rec := e.get(store.Key{Collection: coll, ID: id})
	if rec == nil {
		t.Fatal("no poison audit record")
	}
	if rec.Fields["reason"] != "smtp 451 try later" || rec.Fields["attempts"] != int64(3) || rec.Fields["handler"] != "send-email" {
		t.Errorf("poison record = %+v", rec.Fields)
	}
}

func leaseAggregateSequence(t *testing.T, e *env) {
	eng := e.engine()
	ctx := context.Background()
	req := func(seq int64) engine.LeaseRequest {
		return engine.LeaseRequest{Handler: "apply-terminus", Aggregate: "Instance/42", Sequence: &seq}
	}
	l, err := eng.Claim(ctx, emailEvent("s5"), req(5))
	if err != nil {
		t.Fatalf("claim seq 5: %v", err)
	}
	if _, err := eng.Complete(ctx, l, nil); err != nil {
		t.Fatalf("complete: %v", err)
	}
	_, err = eng.Claim(ctx, emailEvent("s5"), req(5))
	wantType(t, "redelivery of the completed event", err, engine.TypeDuplicate)
	for _, seq := range []int64{3, 5} {
		_, err := eng.Claim(ctx, emailEvent("other"), req(seq))
		wantType(t, "claim at or below the last sequence", err, engine.TypeStale)
	}
	if _, err := eng.Claim(ctx, emailEvent("s6"), req(6)); err != nil {
		t.Errorf("claim seq 6: %v", err)
	}
}

func concurrentClaims(t *testing.T, e *env) {
	eng := e.engine()
	ev := emailEvent("ev-race")
	var won, busy, failed countErrs
	e.parallel(func(int) {
		_, err := eng.Claim(context.Background(), ev, emailReq())
		switch errType(err) {
		case "":
			won.add(nil)
		case engine.TypeInProgress:
			busy.add(nil)
		default:
			failed.add(err)
		}
	})
	if won.n != 1 || busy.n != e.n-1 {
		t.Fatalf("%d concurrent claims: %d acquired, %d in progress, errors %v; want exactly one claim", e.n, won.n, busy.n, failed.errs)
	}
}
