package store

import "context"

// OwnedWriter is an optional Tx interface for a driver that keeps the
// documents written to it (the memory store's BufferedTx). CreateOwned and
// SetOwned write doc as Create and Set do, but the caller gives doc away:
// it must not modify doc, nor any map or slice in it, after the call (it
// may still read it, or give it again). The driver may then hold doc as it
// is instead of a copy; isolation is unchanged, since the only one who
// could modify what the store holds has promised not to. A document not in
// the value model is still converted (see CopyDocument).
//
// Only a caller that built doc itself and shares none of it with anyone
// else may give it: the engine does for the documents it builds from a
// route's fields and for its markers. storetest.Guard fails a test when a
// document given away changes.
type OwnedWriter interface {
	CreateOwned(ctx context.Context, key Key, doc Document) error
	SetOwned(ctx context.Context, key Key, doc Document) error
}

// CreateOwned gives doc to tx's CreateOwned when it has one, else calls
// Create (which copies).
func CreateOwned(ctx context.Context, tx Tx, key Key, doc Document) error {
	if ow, ok := tx.(OwnedWriter); ok {
		return ow.CreateOwned(ctx, key, doc)
	}
	return tx.Create(ctx, key, doc)
}

// SetOwned gives doc to tx's SetOwned when it has one, else calls Set
// (which copies).
func SetOwned(ctx context.Context, tx Tx, key Key, doc Document) error {
	if ow, ok := tx.(OwnedWriter); ok {
		return ow.SetOwned(ctx, key, doc)
	}
	return tx.Set(ctx, key, doc)
}
