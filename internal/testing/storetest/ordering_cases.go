package storetest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/store"
)

// The ordering property: whatever values one message carries in every
// ordering field, it cannot make a later legitimate update of the same
// aggregate stale once that update was published more than the window
// (engine.Config.MaxEventSkew) after it; and deliveries published within
// one window converge on the same document in every order of delivery.
// Histories of legitimate updates are generated, from a no-sequence
// service or from a sequence producer, and one adversarial message is
// given arbitrary values in every ordering field the engine has
// (the fields under engine.MetaField), from orderingFields below.

// ordered is one delivery of the property: a legitimate update or the
// adversary.
type ordered struct {
	name      string // "u3", "adversary": the document's field "from"
	msgID     string
	eventID   string
	publish   time.Time
	eventTime time.Time
	seq       *int64
}

func (o ordered) event() engine.Event {
	return engine.Event{MessageID: o.msgID, PublishTime: o.publish, EventID: o.eventID,
		Payload: []byte(fmt.Sprintf(`{"eventId":%q,"from":%q}`, o.eventID, o.name))}
}

func (o ordered) write(coll string, marker bool) engine.Write {
	return engine.Write{Collection: coll, ID: "agg", EventTime: o.eventTime, Sequence: o.seq, DedupeMarker: marker,
		Fields: map[string]any{"from": o.name}}
}

func (o ordered) String() string {
	seq := "none"
	if o.seq != nil {
		seq = fmt.Sprint(*o.seq)
	}
	return fmt.Sprintf("%s{msg %q, published %s, event time %s, sequence %s}", o.name, o.msgID,
		o.publish.Format(time.RFC3339Nano), o.eventTime.Format(time.RFC3339Nano), seq)
}

// orderingWorld is one generated case's setting: the engine's window and
// sequence bound, and the legitimate history.
type orderingWorld struct {
	window  time.Duration // engine.Config.MaxEventSkew
	maxJump int64         // engine.Config.MaxSequenceJump; 0 for the default
	seqs    bool          // the producer sends sequences
	// seqLimit bounds every sequence's magnitude: math.MaxInt64, or 2^53-1
	// on a store that cannot keep larger integers (Harness.NoFullInt64).
	seqLimit int64
	marker   bool      // the route keeps dedupe markers
	updates  []ordered // legitimate, in publish order
}

func (w *orderingWorld) config(c *engine.Config) {
	c.MaxEventSkew, c.MaxSequenceJump = w.window, w.maxJump
}

func (w *orderingWorld) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "window %s, max sequence jump %d, sequences %v, dedupe marker %v:", w.window, w.maxJump, w.seqs, w.marker)
	for _, u := range w.updates {
		fmt.Fprintf(&b, "\n  %s", u)
	}
	return b.String()
}

// orderingField is one ordering field's adversarial values: set gives the
// adversary a value drawn from r, biased to the edges (zero, the extremes,
// the bounds of the window and of the sequence bound, the neighbours of
// legitimate values). inWindow restricts publish times to those the
// convergence property covers (see orderingConverges).
type orderingField struct {
	name string // as the engine names it under engine.MetaField
	set  func(r *rand.Rand, w *orderingWorld, a *ordered, at time.Time, inWindow bool)
}

