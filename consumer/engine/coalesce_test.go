package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/keys"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	"github.com/eventpipe/eventpipe/internal/testing/remotestore"
)

// gatedStore holds every transaction at its start until the test releases
// it, so a test decides what is in flight. A transaction whose number is
// in fail fails there instead of running.
type gatedStore struct {
	inner   store.Store
	entered chan int // the number of each transaction reaching the gate
	release chan struct{}
	calls   atomic.Int64
	fail    map[int]error
	panicAt int // a transaction that panics
	mu      sync.Mutex
	reads   map[int][]string // by transaction number: readTracingTx's calls
}

func newGatedStore() *gatedStore {
	return &gatedStore{inner: memstore.New(), entered: make(chan int, 64), release: make(chan struct{})}
}

func (g *gatedStore) RunTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	n := int(g.calls.Add(1))
	g.entered <- n
	<-g.release
	if n == g.panicAt {
		panic("store driver bug")
	}
	if err := g.fail[n]; err != nil {
		return err
	}
	return g.inner.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
		rt := &readTracingTx{Tx: tx}
		err := fn(ctx, rt)
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.reads == nil {
			g.reads = map[int][]string{}
		}
		g.reads[n] = rt.calls
		return err
	})
}

// readsOf returns the reads transaction n's last attempt made.
func (g *gatedStore) readsOf(n int) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reads[n]
}

// readTracingTx records its reads: "get ID" for a Get, "getAll ID ID…" for
// a GetAll (a batch read).
type readTracingTx struct {
	store.Tx
	calls []string
}

func (t *readTracingTx) Get(ctx context.Context, key store.Key) (store.Document, error) {
	t.calls = append(t.calls, "get "+key.ID)
	return t.Tx.Get(ctx, key)
}

func (t *readTracingTx) GetAll(ctx context.Context, keys []store.Key) ([]*store.Document, error) {
	call := "getAll"
	for _, k := range keys {
		call += " " + k.ID
	}
	t.calls = append(t.calls, call)
	return store.GetAll(ctx, t.Tx, keys)
}

func (g *gatedStore) Close() error { return g.inner.Close() }

