// Package memstore is the in-memory store driver (URL "mem://"), for tests and
// for trying the consumer out. Transactions are serialised by one mutex, so it
// is exactly as isolated as the engine needs and never retries.
package memstore

import (
	"context"
	"errors"
	"sync"

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
}

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

// ErrClosed is returned by RunTx after Close.
var ErrClosed = errors.New("memstore: store is closed")

// RunTx implements store.Store.
func (s *Store) RunTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
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

// Close implements store.Store.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