// orderingFields lists every ordering field: NoMessageFreezesADocument
// (orderingFieldsCovered) fails when the engine keeps one that has no
// entry here.
var orderingFields = []orderingField{
	{name: "eventTime", set: func(r *rand.Rand, w *orderingWorld, a *ordered, at time.Time, _ bool) {
		u := pick(r, w.updates)
		a.eventTime = pick(r, []time.Time{{}, time.Unix(0, 0).UTC(), time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC),
			time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), at.Add(100 * 365 * 24 * time.Hour),
			a.publish, a.publish.Add(w.window), a.publish.Add(w.window + time.Microsecond), a.publish.Add(w.window - time.Microsecond),
			a.publish.Add(-w.window), u.eventTime, u.eventTime.Add(time.Microsecond), u.eventTime.Add(-time.Microsecond),
			at.Add(time.Duration(r.Int64N(int64(4*w.window))) - 2*w.window)})
	}},
	{name: "sequence", set: func(r *rand.Rand, w *orderingWorld, a *ordered, _ time.Time, _ bool) {
		jump := w.maxJump
		if jump == 0 {
			jump = engine.DefaultMaxSequenceJump
		}
		base := int64(0)
		if u := pick(r, w.updates); u.seq != nil {
			base = *u.seq
		}
		values := []int64{0, -1, 1, math.MinInt64, math.MaxInt64, math.MaxInt64 - 1, base, base + 1, base - 1,
			sat(base, jump), sat(base, jump+1), sat(base, -jump), sat(base, -jump-1), r.Int64(), -r.Int64()}
		if r.IntN(6) == 0 {
			a.seq = nil
			return
		}
		v := w.clampSeq(pick(r, values))
		a.seq = &v
	}},
	{name: "publishTime", set: func(r *rand.Rand, w *orderingWorld, a *ordered, at time.Time, inWindow bool) {
		first, last := w.updates[0].publish, w.updates[len(w.updates)-1].publish
		// Dominated by every legitimate update, or standing in for the
		// receipt time (far ahead of the clock): inside the window too.
		values := []time.Time{{}, time.Unix(0, 0).UTC(), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC),
			at.Add(w.window + time.Second), at.Add(time.Hour)}
		if inWindow {
			// Within the window of every legitimate update.
			lo, hi := last.Add(-w.window), first.Add(w.window)
			values = append(values, lo.Add(time.Millisecond), hi.Add(-time.Millisecond),
				lo.Add(time.Duration(r.Int64N(int64(hi.Sub(lo))))), pick(r, w.updates).publish)
		} else {
			u := pick(r, w.updates).publish
			values = append(values, at, at.Add(w.window), at.Add(w.window-time.Millisecond), at.Add(-w.window),
				at.Add(-time.Hour), u, u.Add(time.Microsecond), u.Add(-time.Microsecond),
				at.Add(time.Duration(r.Int64N(int64(4*w.window)))-2*w.window))
		}
		a.publish = pick(r, values)
	}},
	{name: "eventKey", set: func(r *rand.Rand, w *orderingWorld, a *ordered, _ time.Time, _ bool) {
		// The event id names the event key, and is in the payload the
		// fingerprint hashes: both tell apart events equal in the rest.
		u := pick(r, w.updates).eventID
		a.eventID = pick(r, []string{"0", "~", "zzzzzzzzzzzzzzzzzzzz", u + "0", u[:len(u)-1],
			fmt.Sprint(r.Uint64()), "\u00ff\u00ff"})
	}},
}

// orderingFieldsCovered fails unless orderingFields has exactly the
// fields the engine orders by: those of a message it keeps under
// engine.MetaField, read back from a document written with all of them
// set, but for the fingerprint (varied with the event key: the payload
// carries the event id), and the message id and time applied, which order
// nothing (engine.Version).
func orderingFieldsCovered(t *testing.T, e *env) {
	t.Helper()
	coll, seq := e.collection("ordering_fields"), int64(1)
	o := ordered{name: "all", msgID: "1", eventID: "ev-1", publish: t0(), eventTime: t0().Add(-time.Second), seq: &seq}
	if _, err := e.engine().Materialize(context.Background(), o.event(), o.write(coll, false)); err != nil {
		t.Fatal(err)
	}
	d := e.get(store.Key{Collection: coll, ID: "prod__agg"})
	if d == nil {
		t.Fatal("the engine wrote no document")
	}
	meta, ok := d.Fields[engine.MetaField].(map[string]any)
	if !ok {
		t.Fatalf("the document has no %s map: %v", engine.MetaField, d.Fields)
	}
	var kept []string
	for k := range meta {
		if k != "fingerprint" && k != "messageId" && k != "appliedAt" {
			kept = append(kept, k)
		}
	}
	var have []string
	for _, f := range orderingFields {
		have = append(have, f.name)
	}
	if !slices.Equal(slices.Sorted(slices.Values(have)), slices.Sorted(slices.Values(kept))) {
		t.Fatalf("the generator varies the ordering fields %v; the engine keeps %v under %s: add an adversarial generator for every new field to orderingFields (or, for a field that does not order versions, leave it out here)", have, kept, engine.MetaField)
	}
}

