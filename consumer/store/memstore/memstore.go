// Package memstore is the in-memory store driver (URL "mem://"), for tests and
// for trying the consumer out. Transactions are serialised by one mutex, so it
// is exactly as isolated as the engine needs and never retries.
//
// NewRemote models a remote database such as Firestore instead, for
// benchmarks and contention tests: a commit takes a latency, transactions
// run concurrently, and one whose reads another commit overwrote meanwhile
// is aborted and retried, then fails as transient (ABORTED).
package memstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/eventpipe/eventpipe/consumer/store"
)

// Store keeps documents in a map. The zero value is not usable; call New.
type Store struct {
	mu sync.Mutex
	// docs are the documents as the transactions' writes copied them.
	// Reads hand them out as they are (read-only: see store.Tx); a write
	// replaces an entry and never changes one.
	docs   map[store.Key]store.Document
	closed bool
	// tx is the transaction, reset for each RunTx (they hold mu in turn).
	tx *store.BufferedTx
	// read, set and del are the transactions' accessors, made once.
	read func(key store.Key) (store.Document, bool, error)
	set  func(key store.Key, doc store.Document) error
	del  func(key store.Key) error
	// remote is set by NewRemote.
	remote *remote
}

// remote is NewRemote's model: commit latency and optimistic concurrency.
type remote struct {
	commitLatency time.Duration
	attempts      int
	// versions counts the writes of every document written (guarded by mu).
	versions map[store.Key]uint64
}

// RemoteAttempts is how many times NewRemote's store tries a transaction
// that keeps being aborted, by default: the default of Firestore's Go
// client (firestore.DefaultTransactionMaxAttempts).
const RemoteAttempts = 5

// New returns an empty store.
func New() *Store {
	s := &Store{docs: make(map[store.Key]store.Document)}
	s.read = func(key store.Key) (store.Document, bool, error) {
		d, ok := s.docs[key]
		return d, ok, nil
	}
	s.set = func(key store.Key, doc store.Document) error {
		s.docs[key] = doc
		return nil
	}
	s.del = func(key store.Key) error {
		delete(s.docs, key)
		return nil
	}
	s.tx = store.NewBufferedTx(s.read)
	return s
}

// NewRemote returns an empty store that behaves like a remote database
// under contention, as Firestore does: every transaction takes
// commitLatency to commit (Firestore's client commits read-only ones too),
// transactions run concurrently, and a commit whose reads another commit
// has overwritten since is aborted (Firestore's locks abort or hold back
// the younger of two conflicting transactions). An aborted
// transaction is retried after a random pause of up to commitLatency,
// doubling with each attempt up to 30 times commitLatency (Firestore's
// client pauses up to 1 s, doubling up to 30 s), for up to
// attempts (0 for RemoteAttempts); then RunTx fails with a transient store
// error of code ABORTED.
func NewRemote(commitLatency time.Duration, attempts int) *Store {
	if attempts <= 0 {
		attempts = RemoteAttempts
	}
	s := New()
	s.remote = &remote{commitLatency: commitLatency, attempts: attempts, versions: map[store.Key]uint64{}}
	return s
}

// errAborted is a commit that lost a conflict.
var errAborted = errors.New("the transaction's reads were overwritten by a concurrent commit")

// runRemote is RunTx of a NewRemote store.
func (s *Store) runRemote(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	pause := s.remote.commitLatency
	for attempt := 1; ; attempt++ {
		err := s.attemptRemote(ctx, fn)
		if !errors.Is(err, errAborted) {
			return err
		}
		if attempt == s.remote.attempts {
			return &store.Error{Op: "commit", Kind: store.KindTransient, Code: "ABORTED",
				Err: fmt.Errorf("%w (%d attempts)", err, attempt)}
		}
		if err := sleep(ctx, rand.N(pause+1)); err != nil {
			return err
		}
		pause = min(pause*2, 30*s.remote.commitLatency)
	}
}

// attemptRemote is one attempt of a NewRemote store's transaction.
func (s *Store) attemptRemote(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	read := map[store.Key]uint64{} // the version of every document read
	tx := store.NewBufferedTx(func(key store.Key) (store.Document, bool, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			return store.Document{}, false, &store.Error{Op: "get", Kind: store.KindConfiguration, Err: ErrClosed}
		}
		read[key] = s.remote.versions[key]
		d, ok := s.docs[key]
		return d, ok, nil
	})
	if err := fn(ctx, tx); err != nil {
		return err
	}
	if err := sleep(ctx, s.remote.commitLatency); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return &store.Error{Op: "commit", Kind: store.KindConfiguration, Err: ErrClosed}
	}
	for key, v := range read {
		if s.remote.versions[key] != v {
			return errAborted
		}
	}
	return tx.Apply(func(key store.Key, doc store.Document) error {
		s.remote.versions[key]++
		return s.set(key, doc)
	}, func(key store.Key) error {
		s.remote.versions[key]++
		return s.del(key)
	})
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ErrClosed is returned by RunTx after Close.
var ErrClosed = errors.New("memstore: store is closed")

// RunTx implements store.Store.
func (s *Store) RunTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	if s.remote != nil {
		return s.runRemote(ctx, fn)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return &store.Error{Op: "begin", Kind: store.KindConfiguration, Err: ErrClosed}
	}
	// The transaction's state is reused; fn must not keep tx (store.Tx
	// is valid inside fn only).
	tx := s.tx
	tx.Reset()
	defer tx.Reset() // keep no written document reachable from here
	if err := fn(ctx, tx); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return tx.Apply(s.set, s.del)
}

// Len returns the number of stored documents (for tests).
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.docs)
}

// Close implements store.Store.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
