package store

import (
	"context"
	"time"
)

// LatestWriter is an optional Store capability: it decides and applies the
// engine's latest-state write of one message (package engine, Materialize)
// in one round trip, where a transaction through RunTx takes one to read
// the document and another to write it. A driver offers it when its
// database can take the decision itself (pgstore: one SQL statement under
// the documents' locks); the engine uses it when the store has it and runs
// its own transaction otherwise, so every other driver stays written
// against RunTx alone.
//
// The decision is the engine's, defined once, in Go, in package engine: a
// driver implements it in its database's language, and package engine's
// tests check that implementation against the Go decision on generated
// documents and messages. WriteLatest writes Doc (and MarkerDoc at Marker,
// when Marker is set) exactly when the engine would apply the message to
// the documents it finds, and nothing otherwise: a duplicate or stale
// message costs one round trip and no write. It returns the documents as
// it found them, from which the engine derives the outcome, the counts and
// the log exactly as its own transaction does. Where the driver cannot
// decide (a stored value it cannot read as the engine does, a lock it did
// not get at once), it writes nothing and says so (LatestResult.Decided
// false), and the engine runs its own transaction: a driver may decide
// less than the engine, never differently.
type LatestWriter interface {
	WriteLatest(ctx context.Context, w LatestWrite) (LatestResult, error)
}

// LatestWrite is one message's latest-state write.
type LatestWrite struct {
	// Target is the document the message updates; Doc is what it writes
	// there if the message applies.
	Target Key
	Doc    Document
	// Marker, when set, is the message's dedupe marker, written with
	// MarkerDoc when the message applies; one that is live and records
	// the same event makes the message a duplicate.
	Marker    Key
	MarkerDoc Document
	// Now is the time against which documents expire (Document.Expired).
	Now time.Time
	// VersionField is the map field of the target document that records
	// its version (engine.MetaField), with the fields named Version*.
	VersionField string
	// Version is the message's version.
	Version Version
	// Window is the ordering window (engine.Config.MaxEventSkew) and
	// MaxJump the largest sequence step trusted across it.
	Window  time.Duration
	MaxJump uint64
	// ProducerKey says the event key is the producer's own event id, which
	// names one event whatever the payload: a stored fingerprint that
	// differs under it is a reused event id, never another event.
	ProducerKey bool
}

// Version is what orders one version of a document against another, as
// the engine records it under LatestWrite.VersionField.
type Version struct {
	HasSequence bool
	Sequence    int64
	EventTime   time.Time
	PublishTime time.Time
	EventKey    string
	Fingerprint string
}

// Field names of a recorded version (under LatestWrite.VersionField) and
// of a dedupe marker's fingerprint (VersionFingerprint).
const (
	VersionSequence    = "sequence"
	VersionEventTime   = "eventTime"
	VersionPublishTime = "publishTime"
	VersionEventKey    = "eventKey"
	VersionFingerprint = "fingerprint"
)

// LatestResult is what WriteLatest did and found.
type LatestResult struct {
	// Decided is false when the driver could not decide: it wrote nothing
	// and the caller decides in a transaction of its own.
	Decided bool
	// Written: Doc (and MarkerDoc) were written.
	Written bool
	// Target and Marker are the documents as found, before any write (nil:
	// absent), with at least the fields the engine's decision reads: the
	// target's VersionField and the marker's VersionFingerprint (a driver
	// may leave the others out: they would only travel to be ignored);
	// read-only, as what Get returns.
	Target, Marker *Document
}
