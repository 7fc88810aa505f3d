package engine

import (
	"context"
	"fmt"

	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/opcount"
)

// writeLatest is a lone delivery's ModeLatest write through the store's
// store.LatestWriter: the store decides and writes in one round trip, and
// the engine then runs its own decision (latest, the one home of it) on
// the documents the store found, for the outcome, the warning, the
// operation counts and the logged sequence jump, exactly as its own
// transaction would give them. decided is false when the store could not
// decide (it wrote nothing): the caller runs its own transaction.
func (e *Engine) writeLatest(ctx context.Context, m *materialization) (decided bool, err error) {
	now := e.now()
	m.appliedAt = now
	doc, err := m.document()
	if err != nil {
		// A document that cannot be written (too large) is an error only
		// for a message that applies: the engine's transaction decides.
		return false, nil
	}
	w := store.LatestWrite{Target: m.target, Doc: doc, Now: now, VersionField: MetaField, Version: m.order.storeVersion(),
		Window: m.ordering.Window, MaxJump: m.ordering.MaxSequenceJump, ProducerKey: producerKey(m.order.EventKey)}
	if m.marker != (store.Key{}) {
		w.Marker, w.MarkerDoc = m.marker, e.markerDoc(m, now)
	}
	found, err := e.latestWriter.WriteLatest(ctx, w)
	if err != nil {
		return true, err // as the transaction's error would be: nothing was written
	}
	if !found.Decided {
		return false, nil
	}
	before := m.res.Ops
	var tally opcount.Tally
	snap := &foundTx{target: m.target, marker: m.marker, found: found}
	err = snap.commit(e.latest(ctx, tally.Tx(snap), m, false, now))
	if isAlreadyExists(err) {
		err = snap.commit(e.latest(ctx, tally.Tx(snap), m, true, now))
	}
	m.res.Ops = before.Add(tally.Counts())
	applied := err == nil && m.res.Outcome == Applied
	switch {
	case applied == found.Written:
		return true, err
	case found.Written:
		// The store wrote what the engine would not have: a defect of the
		// driver, which its tests against latest exist to catch. The
		// message is retried; the stored version is the driver's.
		e.cfg.Logger.ErrorContext(ctx, "the store applied a message the engine's decision would not have",
			logfields.DocPath, m.res.DocPath, logfields.MessageID, m.messageID, logfields.Outcome, string(m.res.Outcome))
		return true, newError(TypeTransient, opMaterialize, "the store's decision on %s differs from the engine's (it wrote; the engine's outcome is %q): a defect of the store driver", m.res.DocPath, m.res.Outcome)
	default:
		// The store decided not to write where the engine would: the
		// engine's transaction decides instead (nothing was written).
		e.cfg.Logger.ErrorContext(ctx, "the store declined a message the engine's decision applies; decided by the engine's transaction",
			logfields.DocPath, m.res.DocPath, logfields.MessageID, m.messageID)
		m.res.Ops = before
		return false, nil
	}
}

// foundTx replays a transaction on the documents a store.LatestWriter
// found: Get returns them, a Create of one that exists fails the commit
// (as the transaction of a store that holds writes until its commit, the
// LatestWriter's, would fail), and writes are already done (by the store,
// or not at all).
type foundTx struct {
	target, marker store.Key
	found          store.LatestResult
	// exists is the key of a document a Create found; commit fails on it.
	exists *store.Key
}

// commit ends one replayed transaction whose function returned err.
func (t *foundTx) commit(err error) error {
	if err == nil && t.exists != nil {
		err = fmt.Errorf("create %s: %w", *t.exists, store.ErrAlreadyExists)
	}
	t.exists = nil
	return err
}

func (t *foundTx) doc(key store.Key) (*store.Document, error) {
	switch {
	case key == t.target:
		return t.found.Target, nil
	case key == t.marker && t.marker != (store.Key{}):
		return t.found.Marker, nil
	}
	return nil, fmt.Errorf("replay of a latest-state write read %s, which the store did not read", key)
}

// Get implements store.Tx.
func (t *foundTx) Get(_ context.Context, key store.Key) (store.Document, error) {
	d, err := t.doc(key)
	if err != nil {
		return store.Document{}, err
	}
	if d == nil {
		return store.Document{}, fmt.Errorf("get %s: %w", key, store.ErrNotFound)
	}
	return *d, nil
}

// Create implements store.Tx.
func (t *foundTx) Create(_ context.Context, key store.Key, _ store.Document) error {
	d, err := t.doc(key)
	if err != nil {
		return err
	}
	if d != nil && t.exists == nil {
		t.exists = &key
	}
	return nil
}

// Set implements store.Tx.
func (t *foundTx) Set(_ context.Context, key store.Key, _ store.Document) error {
	_, err := t.doc(key)
	return err
}

// Delete implements store.Tx.
func (t *foundTx) Delete(_ context.Context, key store.Key) error {
	_, err := t.doc(key)
	return err
}
