package engine

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/opcount"
)

// Coalescing of latest-state deliveries, like a group commit: while a
// transaction on a target document is in flight, further deliveries for
// that document wait; when it ends, the first waiter runs one transaction
// for every waiter (latestGroup) and the others take their outcomes from
// it. A delivery that finds no transaction in flight runs its own at once,
// exactly as without coalescing.

// maxGroup bounds how many waiting deliveries one group transaction
// decides: it reads the dedupe markers of those not newer than the stored
// state one by one, and a transaction's reads are its latency. Waiters
// beyond it go in the next group.
const maxGroup = 100

// coalescer tracks the latest-state documents with a transaction in flight
// and the deliveries waiting for each. Safe for concurrent use.
type coalescer struct {
	maxWaiting int
	mu         sync.Mutex
	// busy holds a document while a transaction on it is in flight; its
	// value is the deliveries waiting for it, in arrival order.
	busy map[store.Key][]*waiter
}

// waiter is one delivery waiting for its document.
type waiter struct {
	ctx context.Context
	m   *materialization
	// wake receives once: when the waiter is to run the next group
	// (group is set) or when its group has decided it (err is set or nil).
	wake  chan struct{}
	group []*waiter // the group to run, this waiter first
	err   error
}

func newCoalescer(maxWaiting int) *coalescer {
	return &coalescer{maxWaiting: maxWaiting, busy: map[store.Key][]*waiter{}}
}

// enter marks key busy and returns nil when no transaction on it is in
// flight: the caller runs its own and calls leave after it. Otherwise it
// queues the delivery and returns its waiter, or reports full when
// maxWaiting deliveries already wait.
func (c *coalescer) enter(ctx context.Context, m *materialization) (w *waiter, full bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	q, inFlight := c.busy[m.target]
	if !inFlight {
		c.busy[m.target] = nil
		return nil, false
	}
	if len(q) >= c.maxWaiting {
		return nil, true
	}
	w = &waiter{ctx: ctx, m: m, wake: make(chan struct{}, 1)}
	c.busy[m.target] = append(q, w)
	return w, false
}

// leave ends the transaction in flight on key: the deliveries waiting for
// it (up to maxGroup) become the next group, run by the first of them;
// with none, key is no longer busy.
func (c *coalescer) leave(key store.Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.busy[key]
	if len(q) == 0 {
		delete(c.busy, key)
		return
	}
	n := min(len(q), maxGroup)
	group := slices.Clone(q[:n])
	rest := q[n:]
	if len(rest) == 0 {
		rest = nil
	}
	c.busy[key] = rest
	group[0].group = group
	group[0].wake <- struct{}{}
}

// withdraw removes w from its document's queue if no group has taken it
// yet (its context ended while it waited) and reports whether it did.
func (c *coalescer) withdraw(w *waiter) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.busy[w.m.target]
	i := slices.Index(q, w)
	if i < 0 {
		return false
	}
	c.busy[w.m.target] = append(q[:i:i], q[i+1:]...)
	return true
}