// clampSeq bounds v to ±w.seqLimit.
func (w *orderingWorld) clampSeq(v int64) int64 { return max(-w.seqLimit, min(v, w.seqLimit)) }

// seqLimit is orderingWorld.seqLimit for a store that keeps full int64s or not.
func seqLimit(fullInt64 bool) int64 {
	if fullInt64 {
		return math.MaxInt64
	}
	return 1<<53 - 1
}

// sat returns a+d, saturated at the int64 bounds.
func sat(a, d int64) int64 {
	s := a + d
	switch {
	case d > 0 && s < a:
		return math.MaxInt64
	case d < 0 && s > a:
		return math.MinInt64
	}
	return s
}

func pick[T any](r *rand.Rand, vs []T) T { return vs[r.IntN(len(vs))] }

// genWorld generates a legitimate history of n updates starting at start:
// publish times increase by gaps drawn from gaps; event times lie within
// the window of their publish time (behind it by less than the window,
// ahead by at most half of it). A no-sequence service's event times
// increase; a sequence producer's sequences increase (by at most 3) and
// its event times may disagree with them (its instances' clocks differ).
//
// With fullInt64 false (Harness.NoFullInt64) sequences start below 2^53.
func genWorld(r *rand.Rand, start time.Time, n int, gaps []time.Duration, fullInt64 bool) *orderingWorld {
	w := &orderingWorld{window: pick(r, []time.Duration{engine.DefaultMaxEventSkew, time.Minute}),
		maxJump: pick(r, []int64{0, 1, 5, 1000}), seqs: r.IntN(2) == 0, marker: r.IntN(2) == 0, seqLimit: seqLimit(fullInt64)}
	base := w.clampSeq(pick(r, []int64{0, 1, 41, 1 << 40, -1000, math.MinInt64, math.MaxInt64 - 100}))
	base = min(base, w.seqLimit-100) // room for the updates' steps
	p := start
	for i := range n {
		if i > 0 {
			p = p.Add(pick(r, gaps))
		}
		// Behind the publish time by less than the window, or ahead by at
		// most half of it.
		et := p.Add(time.Duration(r.Int64N(int64(w.window*3/2))) - w.window + time.Millisecond)
		u := ordered{name: fmt.Sprintf("u%d", i), msgID: fmt.Sprint(1000001 + i), eventID: fmt.Sprintf("ev-%d", i),
			publish: p.Truncate(time.Microsecond), eventTime: et.Truncate(time.Microsecond)}
		if w.seqs {
			s := base
			if i > 0 {
				s = *w.updates[i-1].seq + 1 + r.Int64N(3)
			}
			u.seq = &s
		} else if i > 0 && !u.eventTime.After(w.updates[i-1].eventTime) {
			u.eventTime = w.updates[i-1].eventTime.Add(time.Millisecond)
		}
		w.updates = append(w.updates, u)
	}
	return w
}

// genAdversary returns a copy of a random update turned into another
// event, with arbitrary values in each ordering field (each varied with
// probability 3/4). at is the clock when it is delivered.
func genAdversary(r *rand.Rand, w *orderingWorld, at time.Time, inWindow bool) ordered {
	a := pick(r, w.updates)
	a.name, a.eventID = "adversary", "ev-adversary"
	if a.seq != nil {
		s := *a.seq
		a.seq = &s
	}
	for _, f := range orderingFields {
		if r.IntN(4) > 0 {
			f.set(r, w, &a, at, inWindow)
		}
	}
	return a
}

// orderingSetting is the engine config and clock of one property run.
type orderingSetting struct {
	e     *env
	clock *Clock
	world *orderingWorld
	tag   string // names the setting's collections, apart from other settings'
	n     int    // runs so far, naming their collections
}

func (s *orderingSetting) engine() (*engine.Engine, string) {
	s.n++
	prefix := fmt.Sprintf("%s%s_%d_", s.e.prefix, s.tag, s.n)
	eng := s.e.engine(s.world.config, func(c *engine.Config) { c.Now, c.CollectionPrefix = s.clock.Now, prefix })
	return eng, prefix + "docs"
}

