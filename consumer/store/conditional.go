package store

import (
	"context"
	"time"
)

// ConditionalWriter is an optional Store capability: one document written
// in a transaction of its own, only when the document stored at its key is
// as the caller expects, in one round trip, where a transaction through
// RunTx takes one to read the document and another to write it. A driver
// offers it when its database can check the condition in the statement
// that writes (pgstore: an insert that does nothing on a conflict, an
// update whose condition is checked on the row as it is).
//
// The engine uses it for a reservation's claim of a new key (write if
// absent) and its settlement (write if the record is still the claim's),
// and runs its own transaction through RunTx whenever WriteIf did not
// write, so that transaction stays the one home of every decision: a
// driver may write less often than its condition allows (a document held
// by another transaction right now: WriteIf does not wait for it), never
// when the condition does not hold.
type ConditionalWriter interface {
	WriteIf(ctx context.Context, w ConditionalWrite) (ConditionalResult, error)
}

// ConditionalWrite is one document's conditional write.
type ConditionalWrite struct {
	// Key is the document written; Doc what is written there.
	Key Key
	Doc Document
	// IfAbsent: write only when no document has Key (one that has expired
	// but is still stored counts as present). Else write only when a
	// document live at Now (Document.Expired) has Key and, for every name
	// in Match, a top-level field of that name equal to the value (a
	// string, an int64 or a bool).
	IfAbsent bool
	Match    map[string]any
	// Now is the time against which the document found expires.
	Now time.Time
}

// ConditionalResult is what WriteIf did and found.
type ConditionalResult struct {
	// Written: Doc was written (and committed).
	Written bool
	// Found is, for an IfAbsent write that was not made, the document
	// that was at Key when the write was tried (read-only, as what Get
	// returns); nil when the driver did not read it (the document was held
	// by another transaction, or it appeared after the statement began).
	// A document found may have changed since: a caller that decides from
	// it decides as of the moment the write was tried.
	Found *Document
}
