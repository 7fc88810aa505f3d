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

// emailReq is the reservation request of the cases' side effect for ev.
func emailReq(ev engine.Event) engine.Request {
	return engine.Request{Scope: "send-email", Event: &ev}
}

func emailEvent(id string) engine.Event {
	return engine.Event{MessageID: "msg-" + id, EventID: id, Payload: []byte(`{"eventId":"` + id + `","to":"ops@example.com"}`)}
}

// completed is a settlement that completes with result.
func completed(result map[string]any) engine.Settlement {
	return engine.Settlement{Status: engine.StatusCompleted, Result: result}
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
	l, err := eng.Claim(ctx, emailReq(ev))
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	if l.Token != 1 || l.Attempt != 1 || l.TookOver || l.Replayed || l.Status != engine.StatusPending {
		t.Errorf("first claim: %+v", l)
	}
	held, err := eng.Claim(ctx, emailReq(ev))
	wantType(t, "claim of a live pending reservation", err, engine.TypeInProgress)
	var ee *engine.Error
	if !errors.As(err, &ee) || !ee.Retryable() {
		t.Errorf("in-progress must be retryable: %v", err)
	}
	if !held.HeldUntil.Equal(l.Until) || held.Attempt != 1 {
		t.Errorf("in-progress claim: held until %v, attempt %d; want %v, 1", held.HeldUntil, held.Attempt, l.Until)
	}
	e.clock.Advance(40 * time.Second)
	l, err = eng.Extend(ctx, l)
	if err != nil {
		t.Fatalf("extend: %v", err)
	}
	e.clock.Advance(40 * time.Second) // past the original expiry, within the extended one
	_, err = eng.Claim(ctx, emailReq(ev))
	wantType(t, "claim after Extend", err, engine.TypeInProgress)
	if _, err := eng.Settle(ctx, l, completed(map[string]any{"providerId": "abc"})); err != nil {
		t.Fatalf("settle: %v", err)
	}
	again, err := eng.Claim(ctx, emailReq(ev))
	if err != nil || !again.Replayed || again.Status != engine.StatusCompleted || again.Result["providerId"] != "abc" {
		t.Fatalf("claim of a completed reservation: %+v, %v; want it replayed with its result", again, err)
	}
	if again.Ops.Writes != 0 || again.Ops.Reads != 1 {
		t.Errorf("a replay cost %+v, want one read", again.Ops)
	}
	// Another scope (route) of the same event has its own reservation.
	other := emailReq(ev)
	other.Scope = "index-search"
	if _, err := eng.Claim(ctx, other); err != nil {
		t.Errorf("claim by another scope: %v", err)
	}
}

func leaseTakeoverAndFencing(t *testing.T, e *env) {
	eng := e.engine()
	ctx := context.Background()
	ev := emailEvent("ev-2")
	old, err := eng.Claim(ctx, emailReq(ev))
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	e.clock.Advance(2 * time.Minute) // the holder hung: its claim lapsed
	taker, err := eng.Claim(ctx, emailReq(ev))
	if err != nil {
		t.Fatalf("takeover claim: %v", err)
	}
	if !taker.TookOver || taker.Token != old.Token+1 || taker.Attempt != 2 || !taker.PreviousInDoubt {
		t.Errorf("takeover: %+v, want TookOver, token %d, attempt 2, the previous attempt in doubt", taker, old.Token+1)
	}
	_, err = eng.Extend(ctx, old)
	wantType(t, "extend by the fenced holder", err, engine.TypeStale)
	_, err = eng.Settle(ctx, old, completed(nil))
	wantType(t, "settle by the fenced holder", err, engine.TypeStale)
	var ee *engine.Error
	if errors.As(err, &ee) && ee.Code != "FENCED" {
		t.Errorf("fenced error code = %q, want FENCED", ee.Code)
	}
	if _, err := eng.Release(ctx, old, errors.New("late failure"), false); errType(err) != engine.TypeStale {
		t.Errorf("release by the fenced holder: %v, want stale", err)
	}
	if _, err := eng.Settle(ctx, taker, completed(nil)); err != nil {
		t.Fatalf("settle by the new holder: %v", err)
	}
	if _, err := eng.Release(ctx, taker, errors.New("after settling"), false); errType(err) != engine.TypeStale {
		t.Errorf("release after settling: %v, want stale (a settled reservation stays settled)", err)
	}
}