func (s *orderingSetting) deliver(t *testing.T, eng *engine.Engine, coll string, o ordered) engine.Result {
	t.Helper()
	r, err := eng.Materialize(context.Background(), o.event(), o.write(coll, s.world.marker))
	if err != nil {
		t.Fatalf("deliver %s: %v", o, err)
	}
	return r
}

func (s *orderingSetting) from(t *testing.T, coll string) any {
	t.Helper()
	d := s.e.get(store.Key{Collection: coll, ID: "prod__agg"})
	if d == nil {
		return nil
	}
	return d.Fields["from"]
}

// orderingInvariant delivers w's updates in publish order, each when it
// is published (or a little later), and the adversary a among them at
// position k (after k updates) at the clock's time then. Every update
// published more than the window after the adversary's publish time (or,
// if that claims to be later than its delivery plus the window, after its
// delivery plus the window) must be applied, and the document must end
// as the last update left it when that one was.
func orderingInvariant(t *testing.T, s *orderingSetting, a ordered, k int, latency []time.Duration) {
	t.Helper()
	w := s.world
	eng, coll := s.engine()
	var horizon time.Time // the adversary's publish time as bounded by its delivery
	delivered := false
	for i := 0; i <= len(w.updates); i++ {
		if i == k {
			at := s.clock.Now()
			horizon = a.publish
			if bound := at.Add(w.window); horizon.After(bound) {
				horizon = bound
			}
			horizon = horizon.Add(w.window)
			s.deliver(t, eng, coll, a)
			delivered = true
		}
		if i == len(w.updates) {
			break
		}
		u := w.updates[i]
		if at := u.publish.Add(latency[i]); at.After(s.clock.Now()) {
			s.clock.Advance(at.Sub(s.clock.Now()))
		}
		r := s.deliver(t, eng, coll, u)
		if delivered && u.publish.After(horizon) && r.Outcome != engine.Applied {
			t.Fatalf("%s delivered after %s: %s, want applied: published more than the window (%s) after the adversary (bound %s): the adversary froze the document\n%s",
				u, a, r.Outcome, w.window, horizon.Format(time.RFC3339Nano), w)
		}
	}
	if last := w.updates[len(w.updates)-1]; k < len(w.updates) && last.publish.After(horizon) {
		if got := s.from(t, coll); got != last.name {
			t.Fatalf("document from %v after every delivery, want %s (published beyond the adversary's window)\nadversary %s at %d\n%s", got, last.name, a, k, w)
		}
	}
}

// orderingConverges delivers the same deliveries (ds) in every order
// given by perms, each to a document of its own, at one clock time, and
// requires one final document.
func orderingConverges(t *testing.T, s *orderingSetting, ds []ordered, perms [][]int) {
	t.Helper()
	var want any
	var wantOrder []int
	for _, perm := range perms {
		eng, coll := s.engine()
		for _, i := range perm {
			s.deliver(t, eng, coll, ds[i])
		}
		got := s.from(t, coll)
		if wantOrder == nil {
			want, wantOrder = got, perm
			continue
		}
		if got != want {
			var b strings.Builder
			for _, d := range ds {
				fmt.Fprintf(&b, "\n  %s", d)
			}
			t.Fatalf("deliveries in order %v end as %v, in order %v as %v: permutations of deliveries inside the window must converge\ndeliveries (clock %s):%s\n%s",
				wantOrder, want, perm, got, s.clock.Now().Format(time.RFC3339Nano), b.String(), s.world)
		}
	}
}

// permutations returns every order of n items (n! of them).
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := slices.Insert(slices.Clone(p), i, n-1)
			out = append(out, q)
		}
	}
	return out
}

// OrderingProperty checks the ordering property on st for the cases
// generated from seed: the invariant over a history spanning several
// windows, then convergence over deliveries inside one window (every
// permutation). It is the conformance case's body, and a fuzz target's.
func OrderingProperty(t *testing.T, st store.Store, seed uint64) {
	e := (&suite{h: Harness{Store: st, Concurrency: 1}}).env(t)
	orderingPropertyCase(t, e, seed)
}

