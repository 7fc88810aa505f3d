package store

import (
	"context"
	"errors"
	"fmt"
)

// ErrReadAfterWrite is returned by a Tx whose Get follows a write: Firestore
// rejects that order, so every driver does, and the engine never does it.
var ErrReadAfterWrite = errors.New("read after write in one transaction: do every Get before Create, Set or Delete")

// BufferedTx is a Tx for drivers that read through a function and apply the
// writes themselves after the transaction function returns (memstore, and
// boltstore, which commits many transactions in one group commit). Its Get
// sees its own buffered writes; its Create fails at once when the document
// exists.
type BufferedTx struct {
	read func(key Key) (Document, bool, error)
	// writes are in the order first written; a transaction writes a handful
	// of documents, so a linear search beats a map.
	writes  []bufferedWrite
	written bool
}

type bufferedWrite struct {
	key     Key
	doc     Document
	deleted bool
}

// find returns the index of key's write, or -1.
func (t *BufferedTx) find(key Key) int {
	for i := range t.writes {
		if t.writes[i].key == key {
			return i
		}
	}
	return -1
}

// NewBufferedTx returns a transaction reading through read, which reports
// whether the document exists and gives documents in the value model (as
// the driver stored them through the transaction's writes, or decoded with
// DecodeJSON). Get hands them out as they are: the driver must not modify
// a document read gave (see Tx).
func NewBufferedTx(read func(key Key) (Document, bool, error)) *BufferedTx {
	return &BufferedTx{read: read}
}

func (t *BufferedTx) lookup(key Key) (Document, bool, error) {
	if i := t.find(key); i >= 0 {
		return t.writes[i].doc, !t.writes[i].deleted, nil
	}
	return t.read(key)
}

// Get implements Tx: the document as the transaction's writes or the
// driver's read function hold it, not a copy (read-only: see Tx).
func (t *BufferedTx) Get(ctx context.Context, key Key) (Document, error) {
	if err := ctx.Err(); err != nil {
		return Document{}, err
	}
	if t.written {
		return Document{}, fmt.Errorf("get %s: %w", key, ErrReadAfterWrite)
	}
	d, ok, err := t.lookup(key)
	if err != nil {
		return Document{}, err
	}
	if !ok {
		return Document{}, fmt.Errorf("get %s: %w", key, ErrNotFound)
	}
	return d, nil
}

// Create implements Tx.
func (t *BufferedTx) Create(ctx context.Context, key Key, doc Document) error {
	return t.create(ctx, key, doc, false)
}

// CreateOwned implements OwnedWriter: Create holding doc as given.
func (t *BufferedTx) CreateOwned(ctx context.Context, key Key, doc Document) error {
	return t.create(ctx, key, doc, true)
}

func (t *BufferedTx) create(ctx context.Context, key Key, doc Document, owned bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, ok, err := t.lookup(key)
	if err != nil {
		return err
	}
	if ok {
		return fmt.Errorf("create %s: %w", key, ErrAlreadyExists)
	}
	return t.put(key, doc, false, owned)
}

// Set implements Tx.
func (t *BufferedTx) Set(ctx context.Context, key Key, doc Document) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return t.put(key, doc, false, false)
}

// SetOwned implements OwnedWriter: Set holding doc as given.
func (t *BufferedTx) SetOwned(ctx context.Context, key Key, doc Document) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return t.put(key, doc, false, true)
}

// Delete implements Tx.
func (t *BufferedTx) Delete(ctx context.Context, key Key) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return t.put(key, Document{}, true, false)
}

// put buffers a write of a copy of doc, which the caller keeps, or with
// owned, of doc itself when it is in the value model already (OwnedWriter).
func (t *BufferedTx) put(key Key, doc Document, deleted, owned bool) error {
	switch {
	case deleted:
	case owned && doc.Fields != nil && InValueModel(doc.Fields):
		doc.ExpireAt = doc.ExpireAt.UTC()
	default:
		d, err := CopyDocument(doc)
		if err != nil {
			return fmt.Errorf("write %s: %w", key, err)
		}
		doc = d
	}
	w := bufferedWrite{key: key, doc: doc, deleted: deleted}
	if i := t.find(key); i >= 0 {
		t.writes[i] = w
	} else {
		t.writes = append(t.writes, w)
	}
	t.written = true
	return nil
}

// Reset makes t a new transaction reading through the same function, for
// a driver that runs one transaction at a time: the previous one must be
// over (its documents applied or dropped).
func (t *BufferedTx) Reset() {
	clear(t.writes) // no reference to the documents written stays behind
	t.writes, t.written = t.writes[:0], false
}

// Len returns the number of documents the transaction writes or deletes.
func (t *BufferedTx) Len() int { return len(t.writes) }

// Apply calls set for every written document and del for every deleted one,
// in the order they were first written.
func (t *BufferedTx) Apply(set func(key Key, doc Document) error, del func(key Key) error) error {
	for _, w := range t.writes {
		var err error
		if w.deleted {
			err = del(w.key)
		} else {
			err = set(w.key, w.doc)
		}
		if err != nil {
			return fmt.Errorf("apply %s: %w", w.key, err)
		}
	}
	return nil
}
