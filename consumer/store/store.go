// Package store defines the minimal transactional document interface that the
// idempotency engine (package engine) is written against, and the value model,
// errors and JSON codec that every driver shares.
//
// A driver implements Store: RunTx runs a function inside one serialisable
// transaction that can Get, Create (if absent), Set and Delete documents. The
// engine keeps every read before every write in a transaction (Firestore
// requires it) and tolerates the transaction function running more than once
// (drivers retry on conflicts). Drivers live in sub-packages: memstore, boltstore,
// pgstore and fsstore; storeurl opens one from a URL; opcount counts operations.
package store

import (
	"context"
	"errors"
	"time"
)

// Key names one document: a collection and a document id. Both must be valid
// Firestore names; package keys builds ids that are.
type Key struct {
	Collection string
	ID         string
}

// String returns the document path "collection/id".
func (k Key) String() string { return k.Collection + "/" + k.ID }

// Document is a stored document. Fields holds JSON-like values: nil, bool,
// int64, float64, string, time.Time, []any and map[string]any. ExpireAt, when
// not zero, is stored as the timestamp field "expireAt" that Firestore's TTL
// policy deletes on; readers must still treat an expired document as absent
// (package engine does), because TTL deletion can lag by a day.
type Document struct {
	Fields   map[string]any
	ExpireAt time.Time
}

// ExpireAtField is the name of the expiry field every engine record carries.
const ExpireAtField = "expireAt"

// Expired reports whether d has an expiry at or before now.
func (d Document) Expired(now time.Time) bool {
	return !d.ExpireAt.IsZero() && !d.ExpireAt.After(now)
}

// Tx is one transaction. Reads (Get) must come before writes (Create, Set,
// Delete). Create fails with ErrAlreadyExists when the document exists; a
// driver may report that either from Create itself or, as Firestore does,
// from the commit (RunTx's result).
//
// What Get returns is read-only: its Fields, and every map and slice in
// them, may be the store's own (the memory store hands out what it holds,
// without a copy), so the caller must not modify them, inside the
// transaction or after it. A caller that changes a document it read
// copies first (maps.Clone of Fields for top-level changes, CopyDocument
// for deeper ones). In turn a driver never modifies a document it has
// handed out: a later write replaces what it holds rather than changing
// it, so a document read stays as it was read. Create and Set do not keep
// the caller's document: the caller may reuse it. The conformance suite
// (internal/testing/storetest) checks both sides: drivers, and every
// engine path it runs, through a store that fails the test when a document
// it handed out or was given changes (storetest.Guard).
type Tx interface {
	// Get returns the document (read-only: see Tx) or an error wrapping
	// ErrNotFound.
	Get(ctx context.Context, key Key) (Document, error)
	// Create writes doc only if no document has key.
	Create(ctx context.Context, key Key, doc Document) error
	// Set writes doc, replacing any document with key.
	Set(ctx context.Context, key Key, doc Document) error
	// Delete removes the document; deleting an absent document is not an error.
	Delete(ctx context.Context, key Key) error
}

// MultiGetter is an optional Tx method: GetAll reads several documents in
// one round trip (Firestore's batch get, one PostgreSQL pipeline) instead of
// one each. The result has one entry per key, nil where no document has
// it. The same rules as for Get apply: reads before writes, and the
// documents are read-only.
type MultiGetter interface {
	GetAll(ctx context.Context, keys []Key) ([]*Document, error)
}

// GetAll reads keys with tx's GetAll when it has one, else with one Get
// per key.
func GetAll(ctx context.Context, tx Tx, keys []Key) ([]*Document, error) {
	if mg, ok := tx.(MultiGetter); ok {
		return mg.GetAll(ctx, keys)
	}
	docs := make([]*Document, len(keys))
	for i, k := range keys {
		d, err := tx.Get(ctx, k)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		docs[i] = &d
	}
	return docs, nil
}

// Store is a transactional document store.
type Store interface {
	// RunTx runs fn in a transaction and commits it if fn returns nil. fn may
	// run more than once (drivers retry on conflicts and batch commits), so it
	// must reset any state it captures each time it starts.
	RunTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	// Close releases the store's resources.
	Close() error
}

// Sentinel errors every driver reports (wrapped) for the cases the engine relies on.
var (
	// ErrNotFound: Get found no document.
	ErrNotFound = errors.New("document not found")
	// ErrAlreadyExists: Create found an existing document.
	ErrAlreadyExists = errors.New("document already exists")
)

// ErrLocked: a read made with a NoWait context found the document held by
// another transaction. Nothing was read; the caller may retry later.
var ErrLocked = errors.New("document held by another transaction")

type noWaitKey struct{}

// NoWait returns a context whose reads do not wait for a document another
// transaction holds: a driver that locks documents (pgstore) fails such a
// read at once with an error wrapping ErrLocked. Drivers without per-document
// waits ignore it. The engine reads a callback's receipt this way, so a
// retry that arrives while the callback's final transaction runs is told
// "in progress" at once instead of queueing behind it.
func NoWait(ctx context.Context) context.Context {
	return context.WithValue(ctx, noWaitKey{}, true)
}

// IsNoWait reports whether ctx was made by NoWait.
func IsNoWait(ctx context.Context) bool {
	v, _ := ctx.Value(noWaitKey{}).(bool)
	return v
}

type readOnlyKey struct{}

// ReadOnly returns a context for RunTx whose transaction only reads: a
// driver that locks documents (pgstore) reads a consistent snapshot of the
// committed documents without locking them, so the transaction waits for
// no other; a write in it fails. Drivers without per-document locks ignore
// it. For checks made ahead of a transaction that decides (the callback
// handler's "does the target exist" before it reserves a receipt).
func ReadOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, readOnlyKey{}, true)
}

// IsReadOnly reports whether ctx was made by ReadOnly.
func IsReadOnly(ctx context.Context) bool {
	v, _ := ctx.Value(readOnlyKey{}).(bool)
	return v
}
