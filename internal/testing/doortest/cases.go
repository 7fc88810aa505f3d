package doortest

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/store"
)

// testCase is one case of the suite, run through every door.
type testCase struct {
	name string
	run  func(t *testing.T, w *world)
}

var cases = []testCase{
	{name: "OneCallPerKey", run: oneCallPerKey},
	{name: "ConcurrentReplays", run: concurrentReplays},
	{name: "Convergence", run: convergence},
	{name: "NoPinBeyondTheWindow", run: noPinBeyondTheWindow},
	{name: "RecoveryAfterSIGKILL", run: recoveryAfterKill},
	{name: "RecoveryAfterSIGTERM", run: recoveryAfterTerm},
}

// copies is how many copies of one key's delivery go at once: up to
// three, or one on a store without isolation (concurrent claims of one
// key need it; the npm Firestore emulator has none).
func (w *world) copies(r *rand.Rand) int {
	if w.h.NoIsolation != "" {
		return 1
	}
	return 1 + r.IntN(3)
}

// behaviors a handler's call of a key may have, weighted as generators
// pick them: mostly answers, some retryable, some refusals, some calls
// without an answer.
var (
	finals    = []behavior{{"answer", 200}, {"answer", 201}, {"answer", 204}, {"answer", 422}, {"answer", 400}, {"answer", 302}, {"slow", 0}}
	retryable = []behavior{{"answer", 500}, {"answer", 503}, {"answer", 408}, {"answer", 425}, {"answer", 429}, {"drop", 0}, {"hang", 0}}
)

// genScript is a key's script: up to three calls that allow another,
// then a final one. Without isolation (long: false) no call outlives a
// heartbeat: a heartbeat and the answer's settling would overwrite each
// other (lost updates the npm emulator allows, and every real store
// prevents).
func genScript(r *rand.Rand, long bool) []behavior {
	var s []behavior
	pick := func(bs []behavior) behavior {
		for {
			b := bs[r.IntN(len(bs))]
			if long || (b.kind != "slow" && b.kind != "hang") {
				return b
			}
		}
	}
	for range r.IntN(4) {
		b := pick(retryable)
		if b.kind == "hang" && r.IntN(3) > 0 {
			b = behavior{"answer", 503} // hangs cost a bound each: fewer
		}
		s = append(s, b)
	}
	return append(s, pick(finals))
}

// settle delivers key's event (or callback, or request) through the
// world's door until it settles: every attempt sends up to three copies
// at once (redeliveries; republished copies with new message ids on
// Pub/Sub doors), as Pub/Sub and retrying clients do. It returns the
// final replies (the attempt that settled it).
func (w *world) settle(t *testing.T, c *consumer, r *rand.Rand, key string, d delivery) []reply {
	t.Helper()
	deadline := time.Now().Add(settleWithin)
	copyN := 0
	for {
		n := w.copies(r)
		if w.door.pull && w.h.NoIsolation != "" {
			if _, published := w.acked(key); published > 0 {
				n = 0 // the fake delivers those again: one more would be claimed at once with them
			}
		}
		replies := make([]reply, n)
		fns := make([]func(), n)
		for i := range n {
			di := d
			di.key, di.msgID, di.publish = key, msgID(key, 0), w.clock.Now()
			if r.IntN(2) == 0 {
				copyN++
				di.msgID = msgID(key, copyN) // a republished copy
			}
			fns[i] = func() { replies[i] = w.door.send(w, c, di) }
		}
		pool(fns...)
		if w.door.pull {
			if w.waitAcked(t, key, deadline) {
				return nil
			}
		} else if slices.ContainsFunc(replies, func(r reply) bool { return r.final(w.door) }) {
			return replies
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not settle within %v: last replies %+v%s", key, settleWithin, replies, w.messages(key))
		}
		time.Sleep(20 * time.Millisecond) // a client's retry interval
	}
}

