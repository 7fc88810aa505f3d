// Package opcount counts store operations. Wrap puts any driver in a counter
// (operations are money on Firestore: it bills per document read, write and
// delete); CountTx counts one transaction's operations, which the engine
// reports per message.
package opcount

import (
	"context"
	"sync/atomic"

	"github.com/eventpipe/eventpipe/consumer/store"
)

// Counts are operation totals. Creates and Sets are writes; a Create that
// fails because the document exists still counts (the store did the work).
type Counts struct {
	Reads   int64
	Writes  int64
	Deletes int64
}

// Add returns c + o.
func (c Counts) Add(o Counts) Counts {
	return Counts{Reads: c.Reads + o.Reads, Writes: c.Writes + o.Writes, Deletes: c.Deletes + o.Deletes}
}

// Sub returns c - o.
func (c Counts) Sub(o Counts) Counts {
	return Counts{Reads: c.Reads - o.Reads, Writes: c.Writes - o.Writes, Deletes: c.Deletes - o.Deletes}
}

// counter is a concurrency-safe Counts.
type counter struct {
	reads, writes, deletes atomic.Int64
}

func (c *counter) snapshot() Counts {
	return Counts{Reads: c.reads.Load(), Writes: c.writes.Load(), Deletes: c.deletes.Load()}
}

// Store wraps a store.Store and counts every operation its transactions make,
// including those of transaction attempts that a driver retries.
type Store struct {
	inner store.Store
	c     counter
}

// Wrap returns s wrapped in a counter.
func Wrap(s store.Store) *Store { return &Store{inner: s} }

// RunTx implements store.Store.
func (s *Store) RunTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	return s.inner.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
		return fn(ctx, &countingTx{inner: tx, c: &s.c})
	})
}

// Close implements store.Store.
func (s *Store) Close() error { return s.inner.Close() }

// Counts returns the totals so far.
func (s *Store) Counts() Counts { return s.c.snapshot() }

// Unwrap returns the wrapped store.
func (s *Store) Unwrap() store.Store { return s.inner }

// Tally counts the operations of transactions wrapped with Tx. The zero value
// is ready to use and safe for concurrent use.
type Tally struct {
	c counter
}

// Tx returns tx counting into t.
func (t *Tally) Tx(tx store.Tx) store.Tx { return &countingTx{inner: tx, c: &t.c} }

// Counts returns the totals so far.
func (t *Tally) Counts() Counts { return t.c.snapshot() }

type countingTx struct {
	inner store.Tx
	c     *counter
}

func (t *countingTx) Get(ctx context.Context, key store.Key) (store.Document, error) {
	t.c.reads.Add(1)
	return t.inner.Get(ctx, key)
}

// GetAll implements store.MultiGetter, counting a read per key.
func (t *countingTx) GetAll(ctx context.Context, keys []store.Key) ([]*store.Document, error) {
	t.c.reads.Add(int64(len(keys)))
	return store.GetAll(ctx, t.inner, keys)
}

func (t *countingTx) Create(ctx context.Context, key store.Key, doc store.Document) error {
	t.c.writes.Add(1)
	return t.inner.Create(ctx, key, doc)
}

func (t *countingTx) Set(ctx context.Context, key store.Key, doc store.Document) error {
	t.c.writes.Add(1)
	return t.inner.Set(ctx, key, doc)
}

// CreateOwned implements store.OwnedWriter through the inner transaction's.
func (t *countingTx) CreateOwned(ctx context.Context, key store.Key, doc store.Document) error {
	t.c.writes.Add(1)
	return store.CreateOwned(ctx, t.inner, key, doc)
}

// SetOwned implements store.OwnedWriter through the inner transaction's.
func (t *countingTx) SetOwned(ctx context.Context, key store.Key, doc store.Document) error {
	t.c.writes.Add(1)
	return store.SetOwned(ctx, t.inner, key, doc)
}

func (t *countingTx) Delete(ctx context.Context, key store.Key) error {
	t.c.deletes.Add(1)
	return t.inner.Delete(ctx, key)
}