// groupContext returns a context for a group's transaction: it carries the
// first member's values and ends only when every member's context has
// ended, so one delivery giving up does not fail the others. stop releases
// it.
func groupContext(group []*waiter) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(group[0].ctx))
	var live atomic.Int64
	live.Store(int64(len(group)))
	stops := make([]func() bool, len(group))
	for i, w := range group {
		stops[i] = context.AfterFunc(w.ctx, func() {
			if live.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, s := range stops {
			s()
		}
		cancel()
	}
}

// coalesce runs m's ModeLatest write through the coalescer: at once when
// no transaction on its document is in flight, else in the next group.
func (e *Engine) coalesce(ctx context.Context, m *materialization) error {
	w, full := e.coalescer.enter(ctx, m)
	if full {
		return &Error{Type: TypeTransient, Code: "RESOURCE_EXHAUSTED", Op: opMaterialize,
			Err: fmt.Errorf("%d deliveries already wait for %s, which a transaction is writing (fix: raise Config.MaxWaitingPerDocument, or spread the aggregate over more documents)",
				e.coalescer.maxWaiting, m.res.DocPath)}
	}
	if w == nil {
		defer e.coalescer.leave(m.target)
		return e.materializeLatest(ctx, m)
	}
	select {
	case <-w.wake:
	case <-ctx.Done():
		if e.coalescer.withdraw(w) {
			return ctx.Err()
		}
		// A group has taken it: its outcome is being decided.
		<-w.wake
	}
	if w.group == nil {
		return w.err // decided by another delivery's group
	}
	decided := false
	defer func() {
		if !decided {
			// runGroup panicked: no member may take it for an outcome.
			for _, o := range w.group {
				o.err = newError(TypeTransient, opMaterialize, "the transaction deciding the deliveries waiting for %s failed", m.res.DocPath)
			}
		}
		e.coalescer.leave(m.target)
		for _, o := range w.group[1:] {
			o.wake <- struct{}{}
		}
	}()
	e.runGroup(w.group)
	decided = true
	return w.err
}

// runGroup decides every delivery of group in one transaction and sets
// each one's outcome (its materialization's res) and error.
func (e *Engine) runGroup(group []*waiter) {
	ctx, stop := groupContext(group)
	defer stop()
	if len(group) == 1 {
		group[0].err = e.materializeLatest(ctx, group[0].m)
		return
	}
	var ops opcount.Counts
	var winner *materialization
	slow := false
	decide := func(ctx context.Context, tx store.Tx) error {
		var err error
		winner, err = e.latestGroup(ctx, tx, group, slow)
		return err
	}
	err := e.runTx(ctx, &ops, decide)
	if isAlreadyExists(err) {
		// The winner's dedupe marker exists: read every marker first.
		slow = true
		err = e.runTx(ctx, &ops, decide)
	}
	// Each delivery counts its own marker reads; the target's read and the
	// writes are the winner's (or, with none, the first delivery's).
	payer := cmp.Or(winner, group[0].m)
	for _, w := range group {
		ops = ops.Sub(w.m.res.Ops)
		if err != nil {
			w.err = err
		}
	}
	payer.res.Ops = payer.res.Ops.Add(ops)
}

// latestGroup is the ModeLatest transaction of a group of deliveries for
// one document. It reads the document once and decides every delivery as
// if they ran one after another, each as Engine.latest would: first those
// that are duplicates of the stored state or older than it, then the
// newest of the others (the winner, written with its dedupe marker), then
// the rest, now older than the winner or duplicates of it. Like latest, it
// reads a delivery's marker only when the delivery is not newer than the
// stored state (is it a republished event?) and creates the winner's
// marker without reading it; with slow, after that create found the
// marker, it reads every marker first. The markers it reads, it reads in
// one batch (store.GetAll). A delivery's own error (a reused event id in
// error mode, a document too large) is its own: the others still commit.
// It returns the winner, if any.
func (e *Engine) latestGroup(ctx context.Context, tx store.Tx, group []*waiter, slow bool) (*materialization, error) {
	now := e.now()
	target := group[0].m.target
	cur, exists, err := getLive(ctx, tx, target, now)
	if err != nil {
		return nil, err
	}
	var stored Version
	if exists {
		stored = versionFromMeta(sub(cur.Fields, MetaField)) // its event key and fingerprint too
	}
	// Live markers by key (nil: absent or expired), read in one batch
	// before any write; the first delivery with a marker's key counts its
	// read.
	markers := map[store.Key]*store.Document{}
	readMarkers := func(ws []*waiter) error {
		var keys []store.Key
		var readers []*materialization
		for _, w := range ws {
			m := w.m
			if m.marker == (store.Key{}) {
				continue // no marker: nothing to read
			}
			if _, read := markers[m.marker]; !read {
				markers[m.marker] = nil
				keys, readers = append(keys, m.marker), append(readers, m)
			}
		}
		if len(keys) == 0 {
			return nil
		}
		docs, err := store.GetAll(ctx, tx, keys)
		if err != nil {
			return err
		}
		for i, d := range docs {
			readers[i].res.Ops.Reads++
			if d != nil && !d.Expired(now) {
				markers[keys[i]] = d
			}
		}
		return nil
	}
	if slow {
		if err := readMarkers(group); err != nil {
			return nil, err
		}
	}
	var candidates []*waiter
	// stale are the deliveries not newer than the stored state whose
	// markers say whether they are republished events.
	var stale []*waiter
	for _, w := range group {
		m := w.m
		m.res.Outcome, m.res.WriteKind, m.res.Warning, m.jumpFrom = "", logfields.WriteKindNone, "", nil
		m.appliedAt = now
		w.err = nil
		useMarker := m.marker != store.Key{}
		if slow && useMarker {
			if md := markers[m.marker]; md != nil {
				if dup, err := m.duplicateOf(ctx, e, m.marker, m.order.EventKey, str(md.Fields, metaFingerprint)); dup || err != nil {
					w.err = err
					continue
				}
			}
		}
		if exists {
			if dup, err := m.duplicateOf(ctx, e, target, stored.EventKey, stored.Fingerprint); dup || err != nil {
				w.err = err
				continue
			}
			m.noteJump(stored)
			if !m.ordering.Supersedes(m.order, stored) {
				m.res.Outcome = Stale
				if useMarker && !slow {
					stale = append(stale, w)
				}
				continue
			}
		}
		candidates = append(candidates, w)
	}
	if len(stale) > 0 {
		if err := readMarkers(stale); err != nil {
			return nil, err
		}
		for _, w := range stale {
			m := w.m
			if md := markers[m.marker]; md != nil {
				if _, err := m.duplicateOf(ctx, e, m.marker, m.order.EventKey, str(md.Fields, metaFingerprint)); err != nil {
					w.err = err
				}
			}
		}
	}
	// The newest candidate whose document can be built wins: one newer
	// than every other (the first arrived on a tie), the others then being
	// older than it or the same event.
	var win *materialization
	var doc store.Document
	for win == nil && len(candidates) > 0 {
		best := newest(candidates)
		if best < 0 {
			// The candidates' publish times span more than the window and
			// none is newer than every other (ordering.compare): decide
			// them one after another in arrival order instead.
			return e.latestSerial(ctx, tx, candidates, now, slow)
		}
		c := candidates[best]
		candidates = slices.Delete(candidates, best, best+1)
		if doc, err = c.m.document(); err != nil {
			c.err = err
			continue
		}
		win = c.m
	}
	if win == nil {
		return nil, nil
	}
	// After the winner: the same event, or older.
	for _, w := range candidates {
		m := w.m
		if dup, err := m.duplicateOf(ctx, e, target, win.order.EventKey, win.order.Fingerprint); dup || err != nil {
			w.err = err
			continue
		}
		m.res.Outcome = Stale
	}
	if win.marker != (store.Key{}) {
		if err := e.writeMarker(ctx, tx, win, now, slow); err != nil {
			return nil, err
		}
	}
	win.res.Outcome, win.res.WriteKind = Applied, logfields.WriteKindSet
	return win, tx.Set(ctx, target, doc)
}

// duplicateOfAny is duplicateOf for each of ms in turn, on m's target.
func (m *materialization) duplicateOfAny(ctx context.Context, e *Engine, ms []*materialization) (bool, error) {
	for _, o := range ms {
		if dup, err := m.duplicateOf(ctx, e, m.target, o.order.EventKey, o.order.Fingerprint); dup || err != nil {
			return dup, err
		}
	}
	return false, nil
}

// newest returns the index of the first candidate that no other one
// supersedes, or -1 if there is none (possible only when their publish
// times span more than the window: inside it the order is total).
func newest(candidates []*waiter) int {
	best := 0
	for i, w := range candidates {
		if w.m.ordering.Supersedes(w.m.order, candidates[best].m.order) {
			best = i
		}
	}
	if undominated(candidates, best) {
		return best
	}
	for i := range candidates {
		if i != best && undominated(candidates, i) {
			return i
		}
	}
	return -1
}

// undominated reports whether no candidate supersedes candidates[i].
func undominated(candidates []*waiter, i int) bool {
	for j, w := range candidates {
		if j != i && w.m.ordering.Supersedes(w.m.order, candidates[i].m.order) {
			return false
		}
	}
	return true
}

// latestSerial decides candidates, each newer than the stored version, as
// if they ran one after another in arrival order: each is applied if it
// supersedes the one applied before it, else it is stale or a duplicate
// of it. Only the last applied document is written (the others it
// replaced within the transaction); every applied one's dedupe marker is.
// A candidate whose document cannot be built fails alone, as in
// latestGroup. It returns the one written.
func (e *Engine) latestSerial(ctx context.Context, tx store.Tx, candidates []*waiter, now time.Time, slow bool) (*materialization, error) {
	for {
		var applied []*materialization
		var cur *materialization
		for _, w := range candidates {
			m := w.m
			if cur != nil {
				// The same event as one applied before it (its marker would
				// say so), or as the document.
				if dup, err := m.duplicateOfAny(ctx, e, applied); dup || err != nil {
					w.err = err
					continue
				}
				if !m.ordering.Supersedes(m.order, cur.order) {
					m.res.Outcome = Stale
					continue
				}
			}
			m.res.Outcome, m.res.WriteKind = Applied, logfields.WriteKindSet
			applied, cur = append(applied, m), m
		}
		doc, err := cur.document()
		if err != nil {
			// Decide again without it, as if it had never arrived.
			for _, w := range candidates {
				w.err = nil
				if w.m == cur {
					w.err = err
				}
				w.m.res.Outcome, w.m.res.WriteKind, w.m.res.Warning = "", logfields.WriteKindNone, ""
			}
			candidates = slices.DeleteFunc(candidates, func(w *waiter) bool { return w.m == cur })
			if len(candidates) == 0 {
				return nil, nil
			}
			continue
		}
		for _, m := range applied {
			if m.marker != (store.Key{}) {
				if err := e.writeMarker(ctx, tx, m, now, slow); err != nil {
					return nil, err
				}
			}
		}
		return cur, tx.Set(ctx, cur.target, doc)
	}
}