// waitAcked waits until every message of key is acked, or the deadline.
func (w *world) waitAcked(t *testing.T, key string, deadline time.Time) bool {
	t.Helper()
	for time.Now().Before(deadline) {
		if all, _ := w.acked(key); all {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// checkCalls holds key's handler calls to its script: the calls its
// answers allow, exactly (extra more, named in docs/handlers.md), never
// two at once, each with the key's one Idempotency-Key and the next
// attempt number.
func (w *world) checkCalls(t *testing.T, key string, script []behavior, extra int) {
	t.Helper()
	calls, overlaps, effects := w.handler.stats(key)
	want := slices.IndexFunc(script, behavior.final) + 1
	if len(calls) < want || len(calls) > want+extra {
		t.Errorf("%s (script %v): %d handler calls, want %d (+%d named)", key, script, len(calls), want, extra)
	}
	if overlaps > 0 {
		t.Errorf("%s (script %v): %d calls started while another was in flight, want none", key, script, overlaps)
	}
	last := 0
	for i, c := range calls {
		// The attempt counts claims: one that died before its call counts.
		attempt, _ := strconv.Atoi(c.attempt)
		if c.key == "" || c.key != calls[0].key || attempt <= last {
			t.Errorf("%s: call %d carried Idempotency-Key %q and attempt %q; want the first call's %q and an attempt above %d", key, i+1, c.key, c.attempt, calls[0].key, last)
		}
		last = attempt
	}
	doneEffects := 0
	for _, b := range script[:min(len(calls), len(script))] {
		if b.kind == "drop" {
			doneEffects++ // the work was done, and the call is made again
		}
	}
	if last := script[want-1]; last.done() {
		doneEffects++
	}
	if effects > doneEffects+extra {
		t.Errorf("%s (script %v): the handler's work was done %d times, want %d (+%d named)", key, script, effects, doneEffects, extra)
	}
}

// oneCallPerKey: generated histories of keys, delivered concurrently with
// redeliveries and republished copies, against a handler that answers
// each call as its script says: every key settles as its first final
// answer says, after exactly the calls its answers allow, never two at
// once (issue 34: a handler slower than its timeout, or one that dropped
// its connection, was called twice, at once; a 422 on a delivery was
// called five times).
func oneCallPerKey(t *testing.T, w *world) {
	c := w.start("")
	for seed := range uint64(*seeds) {
		r := rand.New(rand.NewPCG(seed, uint64(len(w.door.Name))))
		const keys = 6
		scripts := map[string][]behavior{}
		var fns []func()
		var mu sync.Mutex
		finalReplies := map[string][]reply{}
		for k := range keys {
			key := fmt.Sprintf("s%d-k%d", seed, k)
			scripts[key] = genScript(r, w.h.NoIsolation == "")
			w.handler.script(key, scripts[key])
			kr := rand.New(rand.NewPCG(seed, uint64(k)))
			fns = append(fns, func() {
				rs := w.settle(t, c, kr, key, delivery{kind: "order"})
				mu.Lock()
				finalReplies[key] = rs
				mu.Unlock()
			})
		}
		pool(fns...)
		for key, script := range scripts {
			w.checkCalls(t, key, script, 0)
			final := script[slices.IndexFunc(script, behavior.final)]
			for _, rp := range finalReplies[key] {
				if !rp.final(w.door) {
					continue
				}
				switch {
				case w.door.Name == "push" && final.done() && rp.outcome != "applied" && rp.outcome != "duplicate":
					t.Errorf("%s (script %v): acked as %q, want applied or duplicate", key, script, rp.outcome)
				case w.door.Name == "push" && !final.done() && rp.outcome != "poison":
					t.Errorf("%s (script %v): acked as %q, want poison (refused for good)", key, script, rp.outcome)
				case w.door.Name != "push" && final.kind == "answer" && final.status/100 != 3 && rp.status != final.status:
					t.Errorf("%s (script %v): answered %d, want the handler's %d", key, script, rp.status, final.status)
				}
			}
		}
	}
}

// concurrentReplays: once a key settled, concurrent deliveries of it all
// get its settled answer, and the handler is not called again, on every
// store (issue 34: 8 concurrent replays of a completed key got 409 from a
// PostgreSQL store 37-48% of the time).
func concurrentReplays(t *testing.T, w *world) {
	c := w.start("")
	r := rand.New(rand.NewPCG(7, 7))
	for i, script := range [][]behavior{{{"answer", 201}}, {{"answer", 422}}} {
		key := fmt.Sprintf("replay%d", i)
		w.handler.script(key, script)
		w.settle(t, c, r, key, delivery{kind: "order"})
		var first reply
		for round := range 3 {
			replies := make([]reply, 8)
			fns := make([]func(), len(replies))
			for j := range replies {
				d := delivery{key: key, kind: "order", msgID: msgID(key, 100+round*10+j), publish: w.clock.Now()}
				fns[j] = func() { replies[j] = w.door.send(w, c, d) }
			}
			pool(fns...)
			if w.door.pull {
				if !w.waitAcked(t, key, time.Now().Add(settleWithin)) {
					t.Fatalf("%s: replays not acked", key)
				}
				continue
			}
			for j, rp := range replies {
				if first.status == 0 {
					first = rp
				}
				if !rp.final(w.door) || rp.status != first.status || (w.door.Name == "gateway" && !bytes.Equal(rp.body, first.body)) {
					t.Errorf("%s round %d: replay %d answered %d %q (%v), want %d %q like the others", key, round, j, rp.status, rp.body, rp.err, first.status, first.body)
				}
			}
		}
		w.checkCalls(t, key, script, 0)
	}
}

// stateEvent is a latest-state event of the convergence case.
type stateEvent struct {
	name    string
	at      time.Time
	seq     *int64
	publish time.Time
	copyOf  string // a republished copy of this event (same payload)
}

// convergence: an aggregate's events published within one window, with
// republished copies (new message id, later publish time, the same
// payload) and redeliveries, one of them dated an hour ahead, delivered
// in a random order with random concurrency, end with the same state:
// the newest event by (sequence, event time) (engine.Ordering). First,
// issue 34's case by name: B dated an hour ahead, A published 10 s after
// B with an event time between B's publish times, and B republished 64 s
// after its first publish; when an event time beyond the window stood in
// for each copy's publish time, two of the six orders ended as A.
func convergence(t *testing.T, w *world) {
	if !w.door.ordered {
		t.Skip("the door takes no Pub/Sub events: nothing orders its effects (callbacks merge, keys are final)")
	}
	c := w.start("")
	base := w.clock.Now().Add(-2 * time.Minute)
	for i, order := range [][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}} {
		agg := fmt.Sprintf("issue34-%d", i)
		b := stateEvent{name: agg + "-B", at: base.Add(time.Hour), publish: base}
		a := stateEvent{name: agg + "-A", at: base.Add(30 * time.Second), publish: base.Add(10 * time.Second)}
		again := b
		again.copyOf, again.publish = b.name, base.Add(64*time.Second)
		events := []stateEvent{a, b, again}
		sends := []stateEvent{events[order[0]], events[order[1]], events[order[2]]}
		w.deliverStates(t, c, nil, agg, sends)
		if got := w.state(t, agg); got != b.name {
			t.Errorf("A, B and B republished, in the order %v: %s ends as %v, want B", names(sends), agg, got)
		}
	}
	for seed := range uint64(4 * *seeds) {
		r := rand.New(rand.NewPCG(seed, 99))
		agg := fmt.Sprintf("agg%d", seed)
		base := w.clock.Now().Add(-10 * time.Second)
		seqs := r.IntN(2) == 0
		var events []stateEvent
		for i := range 3 + r.IntN(2) {
			e := stateEvent{name: fmt.Sprintf("%s-e%d", agg, i), at: base.Add(time.Duration(r.IntN(20000)) * time.Millisecond),
				publish: base.Add(time.Duration(i) * time.Second)}
			if seqs {
				s := int64(10 + i*3 + r.IntN(2))
				e.seq = &s
			}
			events = append(events, e)
		}
		// One event dated an hour ahead (a producer's clock far off).
		far := &events[r.IntN(len(events))]
		far.at = base.Add(time.Hour)
		var sends []stateEvent
		for _, e := range events {
			sends = append(sends, e)
			for range r.IntN(3) {
				cp := e
				cp.copyOf, cp.publish = e.name, e.publish.Add(time.Duration(1+r.IntN(60))*time.Second)
				sends = append(sends, cp)
			}
		}
		want := slices.MaxFunc(events, func(a, b stateEvent) int {
			if a.seq != nil && *a.seq != *b.seq {
				return int(*a.seq - *b.seq)
			}
			return a.at.Compare(b.at)
		})
		r.Shuffle(len(sends), func(i, j int) { sends[i], sends[j] = sends[j], sends[i] })
		w.deliverStates(t, c, r, agg, sends)
		if got := w.state(t, agg); got != want.name {
			t.Errorf("seed %d: %s ends as %v, want %s (the newest by sequence, then event time): events %+v, delivered %v",
				seed, agg, got, want.name, events, names(sends))
		}
	}
}

// deliverStates delivers sends (state events of aggregate agg) in their
// order until each is acked, in batches delivered at once as r picks them
// (one at a time without r, or without isolation).
func (w *world) deliverStates(t *testing.T, c *consumer, r *rand.Rand, agg string, sends []stateEvent) {
	t.Helper()
	var fns []func()
	for i, e := range sends {
		fields := map[string]any{"aggregate": agg, "name": e.name, "at": e.at.Format(time.RFC3339Nano)}
		if e.seq != nil {
			fields["seq"] = *e.seq
		}
		d := delivery{key: e.name, kind: "state", msgID: fmt.Sprintf("%s-%d", e.name, i), publish: e.publish, fields: fields}
		if e.copyOf != "" {
			d.key = e.copyOf
		}
		fns = append(fns, func() {
			deadline := time.Now().Add(settleWithin)
			for !w.door.send(w, c, d).final(w.door) && !w.door.pull && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if w.door.pull && !w.waitAcked(t, d.key, deadline) {
				t.Errorf("%s not acked", d.key)
			}
		})
		if r == nil || r.IntN(3) == 0 || i == len(sends)-1 || w.h.NoIsolation != "" {
			pool(fns...) // a batch delivered at once
			fns = nil
		}
	}
}

func names(es []stateEvent) []string {
	var out []string
	for _, e := range es {
		n := e.name
		if e.copyOf != "" {
			n += "(copy)"
		}
		out = append(out, n)
	}
	return out
}

// state reads the "from" field of aggregate agg's state document.
func (w *world) state(t *testing.T, agg string) any {
	t.Helper()
	var from any
	err := w.h.Store.RunTx(t.Context(), func(ctx context.Context, tx store.Tx) error {
		d, err := tx.Get(ctx, store.Key{Collection: "states", ID: w.env + "__" + strings.ToLower(agg)})
		if err == nil {
			from = d.Fields["from"]
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return from
}

// noPinBeyondTheWindow: one message carrying the largest sequence, on a
// handler route with the aggregate's ordering guard and on a latest-state
// route, holds its aggregate only for the window: an update published
// more than the window after it calls the handler (is applied) — a
// minute, a day and eleven months later (issue 34: sequence 9223372036854775807
// made every later event of its aggregate stale_ignored, for good).
func noPinBeyondTheWindow(t *testing.T, w *world) {
	if !w.door.ordered {
		t.Skip("the door takes no Pub/Sub events: it has no ordering guard")
	}
	c := w.start("")
	r := rand.New(rand.NewPCG(3, 3))
	hostile := func(kind, key string, fields map[string]any) {
		w.handler.script(key, []behavior{{"answer", 200}})
		w.settle(t, c, r, key, delivery{kind: kind, fields: fields})
	}
	maxSeq := int64(math.MaxInt64)
	if w.h.NoFullInt64 != "" {
		maxSeq = 1<<53 - 1 // the largest this store keeps
	}
	hostile("guarded", "pin-max", map[string]any{"orderId": "o1", "seq": maxSeq})
	hostile("state", "pin-state", map[string]any{"aggregate": "p1", "name": "pin-state", "seq": maxSeq,
		"at": "9999-12-31T00:00:00Z"})
	w.handler.script("within", []behavior{{"answer", 200}})
	w.clock.Advance(window / 2)
	w.settle(t, c, r, "within", delivery{kind: "guarded", fields: map[string]any{"orderId": "o1", "seq": int64(2)}})
	if calls, _, _ := w.handler.stats("within"); len(calls) != 0 {
		t.Errorf("sequence 2 inside the window after a bogus maximum called the handler %d times, want none (stale)", len(calls))
	}
	for i, later := range []time.Duration{window + time.Second, 24 * time.Hour, 330 * 24 * time.Hour} {
		w.clock.Advance(later)
		key := fmt.Sprintf("after%d", i)
		w.handler.script(key, []behavior{{"answer", 200}})
		w.settle(t, c, r, key, delivery{kind: "guarded", fields: map[string]any{"orderId": "o1", "seq": int64(3 + i)}})
		if calls, _, _ := w.handler.stats(key); len(calls) != 1 {
			t.Errorf("sequence %d published %v after a bogus maximum: %d handler calls, want 1 (no pin beyond the window)", 3+i, later, len(calls))
		}
		state := fmt.Sprintf("state%d", i)
		w.settle(t, c, r, state, delivery{kind: "state", fields: map[string]any{"aggregate": "p1", "name": state, "seq": int64(3 + i),
			"at": w.clock.Now().Format(time.RFC3339Nano)}})
		if got := w.state(t, "p1"); got != state {
			t.Errorf("a state update published %v after a bogus maximum: the document is %v's, want %s's", later, got, state)
		}
	}
}

// recoveryAfterKill: a consumer dies (SIGKILL) at a failpoint of a key's
// handler call; a new one on the same store settles the key once the
// dead one's reservation lapsed: with one call when it died before the
// call, with a second one, attempt 2 with the same key, when it died
// after the handler answered and before the answer was recorded — the
// case docs/handlers.md names — never two at once.
func recoveryAfterKill(t *testing.T, w *world) {
	r := rand.New(rand.NewPCG(5, 5))
	for i, kp := range w.door.killAt {
		if i > 0 {
			w = newWorld(t, w.h, w.door) // a Pub/Sub fake without the last consumers' streams
		}
		key := fmt.Sprintf("kill%d", i)
		w.handler.script(key, []behavior{{"answer", 201}})
		dying := w.start(kp.fp)
		go w.door.send(w, dying, delivery{key: key, kind: "order", msgID: msgID(key, 0), publish: w.clock.Now()})
		select {
		case <-dying.killed:
		case <-time.After(settleWithin):
			t.Fatalf("%s: the consumer never reached %s", key, kp.fp)
		}
		dying.kill(t)
		w.lapse()
		next := w.start("")
		w.settle(t, next, r, key, delivery{kind: "order"})
		extra := 0
		if kp.answered {
			extra = 1
		}
		w.checkCalls(t, key, []behavior{{"answer", 201}}, extra)
		if calls, _, _ := w.handler.stats(key); kp.answered && len(calls) != 2 {
			t.Errorf("%s, killed at %s after the handler answered: %d calls, want 2 (the named case)", key, kp.fp, len(calls))
		}
		next.term(t)
	}
}

// recoveryAfterTerm: SIGTERM while a key's call runs: the consumer takes
// no new work (deliveries and keyed requests 503 with Retry-After, pulled
// messages nacked), lets the call run until its drain deadline and cuts
// it there, keeping the key held; a new consumer settles it once that
// reservation lapsed, with attempt 2, never two calls at once.
func recoveryAfterTerm(t *testing.T, w *world) {
	r := rand.New(rand.NewPCG(6, 6))
	key, other := "term", "term-new"
	w.handler.script(key, []behavior{{"wait", 0}})
	w.handler.script(other, []behavior{{"answer", 200}})
	old := w.start("")
	go w.door.send(w, old, delivery{key: key, kind: "order", msgID: msgID(key, 0), publish: w.clock.Now()})
	waitStarted(t, w.handler, key)
	old.stop() // SIGTERM
	waitDraining(t, old)
	if w.door.pull {
		w.door.send(w, old, delivery{key: other, kind: "order", msgID: msgID(other, 0), publish: w.clock.Now()})
	} else {
		rp := w.door.send(w, old, delivery{key: other, kind: "order", msgID: msgID(other, 0), publish: w.clock.Now()})
		if rp.status != http.StatusServiceUnavailable || rp.retryAfter == "" {
			t.Errorf("new work while draining: %d (%v) Retry-After %q, want 503 with Retry-After", rp.status, rp.err, rp.retryAfter)
		}
	}
	old.term(t)
	if calls, _, _ := w.handler.stats(other); len(calls) != 0 {
		t.Errorf("work sent while draining reached the handler %d times, want none", len(calls))
	}
	w.lapse()
	next := w.start("")
	w.handler.script(key, []behavior{{"wait", 0}, {"answer", 201}})
	w.settle(t, next, r, key, delivery{kind: "order"})
	w.settle(t, next, r, other, delivery{kind: "order"})
	w.checkCalls(t, key, []behavior{{"hang", 0}, {"answer", 201}}, 0)
	w.checkCalls(t, other, []behavior{{"answer", 200}}, 0)
	next.term(t)
}

// waitStarted waits until the handler started a call of key.
func waitStarted(t *testing.T, h *handler, key string) {
	t.Helper()
	deadline := time.After(settleWithin)
	for {
		select {
		case k := <-h.started:
			if k == key {
				return
			}
		case <-deadline:
			t.Fatalf("the handler was never called for %s", key)
		}
	}
}

// waitDraining waits until c logs that it is shutting down.
func waitDraining(t *testing.T, c *consumer) {
	t.Helper()
	deadline := time.Now().Add(settleWithin)
	for time.Now().Before(deadline) {
		for _, l := range c.log.Lines(t) {
			if l["message"] == "consumer shutting down" {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the consumer never started shutting down")
}