func leaseRetryThenPoison(t *testing.T, e *env) {
	eng := e.engine() // MaxAttempts 3
	ctx := context.Background()
	ev := emailEvent("ev-3")
	for attempt := int64(1); attempt <= 3; attempt++ {
		l, err := eng.Claim(ctx, emailReq(ev))
		if err != nil {
			t.Fatalf("claim %d: %v", attempt, err)
		}
		if l.Attempt != attempt || l.PreviousInDoubt != (attempt == 3) {
			t.Errorf("attempt = %d, previous in doubt %v; want %d, %v", l.Attempt, l.PreviousInDoubt, attempt, attempt == 3)
		}
		// The second attempt's call ends in doubt (it timed out): the third is told.
		exhausted, err := eng.Release(ctx, l, errors.New("smtp 451 try later"), attempt == 2)
		if err != nil {
			t.Fatalf("release %d: %v", attempt, err)
		}
		if exhausted != (attempt == 3) {
			t.Errorf("attempt %d: exhausted = %v", attempt, exhausted)
		}
	}
	_, err := eng.Claim(ctx, emailReq(ev))
	wantType(t, "claim after MaxAttempts releases", err, engine.TypePoison)
	coll, id, _ := strings.Cut(eng.PoisonDoc(ev), "/")
	rec := e.get(store.Key{Collection: coll, ID: id})
	if rec == nil {
		t.Fatal("no poison audit record")
	}
	if rec.Fields["reason"] != "smtp 451 try later" || rec.Fields["attempts"] != int64(3) || rec.Fields["handler"] != "send-email" {
		t.Errorf("poison record = %+v", rec.Fields)
	}
	// A request's own bound: one attempt.
	one := emailReq(emailEvent("ev-3b"))
	one.MaxAttempts = 1
	l, err := eng.Claim(ctx, one)
	if err != nil {
		t.Fatal(err)
	}
	if exhausted, err := eng.Release(ctx, l, errors.New("refused"), false); err != nil || !exhausted {
		t.Errorf("release of the only attempt: exhausted %v, %v; want exhausted", exhausted, err)
	}
}

