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
	read    func(key Key) (Document, bool, error)
	writes  map[Key]bufferedWrite
	order   []Key
	written bool
}

type bufferedWrite struct {
	doc     Document
	deleted bool
}

// NewBufferedTx returns a transaction reading through read, which reports
// whether the document exists.
func NewBufferedTx(read func(key Key) (Document, bool, error)) *BufferedTx {
	return &BufferedTx{read: read}
}

func (t *BufferedTx) lookup(key Key) (Document, bool, error) {
	if w, ok := t.writes[key]; ok {
		return w.doc, !w.deleted, nil
	}
	return t.read(key)
}

// Get implements Tx.
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
	return CopyDocument(d)
}

// Create implements Tx.
func (t *BufferedTx) Create(ctx context.Context, key Key, doc Document) error {
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
	return t.put(key, doc, false)
}

// Set implements Tx.
func (t *BufferedTx) Set(ctx context.Context, key Key, doc Document) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return t.put(key, doc, false)
}

// Delete implements Tx.
func (t *BufferedTx) Delete(ctx context.Context, key Key) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return t.put(key, Document{}, true)
}

func (t *BufferedTx) put(key Key, doc Document, deleted bool) error {
	if !deleted {
		d, err := CopyDocument(doc)
		if err != nil {
			return fmt.Errorf("write %s: %w", key, err)
		}
		doc = d
	}
	if t.writes == nil {
		t.writes = make(map[Key]bufferedWrite)
	}
	if _, ok := t.writes[key]; !ok {
		t.order = append(t.order, key)
	}
	t.writes[key] = bufferedWrite{doc: doc, deleted: deleted}
	t.written = true
	return nil
}

// Len returns the number of documents the transaction writes or deletes.
func (t *BufferedTx) Len() int { return len(t.order) }

// Apply calls set for every written document and del for every deleted one,
// in the order they were first written.
func (t *BufferedTx) Apply(set func(key Key, doc Document) error, del func(key Key) error) error {
	for _, k := range t.order {
		w := t.writes[k]
		var err error
		if w.deleted {
			err = del(k)
		} else {
			err = set(k, w.doc)
		}
		if err != nil {
			return fmt.Errorf("apply %s: %w", k, err)
		}
	}
	return nil
}