// await waits for transaction n to reach the gate.
func (g *gatedStore) await(t *testing.T, n int) {
	t.Helper()
	select {
	case got := <-g.entered:
		if got != n {
			t.Fatalf("transaction %d reached the gate; want %d", got, n)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("transaction %d never started", n)
	}
}

// idle checks that no transaction is waiting at the gate.
func (g *gatedStore) idle(t *testing.T) {
	t.Helper()
	select {
	case n := <-g.entered:
		t.Fatalf("transaction %d started; want none", n)
	default:
	}
}

var coalesceT0 = time.Date(2026, 1, 8, 10, 0, 0, 0, time.UTC)

// beat is a heartbeat of service svc: event i, status s.
type beat struct {
	msg, event, svc, status string
	at                      time.Time
	seq                     *int64
	marker                  bool
}

func hbeat(i int, status string) beat {
	return beat{msg: "m" + strconv.Itoa(i), event: "e" + strconv.Itoa(i), svc: "svc", status: status,
		at: coalesceT0.Add(time.Duration(i) * time.Second)}
}

func (b beat) delivery() (Event, Write) {
	payload := fmt.Sprintf(`{"eventId":%q,"service":%q,"status":%q}`, b.event, b.svc, b.status)
	return Event{MessageID: b.msg, EventID: b.event, PublishTime: b.at.Add(time.Second), Payload: []byte(payload)},
		Write{Collection: "ops_services", ID: b.svc, EventTime: b.at, Sequence: b.seq, DedupeMarker: b.marker,
			Fields: map[string]any{"status": b.status}}
}

type delivered struct {
	res Result
	err error
}

// deliverAsync delivers b on its own goroutine; the result arrives on the channel.
func deliverAsync(ctx context.Context, e *Engine, b beat) <-chan delivered {
	out := make(chan delivered, 1)
	go func() {
		ev, w := b.delivery()
		r, err := e.Materialize(ctx, ev, w)
		out <- delivered{r, err}
	}()
	return out
}

// waitQueued waits until n deliveries wait for the document of service svc.
func waitQueued(t *testing.T, e *Engine, svc string, n int) {
	t.Helper()
	key := store.Key{Collection: "ops_services", ID: "prod__" + svc}
	deadline := time.Now().Add(10 * time.Second)
	for {
		e.coalescer.mu.Lock()
		got := len(e.coalescer.busy[key])
		e.coalescer.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries wait for %s; want %d", got, key, n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func newTestEngine(t *testing.T, st store.Store, mod ...func(*Config)) *Engine {
	t.Helper()
	cfg := Config{Store: st, Env: "prod", Now: func() time.Time { return coalesceT0.Add(time.Hour) }}
	for _, m := range mod {
		m(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func get(t *testing.T, st store.Store, key store.Key) *store.Document {
	t.Helper()
	var doc *store.Document
	if err := st.RunTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		d, err := tx.Get(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		doc = &d
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return doc
}

func receive(t *testing.T, c <-chan delivered) delivered {
	t.Helper()
	select {
	case d := <-c:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("delivery never returned")
		return delivered{}
	}
}

// contended is a document with a delivery of event 1 in flight (its
// transaction held at the gate) and deliveries queued behind it.
type contended struct {
	t      *testing.T
	g      *gatedStore
	e      *Engine
	first  <-chan delivered
	queued int
}

func startContended(t *testing.T, mod ...func(*Config)) *contended {
	return startContendedWith(t, hbeat(1, "healthy"), mod...)
}

func startContendedWith(t *testing.T, first beat, mod ...func(*Config)) *contended {
	t.Helper()
	g := newGatedStore()
	c := &contended{t: t, g: g, e: newTestEngine(t, g, mod...)}
	c.first = deliverAsync(context.Background(), c.e, first)
	g.await(t, 1)
	return c
}

// queue delivers b and waits until it waits for the document.
func (c *contended) queue(ctx context.Context, b beat) <-chan delivered {
	c.t.Helper()
	d := deliverAsync(ctx, c.e, b)
	c.queued++
	waitQueued(c.t, c.e, b.svc, c.queued)
	return d
}

// commitFirst lets the first delivery's transaction commit and checks it
// applied; the queued deliveries' group transaction then reaches the gate.
func (c *contended) commitFirst() {
	c.t.Helper()
	c.g.release <- struct{}{}
	if d := receive(c.t, c.first); d.err != nil || d.res.Outcome != Applied {
		c.t.Fatalf("first delivery: %+v %v; want applied", d.res, d.err)
	}
	c.g.await(c.t, 2) // one transaction for the whole group
}

// TestCoalescedGroup: while one delivery's transaction is in flight, five
// more for the same document wait; one transaction then decides them all,
// each with the outcome it would have had alone, after the others.
func TestCoalescedGroup(t *testing.T) {
	for _, marker := range []bool{false, true} {
		t.Run(fmt.Sprintf("marker=%v", marker), func(t *testing.T) {
			withMarker := func(b beat) beat { b.marker = marker; return b }
			c := startContendedWith(t, withMarker(hbeat(1, "healthy")))
			republished := hbeat(1, "healthy") // event 1 again under a new message id
			republished.msg = "m1-again"
			queued := []struct {
				b       beat
				outcome Outcome
			}{
				{hbeat(3, "degraded"), Applied},   // the newest: the winner
				{hbeat(2, "recovering"), Stale},   // older than the winner
				{republished, Duplicate},          // the stored event
				{hbeat(3, "degraded"), Duplicate}, // the winner, redelivered
				{hbeat(0, "booting"), Stale},      // older than the stored event
			}
			var results []<-chan delivered
			for _, q := range queued {
				results = append(results, c.queue(context.Background(), withMarker(q.b)))
			}
			c.commitFirst()
			c.g.release <- struct{}{}
			var writes, reads int64
			for i, q := range queued {
				d := receive(t, results[i])
				if d.err != nil || d.res.Outcome != q.outcome {
					t.Errorf("queued %d (%s): %s %v; want %s", i, q.b.msg, d.res.Outcome, d.err, q.outcome)
				}
				writes, reads = writes+d.res.Writes(), reads+d.res.Reads()
			}
			c.g.idle(t)
			wantWrites, wantReads := int64(1), int64(1)
			if marker {
				// The winner's marker is created; only the delivery older
				// than the stored state reads its own (a republished event?).
				wantWrites, wantReads = 2, 1+1
			}
			if writes != wantWrites || reads != wantReads {
				t.Errorf("the group cost %d reads and %d writes; want %d and %d", reads, writes, wantReads, wantWrites)
			}
			doc := get(t, c.g.inner, store.Key{Collection: "ops_services", ID: "prod__svc"})
			if doc == nil || doc.Fields["status"] != "degraded" || sub(doc.Fields, MetaField)[metaMessageID] != "m3" {
				t.Errorf("document = %+v; want event 3's", doc)
			}
			for _, i := range []int{0, 2} {
				key := store.Key{Collection: "eventpipe_dedupe", ID: "prod__e-e" + strconv.Itoa(i)}
				if d := get(t, c.g.inner, key); d != nil {
					t.Errorf("marker %s written for a stale event", key)
				}
			}
			if d := get(t, c.g.inner, store.Key{Collection: "eventpipe_dedupe", ID: "prod__e-e3"}); marker && d == nil {
				t.Error("no marker for the winner")
			}
		})
	}
}

// TestCoalescedGroupReadsMarkersAtOnce: a group whose deliveries are all
// older than the stored state reads the document, then the dedupe markers
// of all of them in one batch read (one round trip on Firestore and
// PostgreSQL), not one after another; a republished event among them is
// still told apart as a duplicate.
func TestCoalescedGroupReadsMarkersAtOnce(t *testing.T) {
	withMarker := func(b beat) beat { b.marker = true; return b }
	c := startContendedWith(t, withMarker(hbeat(5, "healthy")))
	// Event 3 was applied before: its marker is live.
	if d := receive(t, deliverAsync(context.Background(), newTestEngine(t, c.g.inner), withMarker(hbeat(3, "booting")))); d.err != nil || d.res.Outcome != Applied {
		t.Fatalf("event 3 alone: %+v %v", d.res, d.err)
	}
	var results []<-chan delivered
	for _, i := range []int{0, 3, 1, 2} { // older than event 5, event 3 republished among them
		b := withMarker(hbeat(i, "old"))
		if i == 3 {
			b.status, b.msg = "booting", "m3-again"
		}
		results = append(results, c.queue(context.Background(), b))
	}
	c.commitFirst()
	c.g.release <- struct{}{}
	want := []Outcome{Stale, Duplicate, Stale, Stale}
	for i, r := range results {
		if d := receive(t, r); d.err != nil || d.res.Outcome != want[i] {
			t.Errorf("queued %d: %s %v; want %s", i, d.res.Outcome, d.err, want[i])
		}
	}
	got := c.g.readsOf(2)
	wantReads := []string{"get prod__svc", "getAll prod__e-e0 prod__e-e3 prod__e-e1 prod__e-e2"}
	if !reflect.DeepEqual(got, wantReads) {
		t.Errorf("the group's reads: %q; want %q", got, wantReads)
	}
}

// TestCoalescedWinnerMarkerExists: when the winner's dedupe marker exists
// (expired but not yet deleted, or left by the same event applied before
// its state was removed), the group reads every marker first, as a lone
// delivery does: an expired marker is replaced, a live one makes the
// winner a duplicate and the next newest event wins.
func TestCoalescedWinnerMarkerExists(t *testing.T) {
	for _, tc := range []struct {
		name     string
		expireAt time.Time
		want     []Outcome // of events 3 and 2
		status   string
	}{
		{"expired", coalesceT0, []Outcome{Applied, Stale}, "degraded"},
		{"live", coalesceT0.Add(48 * time.Hour), []Outcome{Duplicate, Applied}, "recovering"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withMarker := func(b beat) beat { b.marker = true; return b }
			c := startContendedWith(t, withMarker(hbeat(1, "healthy")))
			fp, err := keys.Fingerprint([]byte(`{"eventId":"e3","service":"svc","status":"degraded"}`))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.g.inner.RunTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
				return tx.Set(ctx, store.Key{Collection: "eventpipe_dedupe", ID: "prod__e-e3"}, store.Document{
					Fields:   map[string]any{metaEventKey: "e-e3", metaFingerprint: fp, metaMessageID: "m3"},
					ExpireAt: tc.expireAt})
			}); err != nil {
				t.Fatal(err)
			}
			three := c.queue(context.Background(), withMarker(hbeat(3, "degraded")))
			two := c.queue(context.Background(), withMarker(hbeat(2, "recovering")))
			c.commitFirst()
			c.g.release <- struct{}{} // the group finds the marker
			c.g.await(t, 3)           // and runs again, reading the markers
			c.g.release <- struct{}{}
			for i, d := range []<-chan delivered{three, two} {
				if d := receive(t, d); d.err != nil || d.res.Outcome != tc.want[i] {
					t.Errorf("event %d: %s %v; want %s", 3-i, d.res.Outcome, d.err, tc.want[i])
				}
			}
			doc := get(t, c.g.inner, store.Key{Collection: "ops_services", ID: "prod__svc"})
			if doc.Fields["status"] != tc.status {
				t.Errorf("status %v; want %s", doc.Fields["status"], tc.status)
			}
		})
	}
}

// TestCoalescingNoWaitWithoutContention: a delivery finds no transaction in
// flight on its document and runs at once, whatever runs on other
// documents; with NoCoalescing, deliveries for one document run at once too.
func TestCoalescingNoWaitWithoutContention(t *testing.T) {
	other := hbeat(1, "healthy")
	other.svc = "other"
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		next beat
	}{
		{"another document", func(*Config) {}, other},
		{"no coalescing", func(c *Config) { c.MaxWaitingPerDocument = NoCoalescing }, hbeat(2, "degraded")},
	} {
		c := startContended(t, tc.mod)
		next := deliverAsync(context.Background(), c.e, tc.next)
		c.g.await(t, 2) // started while the first is in flight
		c.g.release <- struct{}{}
		c.g.release <- struct{}{}
		for _, d := range []<-chan delivered{c.first, next} {
			// Either may commit first: the other is then stale.
			if d := receive(t, d); d.err != nil || d.res.Outcome == "" {
				t.Errorf("%s: %+v %v; want an outcome", tc.name, d.res, d.err)
			}
		}
	}
}

// TestCoalescingBound: beyond MaxWaitingPerDocument a delivery fails as
// transient at once, and the waiting ones are still decided.
func TestCoalescingBound(t *testing.T) {
	c := startContended(t, func(c *Config) { c.MaxWaitingPerDocument = 2 })
	w1 := c.queue(context.Background(), hbeat(2, "degraded"))
	w2 := c.queue(context.Background(), hbeat(3, "down"))
	ev, w := hbeat(4, "up").delivery()
	_, err := c.e.Materialize(context.Background(), ev, w)
	var ee *Error
	if !errors.As(err, &ee) || ee.Type != TypeTransient || ee.Code != "RESOURCE_EXHAUSTED" || !ee.Retryable() {
		t.Fatalf("third waiting delivery: %v; want a retryable transient RESOURCE_EXHAUSTED error", err)
	}
	c.commitFirst()
	c.g.release <- struct{}{}
	if d := receive(t, w1); d.err != nil || d.res.Outcome != Stale {
		t.Errorf("waiting 1: %+v %v; want stale", d.res, d.err)
	}
	if d := receive(t, w2); d.err != nil || d.res.Outcome != Applied {
		t.Errorf("waiting 2: %+v %v; want applied", d.res, d.err)
	}
}

// TestCoalescingCancelledWaiter: a waiting delivery whose context ends
// returns a transient error at once and is left out; the others are not.
func TestCoalescingCancelledWaiter(t *testing.T) {
	c := startContended(t)
	ctx, cancel := context.WithCancel(context.Background())
	gone := c.queue(ctx, hbeat(3, "down"))
	stays := c.queue(context.Background(), hbeat(2, "degraded"))
	cancel()
	d := receive(t, gone) // while the first transaction is still in flight
	if ty, _ := Classify(d.err); ty != TypeTransient || !errors.Is(d.err, context.Canceled) {
		t.Fatalf("cancelled waiter: %+v %v; want a transient context.Canceled error", d.res, d.err)
	}
	waitQueued(t, c.e, "svc", 1)
	c.commitFirst()
	c.g.release <- struct{}{}
	if d := receive(t, stays); d.err != nil || d.res.Outcome != Applied {
		t.Errorf("remaining waiter: %+v %v; want applied (the cancelled newer event was never written)", d.res, d.err)
	}
}

// TestCoalescedGroupOutlivesItsRunner: the delivery running a group's
// transaction giving up does not fail the others: the transaction's
// context ends only when every member's has.
func TestCoalescedGroupOutlivesItsRunner(t *testing.T) {
	c := startContended(t)
	ctx, cancel := context.WithCancel(context.Background())
	runner := c.queue(ctx, hbeat(2, "degraded"))
	other := c.queue(context.Background(), hbeat(3, "down"))
	c.commitFirst()
	cancel() // the group's first member (its runner) gives up mid-transaction
	c.g.release <- struct{}{}
	// memstore commits only if the transaction's context is still live.
	if d := receive(t, other); d.err != nil || d.res.Outcome != Applied {
		t.Errorf("other member: %+v %v; want applied", d.res, d.err)
	}
	if d := receive(t, runner); d.err != nil || d.res.Outcome != Stale {
		t.Errorf("runner: %+v %v; want stale (its group committed)", d.res, d.err)
	}
}

// TestCoalescedGroupFails: when the group's transaction fails, every
// member gets the transient error and nothing of theirs is written.
func TestCoalescedGroupFails(t *testing.T) {
	c := startContended(t)
	c.g.fail = map[int]error{2: &store.Error{Op: "commit", Kind: store.KindTransient, Code: "UNAVAILABLE", Err: errors.New("connection reset")}}
	a := c.queue(context.Background(), hbeat(2, "degraded"))
	b := c.queue(context.Background(), hbeat(3, "down"))
	c.commitFirst()
	c.g.release <- struct{}{}
	for _, m := range []<-chan delivered{a, b} {
		d := receive(t, m)
		var ee *Error
		if !errors.As(d.err, &ee) || ee.Type != TypeTransient || ee.Code != "UNAVAILABLE" || d.res.Outcome != "" {
			t.Errorf("member: %+v %v; want the transient UNAVAILABLE error and no outcome", d.res, d.err)
		}
	}
	if doc := get(t, c.g.inner, store.Key{Collection: "ops_services", ID: "prod__svc"}); doc.Fields["status"] != "healthy" {
		t.Errorf("status %v after a failed group; want healthy", doc.Fields["status"])
	}
}

// TestCoalescedGroupPanics: when the group's transaction panics (in the
// delivery running it), the other members get a transient error, never an
// outcome, and the document takes new deliveries again.
func TestCoalescedGroupPanics(t *testing.T) {
	c := startContended(t)
	c.g.panicAt = 2
	runner := make(chan any, 1)
	go func() {
		defer func() { runner <- recover() }()
		ev, w := hbeat(2, "degraded").delivery()
		_, _ = c.e.Materialize(context.Background(), ev, w)
	}()
	waitQueued(t, c.e, "svc", 1)
	c.queued++
	other := c.queue(context.Background(), hbeat(3, "down"))
	c.commitFirst()
	c.g.release <- struct{}{}
	if p := <-runner; p == nil {
		t.Fatal("the runner did not see the panic")
	}
	if d := receive(t, other); errType(d.err) != TypeTransient || d.res.Outcome != "" {
		t.Errorf("other member: %+v %v; want a transient error and no outcome", d.res, d.err)
	}
	next := deliverAsync(context.Background(), c.e, hbeat(4, "up"))
	c.g.await(t, 3) // straight through: the document is free again
	c.g.release <- struct{}{}
	if d := receive(t, next); d.err != nil || d.res.Outcome != Applied {
		t.Errorf("next delivery: %+v %v; want applied", d.res, d.err)
	}
}

func errType(err error) ErrorType {
	t, _ := Classify(err)
	return t
}

// TestCoalescedReusedEventID: a member reusing the stored event's id with
// another payload is poison (error mode) or a duplicate with a warning
// (warn mode), alone: the group still applies the others.
func TestCoalescedReusedEventID(t *testing.T) {
	for _, mode := range []FingerprintMode{FingerprintError, FingerprintWarn} {
		t.Run(string(mode), func(t *testing.T) {
			c := startContended(t, func(c *Config) { c.Fingerprint = mode })
			reused := hbeat(1, "changed") // event 1's id, another payload
			reused.msg = "m1-reused"
			bad := c.queue(context.Background(), reused)
			good := c.queue(context.Background(), hbeat(2, "degraded"))
			c.commitFirst()
			c.g.release <- struct{}{}
			d := receive(t, bad)
			ty, code := Classify(d.err)
			switch mode {
			case FingerprintError:
				if ty != TypePoison || code != "FINGERPRINT_MISMATCH" {
					t.Errorf("reused id: %+v %v; want poison FINGERPRINT_MISMATCH", d.res, d.err)
				}
			case FingerprintWarn:
				if d.err != nil || d.res.Outcome != Duplicate || d.res.Warning == "" {
					t.Errorf("reused id: %+v %v; want a duplicate with a warning", d.res, d.err)
				}
			}
			if d := receive(t, good); d.err != nil || d.res.Outcome != Applied {
				t.Errorf("other member: %+v %v; want applied", d.res, d.err)
			}
		})
	}
}

// TestCoalescingMatchesSerialDelivery delivers random mixes of duplicates,
// redeliveries, producer sequences, clocks far ahead and derived-key
// collisions concurrently on a store whose commits take time, so that
// deliveries coalesce, and compares with the same deliveries one by one
// without coalescing: the same final document (up to which message of a
// republished event it came from: the first one applied) and no event
// applied twice.
func TestCoalescingMatchesSerialDelivery(t *testing.T) {
	for seed := uint64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		withSeq := seed%3 == 0
		var deliveries []beat
		for i := 0; i < 10; i++ {
			b := hbeat(i, "status-"+strconv.Itoa(i))
			b.marker = seed%2 == 0
			b.at = coalesceT0.Add(time.Duration(rng.IntN(5)) * time.Second) // ties on the event time
			if withSeq {
				s := int64(rng.IntN(6))
				b.seq = &s
			}
			if rng.IntN(5) == 0 {
				b.at = b.at.Add(24 * time.Hour) // beyond the skew: ordered by the publish time
			}
			if rng.IntN(4) == 0 {
				b.event = "" // a derived key: identity fields instead of an event id
			}
			deliveries = append(deliveries, b)
			for r := rng.IntN(3); r > 0; r-- {
				again := b
				if rng.IntN(2) == 0 {
					again.msg += "-republished"
				}
				deliveries = append(deliveries, again)
			}
		}
		rng.Shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })

		serial := memstore.New()
		es := newTestEngine(t, serial, func(c *Config) { c.MaxWaitingPerDocument = NoCoalescing })
		for _, b := range deliveries {
			ev, w := identity(b)
			if _, err := es.Materialize(context.Background(), ev, w); err != nil {
				t.Fatalf("seed %d serial: %v", seed, err)
			}
		}
		remote := remotestore.New(2*time.Millisecond, 100)
		ec := newTestEngine(t, remote)
		var wg sync.WaitGroup
		var mu sync.Mutex
		applied := map[string]int{}
		for _, b := range deliveries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ev, w := identity(b)
				r, err := ec.Materialize(context.Background(), ev, w)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					t.Errorf("seed %d: %s: %v", seed, b.msg, err)
				}
				if r.Outcome == Applied {
					applied[b.event+"/"+b.status]++
				}
			}()
		}
		wg.Wait()
		for ev, n := range applied {
			if n > 1 {
				t.Errorf("seed %d: event %s applied %d times", seed, ev, n)
			}
		}
		key := store.Key{Collection: "ops_services", ID: "prod__svc"}
		want, got := get(t, serial, key), get(t, remote, key)
		for _, d := range []*store.Document{want, got} {
			delete(sub(d.Fields, MetaField), metaAppliedAt)
			delete(sub(d.Fields, MetaField), metaMessageID)
		}
		if !reflect.DeepEqual(want.Fields, got.Fields) {
			t.Errorf("seed %d: coalesced final document\n%v\nwant (serial)\n%v", seed, got.Fields, want.Fields)
		}
	}
}

// identity is b's delivery, with identity fields instead of an event id
// when b has none (a derived key, shared by events of one second).
func identity(b beat) (Event, Write) {
	ev, w := b.delivery()
	if b.event == "" {
		ev.Identity = map[string]any{"service": b.svc, "second": b.at.Unix()}
	}
	return ev, w
}
