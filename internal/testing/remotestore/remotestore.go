// Package remotestore is an in-memory store that behaves like a remote
// database such as Firestore, for benchmarks and contention tests: a commit
// takes a latency, transactions run concurrently, and one whose reads
// another commit overwrote meanwhile is aborted and retried, then fails as
// transient (ABORTED). memstore, the product's memory driver, serialises
// transactions instead and never retries.
package remotestore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/eventpipe/eventpipe/consumer/store"
)

// DefaultAttempts is how many times a Store tries a transaction that keeps
// being aborted, by default: the default of Firestore's Go client
// (firestore.DefaultTransactionMaxAttempts).
const DefaultAttempts = 5

// Store is the remote-database model. The zero value is not usable; call New.
type Store struct {
	commitLatency time.Duration
	attempts      int

	mu sync.Mutex
	// docs are the documents as the transactions' writes copied them;
	// reads hand them out as they are (read-only: see store.Tx).
	docs map[store.Key]store.Document
	// versions counts the writes of every document written.
	versions map[store.Key]uint64
	closed   bool
}

// New returns an empty store that behaves like a remote database under
// contention, as Firestore does: every transaction takes commitLatency to
// commit (Firestore's client commits read-only ones too), transactions run
// concurrently, and a commit whose reads another commit has overwritten
// since is aborted (Firestore's locks abort or hold back the younger of two
// conflicting transactions). An aborted transaction is retried after a
// random pause of up to commitLatency, doubling with each attempt up to 30
// times commitLatency (Firestore's client pauses up to 1 s, doubling up to
// 30 s), for up to attempts (0 for DefaultAttempts); then RunTx fails with a
// transient store error of code ABORTED.
func New(commitLatency time.Duration, attempts int) *Store {
	if attempts <= 0 {
		attempts = DefaultAttempts
	}
	return &Store{commitLatency: commitLatency, attempts: attempts,
		docs: map[store.Key]store.Document{}, versions: map[store.Key]uint64{}}
}

// errClosed is returned by RunTx after Close.
var errClosed = errors.New("remotestore: store is closed")

// errAborted is a commit that lost a conflict.
var errAborted = errors.New("the transaction's reads were overwritten by a concurrent commit")

// RunTx implements store.Store.
func (s *Store) RunTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	pause := s.commitLatency
	for attempt := 1; ; attempt++ {
		err := s.attempt(ctx, fn)
		if !errors.Is(err, errAborted) {
			return err
		}
		if attempt == s.attempts {
			return &store.Error{Op: "commit", Kind: store.KindTransient, Code: "ABORTED",
				Err: fmt.Errorf("%w (%d attempts)", err, attempt)}
		}
		if err := sleep(ctx, rand.N(pause+1)); err != nil {
			return err
		}
		pause = min(pause*2, 30*s.commitLatency)
	}
}

// attempt is one attempt of a transaction.
func (s *Store) attempt(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	read := map[store.Key]uint64{} // the version of every document read
	tx := store.NewBufferedTx(func(key store.Key) (store.Document, bool, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			return store.Document{}, false, &store.Error{Op: "get", Kind: store.KindConfiguration, Err: errClosed}
		}
		read[key] = s.versions[key]
		d, ok := s.docs[key]
		return d, ok, nil
	})
	if err := fn(ctx, tx); err != nil {
		return err
	}
	if err := sleep(ctx, s.commitLatency); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return &store.Error{Op: "commit", Kind: store.KindConfiguration, Err: errClosed}
	}
	for key, v := range read {
		if s.versions[key] != v {
			return errAborted
		}
	}
	return tx.Apply(func(key store.Key, doc store.Document) error {
		s.versions[key]++
		s.docs[key] = doc
		return nil
	}, func(key store.Key) error {
		s.versions[key]++
		delete(s.docs, key)
		return nil
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

// Close implements store.Store.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
