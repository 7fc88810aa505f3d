package storetest

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/store"
)

// Guard wraps st so that t fails when a document st handed out changes:
// what Get and GetAll return is read-only (store.Tx), for the caller, who
// must copy before changing it, and for the driver, which must replace a
// document it holds rather than change it. Every document read is
// recorded with its encoding; each transaction's reads are checked when
// RunTx returns, and every read once more when the test ends (a change
// made later, to a document the store still shares, shows there). Run
// wraps the store under test with it, so every case, engine paths
// included, checks the contract on every driver.
//
// A driver's store.LatestWriter and store.ConditionalWriter are kept (the
// cases then run the engine's one-round-trip writes on it), and the
// documents they report as found are guarded as reads are.
func Guard(t testing.TB, st store.Store) store.Store {
	g := &guard{Store: st, t: t}
	t.Cleanup(func() { g.check(g.all, "after the test") })
	var lw store.LatestWriter
	if inner, ok := st.(store.LatestWriter); ok {
		lw = latestGuard{g: g, lw: inner}
	}
	var cw store.ConditionalWriter
	if inner, ok := st.(store.ConditionalWriter); ok {
		cw = conditionalGuard{g: g, cw: inner}
	}
	return store.WithWriters(g, lw, cw)
}

// conditionalGuard adds a driver's store.ConditionalWriter to a guard: the
// document it reports as found is guarded as a read is.
type conditionalGuard struct {
	g  *guard
	cw store.ConditionalWriter
}

// WriteIf implements store.ConditionalWriter.
func (c conditionalGuard) WriteIf(ctx context.Context, w store.ConditionalWrite) (store.ConditionalResult, error) {
	res, err := c.cw.WriteIf(ctx, w)
	if res.Found != nil {
		gt := &guardTx{g: c.g}
		gt.record(w.Key, *res.Found)
		c.g.keepWriteReads(gt)
	}
	return res, err
}

// latestGuard adds a driver's store.LatestWriter to a guard: the
// documents it reports as found are guarded as a transaction's reads are.
type latestGuard struct {
	g  *guard
	lw store.LatestWriter
}

// WriteLatest implements store.LatestWriter: the documents found are
// recorded as a transaction's reads and checked at once and at the end.
func (l latestGuard) WriteLatest(ctx context.Context, w store.LatestWrite) (store.LatestResult, error) {
	res, err := l.lw.WriteLatest(ctx, w)
	gt := &guardTx{g: l.g}
	if res.Target != nil {
		gt.record(w.Target, *res.Target)
	}
	if res.Marker != nil {
		gt.record(w.Marker, *res.Marker)
	}
	l.g.keepWriteReads(gt)
	return res, err
}

// keepWriteReads checks the documents a one-statement write reported as
// found, recorded in gt, now and again when the test ends.
func (g *guard) keepWriteReads(gt *guardTx) {
	g.check(gt.reads, "when its write ended")
	g.mu.Lock()
	g.all = append(g.all, gt.reads...)
	g.mu.Unlock()
}

type guard struct {
	store.Store
	t  testing.TB
	mu sync.Mutex
	// all holds every read made through the guard.
	all []*read
}

// read is one document handed out and its encoding then; changed is set
// once the change is reported (it is reported once).
type read struct {
	key     store.Key
	doc     *store.Document
	enc     []byte
	changed bool
	// given: the document was given to the store (store.OwnedWriter),
	// not handed out by it.
	given bool
}

// RunTx implements store.Store: fn's transaction records what it reads,
// which is checked once RunTx returns.
func (g *guard) RunTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	gt := &guardTx{g: g}
	err := g.Store.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
		gt.inner = tx
		return fn(ctx, gt)
	})
	gt.mu.Lock()
	reads := gt.reads
	gt.mu.Unlock()
	g.check(reads, "when its transaction ended")
	g.mu.Lock()
	g.all = append(g.all, reads...)
	g.mu.Unlock()
	return err
}

// check fails the test for every read whose document no longer encodes
// as it did.
func (g *guard) check(reads []*read, when string) {
	g.t.Helper()
	for _, r := range reads {
		if r.changed {
			continue
		}
		now, err := store.EncodeJSON(*r.doc)
		if err != nil {
			now = []byte("(no longer encodes: " + err.Error() + ")")
		}
		if !bytes.Equal(now, r.enc) {
			r.changed = true
			if r.given {
				g.t.Errorf("the document %s given to the store (CreateOwned or SetOwned) changed %s: given as %s, now %s (a document given away must not be modified: the store may hold it as it is)",
					r.key, when, shown(r.enc), shown(now))
				continue
			}
			g.t.Errorf("the document %s handed out by Get changed %s: read as %s, now %s (what a store hands out is read-only: copy it before changing it, and a driver replaces what it holds rather than changing it)",
				r.key, when, shown(r.enc), shown(now))
		}
	}
}

// shown cuts an encoding to what a failure message can show.
func shown(enc []byte) string {
	const max = 2000
	if len(enc) > max {
		return string(enc[:max]) + "…"
	}
	return string(enc)
}

// guardTx records what its transaction reads.
type guardTx struct {
	g     *guard
	inner store.Tx
	mu    sync.Mutex
	reads []*read
}

// record keeps doc (a copy of the Document, sharing its Fields) and its
// encoding now. A document that does not encode (none that a store holds)
// is not recorded.
func (t *guardTx) record(key store.Key, doc store.Document) {
	t.recordAs(key, doc, false)
}

// recordAs is record, marking a document given to the store with given.
func (t *guardTx) recordAs(key store.Key, doc store.Document, given bool) {
	enc, err := store.EncodeJSON(doc)
	if err != nil {
		return
	}
	t.mu.Lock()
	t.reads = append(t.reads, &read{key: key, doc: &doc, enc: enc, given: given})
	t.mu.Unlock()
}

func (t *guardTx) Get(ctx context.Context, key store.Key) (store.Document, error) {
	d, err := t.inner.Get(ctx, key)
	if err == nil {
		t.record(key, d)
	}
	return d, err
}

// GetAll implements store.MultiGetter through the inner transaction's, so
// a driver's batch read is what the case exercises.
func (t *guardTx) GetAll(ctx context.Context, keys []store.Key) ([]*store.Document, error) {
	docs, err := store.GetAll(ctx, t.inner, keys)
	if err != nil {
		return nil, err
	}
	if len(docs) != len(keys) {
		return nil, fmt.Errorf("GetAll of %d keys returned %d documents", len(keys), len(docs))
	}
	for i, d := range docs {
		if d != nil {
			t.record(keys[i], *d)
		}
	}
	return docs, nil
}

func (t *guardTx) Create(ctx context.Context, key store.Key, doc store.Document) error {
	return t.inner.Create(ctx, key, doc)
}

func (t *guardTx) Set(ctx context.Context, key store.Key, doc store.Document) error {
	return t.inner.Set(ctx, key, doc)
}

// CreateOwned implements store.OwnedWriter through the inner transaction's;
// doc is guarded as a read is: it must not change after it is given.
func (t *guardTx) CreateOwned(ctx context.Context, key store.Key, doc store.Document) error {
	t.recordAs(key, doc, true)
	return store.CreateOwned(ctx, t.inner, key, doc)
}

// SetOwned implements store.OwnedWriter as CreateOwned does.
func (t *guardTx) SetOwned(ctx context.Context, key store.Key, doc store.Document) error {
	t.recordAs(key, doc, true)
	return store.SetOwned(ctx, t.inner, key, doc)
}

func (t *guardTx) Delete(ctx context.Context, key store.Key) error {
	return t.inner.Delete(ctx, key)
}
