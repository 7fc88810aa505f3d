// Package boltstore is the embedded bbolt store driver (URL
// "bbolt:///path/file.db"): the default for local runs and single-node use.
//
// bbolt allows one writer at a time and syncs the file on every commit, so a
// transaction per message would be bound to one fsync per message. This
// driver group-commits instead: one committer goroutine takes every
// transaction queued while the previous commit was syncing and runs them all
// in one bbolt transaction, each against its own write buffer (a failing
// transaction function discards only its own writes), then commits once. A
// batch that wrote nothing is rolled back, so duplicates cost no fsync.
package boltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/eventpipe/eventpipe/consumer/store"
)

// MaxBatch bounds how many transactions one group commit holds.
const MaxBatch = 256

// ErrClosed is returned by RunTx after Close.
var ErrClosed = errors.New("boltstore: store is closed")

// Store is a bbolt-backed store.Store.
type Store struct {
	commits   atomic.Int64
	txs       atomic.Int64
	db        *bolt.DB
	reqs      chan *request
	done      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

type request struct {
	ctx context.Context
	fn  func(ctx context.Context, tx store.Tx) error
	err chan error
}

// Open opens (creating if needed, with its directory) the database file at
// path. Another process holding the file makes Open fail after 5 s.
func Open(path string) (*Store, error) {
	if path == "" {
		return nil, &store.Error{Op: "open bbolt", Kind: store.KindConfiguration,
			Err: errors.New("empty path: use bbolt:///absolute/path/file.db")}
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, &store.Error{Op: "open bbolt", Kind: store.KindConfiguration, Err: fmt.Errorf("create directory: %w", err)}
		}
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, &store.Error{Op: "open bbolt " + path, Kind: store.KindConfiguration, Err: err}
	}
	s := &Store{db: db, reqs: make(chan *request), done: make(chan struct{})}
	s.wg.Add(1)
	go s.commitLoop()
	return s, nil
}

// RunTx implements store.Store. fn runs on the committer goroutine, inside a
// group commit; RunTx returns once the commit is durable.
func (s *Store) RunTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	r := &request{ctx: ctx, fn: fn, err: make(chan error, 1)}
	select {
	case s.reqs <- r:
	case <-s.done:
		return &store.Error{Op: "begin", Kind: store.KindConfiguration, Err: ErrClosed}
	case <-ctx.Done():
		return ctx.Err()
	}
	// Wait for the commit even if ctx ends meanwhile: the caller must learn
	// whether its writes were made.
	err := <-r.err
	var p *panicError
	if errors.As(err, &p) {
		panic(p.value)
	}
	return err
}

// panicError carries a panic of a transaction function from the committer
// goroutine back to the caller's, where RunTx panics again.
type panicError struct{ value any }

func (p *panicError) Error() string { return fmt.Sprintf("transaction function panicked: %v", p.value) }

func safeCall(r *request, tx store.Tx) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{value: v}
		}
	}()
	return r.fn(r.ctx, tx)
}

func (s *Store) commitLoop() {
	defer s.wg.Done()
	for {
		var first *request
		select {
		case first = <-s.reqs:
		case <-s.done:
			return
		}
		batch := []*request{first}
	drain:
		for len(batch) < MaxBatch {
			select {
			case r := <-s.reqs:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		s.commit(batch)
	}
}

// commit runs a batch in one bbolt transaction and answers every request.
func (s *Store) commit(batch []*request) {
	results := make([]error, len(batch))
	defer func() {
		for i, r := range batch {
			r.err <- results[i]
		}
	}()
	fail := func(op string, err error) {
		for i := range results {
			if results[i] == nil {
				results[i] = &store.Error{Op: op, Kind: store.KindTransient, Err: err}
			}
		}
	}
	tx, err := s.db.Begin(true)
	if err != nil {
		fail("begin", err)
		return
	}
	wrote := false
	s.txs.Add(int64(len(batch)))
	for i, r := range batch {
		if err := r.ctx.Err(); err != nil {
			results[i] = err
			continue
		}
		bt := store.NewBufferedTx(func(key store.Key) (store.Document, bool, error) {
			return get(tx, key)
		})
		if err := safeCall(r, bt); err != nil {
			results[i] = err
			continue
		}
		if bt.Len() == 0 {
			continue
		}
		if err := bt.Apply(func(key store.Key, doc store.Document) error { return put(tx, key, doc) },
			func(key store.Key) error { return del(tx, key) }); err != nil {
			// bbolt cannot undo part of a transaction: fail the whole batch.
			_ = tx.Rollback()
			fail("write", err)
			return
		}
		wrote = true
	}
	if !wrote {
		_ = tx.Rollback()
		return
	}
	if err := tx.Commit(); err != nil {
		fail("commit", err)
		return
	}
	s.commits.Add(1)
}

// Stats counts the store's work since Open.
type Stats struct {
	// Transactions is how many transaction functions ran.
	Transactions int64
	// Commits is how many bbolt commits (each one fsync) were made; batches
	// that wrote nothing are not committed.
	Commits int64
}

// Stats returns the counts so far.
func (s *Store) Stats() Stats {
	return Stats{Transactions: s.txs.Load(), Commits: s.commits.Load()}
}

func get(tx *bolt.Tx, key store.Key) (store.Document, bool, error) {
	b := tx.Bucket([]byte(key.Collection))
	if b == nil {
		return store.Document{}, false, nil
	}
	v := b.Get([]byte(key.ID))
	if v == nil {
		return store.Document{}, false, nil
	}
	if len(v) < 8 {
		return store.Document{}, false, &store.Error{Op: "get " + key.String(), Kind: store.KindConfiguration,
			Err: errors.New("corrupt record: shorter than its header")}
	}
	fields, err := store.DecodeJSON(v[8:])
	if err != nil {
		return store.Document{}, false, &store.Error{Op: "get " + key.String(), Kind: store.KindConfiguration, Err: err}
	}
	d := store.Document{Fields: fields}
	if n := int64(binary.BigEndian.Uint64(v[:8])); n != 0 {
		d.ExpireAt = time.Unix(0, n).UTC()
	}
	return d, true, nil
}

func put(tx *bolt.Tx, key store.Key, doc store.Document) error {
	b, err := tx.CreateBucketIfNotExists([]byte(key.Collection))
	if err != nil {
		return err
	}
	body, err := store.EncodeJSON(doc)
	if err != nil {
		return err
	}
	v := make([]byte, 8, 8+len(body))
	if !doc.ExpireAt.IsZero() {
		binary.BigEndian.PutUint64(v, uint64(doc.ExpireAt.UnixNano()))
	}
	return b.Put([]byte(key.ID), append(v, body...))
}

func del(tx *bolt.Tx, key store.Key) error {
	b := tx.Bucket([]byte(key.Collection))
	if b == nil {
		return nil
	}
	return b.Delete([]byte(key.ID))
}

// Close stops the committer and closes the file.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.done)
		s.wg.Wait()
		err = s.db.Close()
	})
	return err
}