func orderingPropertyCase(t *testing.T, e *env, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 0x0deb))
	start, full := t0(), e.h.NoFullInt64 == ""
	// The invariant: a history spanning several windows.
	{
		w := genWorld(r, start, 3+r.IntN(6), []time.Duration{time.Millisecond, time.Second, time.Minute / 2, 2 * time.Minute,
			engine.DefaultMaxEventSkew - time.Second, engine.DefaultMaxEventSkew + time.Second, time.Hour}, full)
		k := r.IntN(len(w.updates) + 1)
		latency := make([]time.Duration, len(w.updates))
		for i := range latency {
			latency[i] = pick(r, []time.Duration{0, time.Millisecond, time.Second})
		}
		// The clock when the adversary is delivered: after update k-1.
		at := start.Add(-time.Second)
		if k > 0 {
			at = w.updates[k-1].publish.Add(latency[k-1])
		}
		a := genAdversary(r, w, at, false)
		s := &orderingSetting{e: e, clock: NewClock(start.Add(-time.Second)), world: w, tag: fmt.Sprintf("s%di", seed)}
		orderingInvariant(t, s, a, k, latency)
	}
	// Convergence: legitimate updates published within half a window, the
	// adversary inside the window too, one of them redelivered; the clock
	// a quarter window after the last.
	{
		w := genWorld(r, start, 3, []time.Duration{time.Millisecond, time.Second, 10 * time.Second}, full)
		last := w.updates[len(w.updates)-1].publish
		at := last.Add(w.window / 4)
		a := genAdversary(r, w, at, true)
		ds := append(slices.Clone(w.updates), a)
		if r.IntN(2) == 0 {
			ds = append(ds, pick(r, ds)) // Pub/Sub redelivers one
		}
		if c, ok := republish(r, ds, w.window); ok {
			ds = append(ds, c) // a copy of one, published again
		}
		perms := permutations(len(ds))
		if len(perms) > 24 {
			r.Shuffle(len(perms), func(i, j int) { perms[i], perms[j] = perms[j], perms[i] })
			perms = perms[:24]
		}
		s := &orderingSetting{e: e, clock: NewClock(at), world: w, tag: fmt.Sprintf("s%dc", seed)}
		orderingConverges(t, s, ds, perms)
	}
}