// rejectedIsRemembered: a reservation settled as rejected (a handler's
// final refusal) replays its result to every later claim, for an event
// and for an id: nothing is called again.
func rejectedIsRemembered(t *testing.T, e *env) {
	eng := e.engine()
	ctx := context.Background()
	for _, req := range []engine.Request{emailReq(emailEvent("ev-422")), callback("cb-422")} {
		l, err := eng.Claim(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		refusal := map[string]any{"status": int64(422), "body": "bm8="}
		if _, err := eng.Settle(ctx, l, engine.Settlement{Status: engine.StatusRejected, Result: refusal}); err != nil {
			t.Fatalf("settle rejected: %v", err)
		}
		for range 3 {
			r, err := eng.Claim(ctx, req)
			if err != nil || !r.Replayed || r.Status != engine.StatusRejected || r.Result["status"] != int64(422) {
				t.Fatalf("claim after a rejection: %+v, %v; want the rejection replayed", r, err)
			}
		}
		d := e.get(store.Key{Collection: strings.Split(l.Doc, "/")[0], ID: strings.SplitN(l.Doc, "/", 2)[1]})
		if d == nil || d.Fields["status"] != engine.StatusRejected {
			t.Fatalf("record %s: %+v; want status %q", l.Doc, d, engine.StatusRejected)
		}
	}
}

// oneStatusVocabulary: every record a reservation writes says its state
// in one vocabulary, whatever the kind of request; and records written
// before it (leases' PENDING, COMPLETED, FAILED; receipts' processing,
// released, and a callback's own status) are read in it.
func oneStatusVocabulary(t *testing.T, e *env) {
	eng := e.engine()
	ctx := context.Background()
	valid := map[any]bool{engine.StatusPending: true, engine.StatusReleased: true, engine.StatusCompleted: true, engine.StatusRejected: true}
	check := func(doc string) {
		t.Helper()
		coll, id, _ := strings.Cut(doc, "/")
		d := e.get(store.Key{Collection: coll, ID: id})
		if d == nil || !valid[d.Fields["status"]] {
			t.Errorf("%s: status %v, not one of pending, released, completed, rejected", doc, d)
		}
	}
	for _, req := range []engine.Request{emailReq(emailEvent("ev-voc")), callback("cb-voc")} {
		l, err := eng.Claim(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		check(l.Doc)
		if _, err := eng.Release(ctx, l, errors.New("x"), false); err != nil {
			t.Fatal(err)
		}
		check(l.Doc)
		if l, err = eng.Claim(ctx, req); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Settle(ctx, l, completed(nil)); err != nil {
			t.Fatal(err)
		}
		check(l.Doc)
	}
	// Records of the release before: a lease FAILED twice, a receipt a
	// callback finished with its own status.
	_, leases, receipts, _ := eng.Collections()
	now := e.clock.Now()
	failed := store.Key{Collection: leases, ID: "prod__send-email__e-ev-old"}
	finished := store.Key{Collection: receipts, ID: "prod__validation-finished__cb-old"}
	pending := store.Key{Collection: receipts, ID: "prod__validation-finished__cb-old-busy"}
	e.put(failed, map[string]any{"status": "FAILED", "token": int64(2), "attempts": int64(2), "eventKey": "e-ev-old"}, now.Add(time.Hour))
	e.put(finished, map[string]any{"status": "SUCCEEDED", "token": int64(1), "receivedAt": now.Add(-time.Hour)}, now.Add(time.Hour))
	e.put(pending, map[string]any{"status": "processing", "token": int64(1), "reservedAt": now}, now.Add(time.Hour))
	l, err := eng.Claim(ctx, emailReq(emailEvent("ev-old")))
	if err != nil || l.Attempt != 3 || l.Token != 3 {
		t.Errorf("claim over a FAILED lease: %+v, %v; want attempt 3, token 3", l, err)
	}
	if r, err := eng.Claim(ctx, callback("cb-old")); err != nil || !r.Replayed || r.Status != engine.StatusCompleted {
		t.Errorf("claim over a receipt finished SUCCEEDED: %+v, %v; want a completed replay", r, err)
	}
	if r, err := eng.Claim(ctx, callback("cb-old-busy")); errType(err) != engine.TypeInProgress || !r.HeldUntil.Equal(now.Add(time.Minute)) {
		t.Errorf("claim over a processing receipt: %+v, %v; want in_progress until its reservedAt plus the lease", r, err)
	}
}

// lengthPerRequest: one engine holds each claim for its request's own
// length, and Extend adds that length again.
func lengthPerRequest(t *testing.T, e *env) {
	eng := e.engine() // LeaseDuration 1 minute
	ctx := context.Background()
	short, long := emailReq(emailEvent("ev-short")), emailReq(emailEvent("ev-long"))
	short.Lease, long.Lease = 5*time.Second, 10*time.Minute
	s, err := eng.Claim(ctx, short)
	if err != nil {
		t.Fatal(err)
	}
	l, err := eng.Claim(ctx, long)
	if err != nil {
		t.Fatal(err)
	}
	if now := e.clock.Now(); !s.Until.Equal(now.Add(5*time.Second)) || !l.Until.Equal(now.Add(10*time.Minute)) {
		t.Errorf("held until %v and %v, want 5 s and 10 min from %v", s.Until, l.Until, now)
	}
	e.clock.Advance(4 * time.Second)
	if s, err = eng.Extend(ctx, s); err != nil || !s.Until.Equal(e.clock.Now().Add(5*time.Second)) {
		t.Errorf("extend the short claim: %+v, %v; want 5 s more", s, err)
	}
	e.clock.Advance(6 * time.Second)
	if r, err := eng.Claim(ctx, short); err != nil || !r.TookOver {
		t.Errorf("claim after the short claim lapsed: %+v, %v; want a takeover", r, err)
	}
	if _, err := eng.Claim(ctx, long); errType(err) != engine.TypeInProgress {
		t.Errorf("claim while the long claim holds: %v, want in_progress", err)
	}
	bad := emailReq(emailEvent("ev-bad"))
	bad.Lease = 30 * 24 * time.Hour // beyond the record's TTL
	if _, err := eng.Claim(ctx, bad); errType(err) != engine.TypeConfiguration {
		t.Errorf("a length beyond the record's TTL: %v, want a configuration error", err)
	}
}

// leaseAggregateSequence: the ordering guard of an aggregate's handler
// calls is the one of latest-state documents (engine.Ordering): inside
// the window an event at or below the last completed sequence is stale;
// a sequence far ahead (math.MaxInt64) holds the aggregate only for the
// window, whatever it carries.
func leaseAggregateSequence(t *testing.T, e *env) {
	eng := e.engine()
	ctx := context.Background()
	req := func(id string, seq int64, published time.Time) engine.Request {
		ev := emailEvent(id)
		ev.PublishTime = published
		r := emailReq(ev)
		r.Scope, r.Aggregate, r.Sequence = "apply-terminus", "Instance/42", &seq
		return r
	}
	now := e.clock.Now()
	settle := func(r engine.Request) {
		t.Helper()
		l, err := eng.Claim(ctx, r)
		if err != nil {
			t.Fatalf("claim %d: %v", *r.Sequence, err)
		}
		if _, err := eng.Settle(ctx, l, completed(nil)); err != nil {
			t.Fatalf("settle: %v", err)
		}
	}
	settle(req("s5", 5, now))
	if r, err := eng.Claim(ctx, req("s5", 5, now)); err != nil || !r.Replayed {
		t.Fatalf("redelivery of the completed event: %+v, %v; want replayed", r, err)
	}
	for _, seq := range []int64{3, 5} {
		_, err := eng.Claim(ctx, req("other", seq, now))
		wantType(t, "claim at or below the last sequence", err, engine.TypeStale)
	}
	settle(req("s6", 6, now))
	// A bogus sequence completes; inside the window it holds the
	// aggregate, beyond it it does not.
	settle(req("max", seqLimit(e.h.NoFullInt64 == ""), now.Add(time.Second)))
	_, err := eng.Claim(ctx, req("s7", 7, now.Add(time.Minute)))
	wantType(t, "sequence 7 a minute after a bogus maximum", err, engine.TypeStale)
	for i, later := range []time.Duration{engine.DefaultMaxEventSkew + 2*time.Second, 24 * time.Hour, 330 * 24 * time.Hour} {
		e.clock.Advance(later - (e.clock.Now().Sub(now)))
		if _, err := eng.Claim(ctx, req(string(rune('a'+i)), int64(8+i), e.clock.Now())); err != nil {
			t.Errorf("sequence %d %s after a bogus maximum: %v, want a claim (no pin beyond the window)", 8+i, later, err)
		}
	}
}

func concurrentClaims(t *testing.T, e *env) {
	eng := e.engine()
	ev := emailEvent("ev-race")
	var won, busy, failed countErrs
	e.parallel(func(int) {
		_, err := eng.Claim(context.Background(), emailReq(ev))
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

// concurrentReplays: concurrent claims of a settled reservation all
// replay it, on every store (issue 34: PostgreSQL answered in_progress to
// 37-48% of 8 concurrent replays of a completed key), for an event and an
// id, whether it was completed or rejected.
func concurrentReplays(t *testing.T, e *env) {
	eng := e.engine()
	ctx := context.Background()
	for i, req := range []engine.Request{emailReq(emailEvent("ev-replays")), callback("cb-replays")} {
		l, err := eng.Claim(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		status := []string{engine.StatusCompleted, engine.StatusRejected}[i]
		if _, err := eng.Settle(ctx, l, engine.Settlement{Status: status, Result: map[string]any{"n": int64(i)}}); err != nil {
			t.Fatal(err)
		}
		for round := range 4 {
			var replayed, other countErrs
			e.parallel(func(int) {
				r, err := eng.Claim(ctx, req)
				if err == nil && r.Replayed && r.Status == status && r.Result["n"] == int64(i) {
					replayed.add(nil)
					return
				}
				if err == nil {
					err = errors.New("claimed again: " + r.Status)
				}
				other.add(err)
			})
			if replayed.n != e.n {
				t.Fatalf("round %d: %d concurrent claims of a %s reservation: %d replayed; the others: %v", round, e.n, status, replayed.n, other.errs)
			}
		}
	}
}
