package engine

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/store"
)

// TestCoalescedGroupAcrossWindow: a group whose publish times span more
// than the window may have no delivery newer than every other one: a
// (bogus sequence) beats y by its sequence inside the window, x beats a
// across it (published more than the window later, not older by its
// event time), and y beats x by its sequence. The group is then decided
// as if its deliveries ran one after another in arrival order: a applied,
// y stale, x applied and written, with the marker of each applied one.
func TestCoalescedGroupAcrossWindow(t *testing.T) {
	for _, marker := range []bool{false, true} {
		t.Run(fmt.Sprintf("marker=%v", marker), func(t *testing.T) {
			first := hbeat(1, "healthy")
			first.marker = marker
			c := startContendedWith(t, first)
			mk := func(name string, at time.Duration, s int64) beat {
				return beat{msg: "m-" + name, event: "e-" + name, svc: "svc", status: name, at: coalesceT0.Add(at), seq: &s, marker: marker}
			}
			queued := []struct {
				b       beat
				outcome Outcome
			}{
				{mk("a", 10*time.Second, math.MaxInt64), Applied},
				{mk("y", 10*time.Second+4*time.Minute, 11), Stale},
				{mk("x", 10*time.Second+6*time.Minute, 10), Applied},
			}
			var results []<-chan delivered
			for _, q := range queued {
				results = append(results, c.queue(context.Background(), q.b))
			}
			c.commitFirst()
			c.g.release <- struct{}{}
			var writes int64
			for i, q := range queued {
				d := receive(t, results[i])
				if d.err != nil || d.res.Outcome != q.outcome {
					t.Errorf("queued %s: %s %v; want %s", q.b.msg, d.res.Outcome, d.err, q.outcome)
				}
				writes += d.res.Writes()
			}
			c.g.idle(t)
			doc := get(t, c.g.inner, store.Key{Collection: "ops_services", ID: "prod__svc"})
			if doc == nil || doc.Fields["status"] != "x" {
				t.Errorf("document = %+v; want x's", doc)
			}
			wantWrites := int64(1)
			if marker {
				wantWrites += 2
			}
			if writes != wantWrites {
				t.Errorf("the group wrote %d; want %d (the document, and a marker per applied delivery)", writes, wantWrites)
			}
			for name, want := range map[string]bool{"a": marker, "y": false, "x": marker} {
				key := store.Key{Collection: "eventpipe_dedupe", ID: "prod__e-e-" + name}
				if got := get(t, c.g.inner, key) != nil; got != want {
					t.Errorf("marker %s exists: %v, want %v", key, got, want)
				}
			}
		})
	}
}

// TestOrderingIsTotalInsideTheWindow: Ordering.Compare is antisymmetric,
// zero only for the same event, and transitive over versions published
// within one window of each other (so deliveries inside the window
// converge whatever their order), for generated versions with edge
// values in every field.
func TestOrderingIsTotalInsideTheWindow(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 21))
	t0 := coalesceT0
	o := Ordering{Window: time.Minute, MaxSequenceJump: 5}
	gen := func(inWindow bool) Version {
		k := Version{HasSequence: r.IntN(3) > 0, Sequence: []int64{0, 1, 2, 7, -1, math.MaxInt64, math.MinInt64}[r.IntN(7)],
			EventTime: t0.Add(time.Duration(r.IntN(5)-2) * 30 * time.Second),
			EventKey:  []string{"e-a", "e-b"}[r.IntN(2)], Fingerprint: []string{"", "f"}[r.IntN(2)]}
		if !k.HasSequence {
			k.Sequence = 0
		}
		k.PublishTime = t0.Add(time.Duration(r.IntN(3)) * 30 * time.Second)
		if !inWindow {
			k.PublishTime = t0.Add(time.Duration(r.IntN(9)) * 30 * time.Second)
		}
		return k
	}
	for i := 0; i < 20000; i++ {
		a, b, c := gen(true), gen(true), gen(true)
		if got, rev := o.Compare(a, b), o.Compare(b, a); got != -rev || (got == 0 && (a.EventKey != b.EventKey || a.Fingerprint != b.Fingerprint)) {
			t.Fatalf("compare(%+v, %+v) = %d, reversed %d: want antisymmetric, 0 only for the same event", a, b, got, rev)
		}
		if o.Compare(a, b) > 0 && o.Compare(b, c) > 0 && o.Compare(a, c) <= 0 {
			t.Fatalf("inside the window %+v > %+v > %+v but not %+v > %+v", a, b, c, a, c)
		}
		if a, b := gen(false), gen(false); o.Compare(a, b) != -o.Compare(b, a) {
			t.Fatalf("across the window compare(%+v, %+v) is not antisymmetric", a, b)
		}
	}
}