// republish returns a copy of one of ds published again (a producer's
// retry, a DLQ replay): the same event and payload, with a new message id
// and a later publish time that keeps every publish time of ds within one
// window (where convergence is promised). ok is false when the copy
// picked has no room left in the window.
func republish(r *rand.Rand, ds []ordered, window time.Duration) (c ordered, ok bool) {
	lo, hi := ds[0].publish, ds[0].publish
	for _, d := range ds {
		lo, hi = minTime(lo, d.publish), maxTime(hi, d.publish)
	}
	c = pick(r, ds)
	latest := lo.Add(window) // every publish time stays within a window of lo
	if !c.publish.Before(latest) {
		return c, false
	}
	c.msgID = c.msgID + "-republished"
	c.publish = pick(r, []time.Time{latest, c.publish.Add(time.Microsecond),
		c.publish.Add(time.Duration(r.Int64N(int64(latest.Sub(c.publish)))) + time.Microsecond)})
	if c.publish.Before(hi.Add(-window)) {
		return c, false
	}
	return c, true
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// orderingSeeds is how many generated cases the conformance case runs
// on every driver (a fuzz target in consumer/engine runs many more on
// memory).
const orderingSeeds = 12

// noMessageFreezesADocument is the ordering property on the driver: the
// two messages of issue 21 by name, an older event republished beyond the
// window, then generated cases.
func noMessageFreezesADocument(t *testing.T, e *env) {
	orderingFieldsCovered(t, e)
	start := t0()
	window := engine.DefaultMaxEventSkew
	seq := func(v int64) *int64 { return &v }
	// u(i, at, seq) is update i of a producer publishing every 10 s,
	// produced a second before it is published.
	u := func(i int, at time.Time, s *int64) ordered {
		return ordered{name: fmt.Sprintf("u%d", i), msgID: fmt.Sprint(2000001 + i), eventID: fmt.Sprintf("ev-%d", i),
			publish: at, eventTime: at.Add(-time.Second), seq: s}
	}
	for i, tc := range []struct {
		name      string
		seqs      bool
		adversary func(at time.Time) ordered
	}{
		{"sequence 0 on a service that never sends sequences", false, func(at time.Time) ordered {
			return ordered{name: "adversary", msgID: "3000001", eventID: "ev-seq0", publish: at, eventTime: at, seq: seq(0)}
		}},
		{"sequence MaxInt64 on a sequence producer", true, func(at time.Time) ordered {
			// The largest sequence the store keeps (the npm emulator's is 2^53-1).
			return ordered{name: "adversary", msgID: "3000002", eventID: "ev-max", publish: at, eventTime: at, seq: seq(seqLimit(e.h.NoFullInt64 == ""))}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &orderingWorld{window: window, seqs: tc.seqs, marker: true, seqLimit: seqLimit(e.h.NoFullInt64 == "")}
			for i := range 3 {
				var s *int64
				if tc.seqs {
					s = seq(int64(41 + i))
				}
				w.updates = append(w.updates, u(i, start.Add(time.Duration(i)*10*time.Second), s))
			}
			// An hour later, with today's time.
			var s *int64
			if tc.seqs {
				s = seq(44)
			}
			w.updates = append(w.updates, u(3, start.Add(time.Hour), s))
			set := &orderingSetting{e: e, clock: NewClock(start.Add(-time.Second)), world: w, tag: fmt.Sprintf("n%d", i)}
			orderingInvariant(t, set, tc.adversary(start.Add(20*time.Second)), 3, make([]time.Duration, len(w.updates)))
		})
	}
	t.Run("republished copies of an event dated beyond the window", func(t *testing.T) {
		// Issue 34: B's event time is an hour ahead of its publish time, A
		// is published 10 s after B, and B is published again 64 s after
		// the first time. When an event time beyond the window stood in
		// for each copy's own publish time, B ranked below A and its copy
		// above, and two of the six orders ended as A. Every copy of B
		// ranks the same: B wins in every order.
		b := ordered{name: "B", msgID: "5000001", eventID: "ev-b", publish: start, eventTime: start.Add(time.Hour)}
		a := ordered{name: "A", msgID: "5000002", eventID: "ev-a", publish: start.Add(10 * time.Second), eventTime: start.Add(30 * time.Second)}
		copyB := b
		copyB.msgID, copyB.publish = "5000003", start.Add(64*time.Second)
		for _, marker := range []bool{false, true} {
			w := &orderingWorld{window: window, marker: marker, seqLimit: math.MaxInt64, updates: []ordered{b, a}}
			set := &orderingSetting{e: e, clock: NewClock(start.Add(70 * time.Second)), world: w, tag: fmt.Sprintf("copies%v", marker)}
			orderingConverges(t, set, []ordered{a, b, copyB}, permutations(3))
			eng, coll := set.engine()
			for _, d := range []ordered{a, b, copyB} {
				set.deliver(t, eng, coll, d)
			}
			if got := set.from(t, coll); got != "B" {
				t.Errorf("dedupe marker %v: document from %v, want B (its event time is the latest)", marker, got)
			}
		}
	})
	t.Run("older event republished beyond the window", func(t *testing.T) {
		// Event 0, published again (a DLQ replay) an hour after event 1
		// was applied: it is older, so it stays stale without a marker.
		w := &orderingWorld{window: window, updates: []ordered{u(0, start, nil), u(1, start.Add(10*time.Second), nil)}, seqLimit: math.MaxInt64}
		set := &orderingSetting{e: e, clock: NewClock(start.Add(time.Minute)), world: w, tag: "replay"}
		eng, coll := set.engine()
		for _, d := range w.updates {
			set.deliver(t, eng, coll, d)
		}
		replay := w.updates[0]
		replay.msgID, replay.publish = "4000001", start.Add(time.Hour)
		set.clock.Advance(time.Hour)
		if r := set.deliver(t, eng, coll, replay); r.Outcome != engine.Stale {
			t.Errorf("event 0 republished an hour after event 1: %s, want stale_ignored (older by its event time)", r.Outcome)
		}
		if got := set.from(t, coll); got != "u1" {
			t.Errorf("document from %v, want u1", got)
		}
	})
	for seed := range uint64(orderingSeeds) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { orderingPropertyCase(t, e, seed) })
	}
}
