package opcount_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	"github.com/eventpipe/eventpipe/consumer/store/opcount"
)

func TestWrapCountsEveryOperation(t *testing.T) {
	s := opcount.Wrap(memstore.New())
	ctx := context.Background()
	k := store.Key{Collection: "c", ID: "a"}
	err := s.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if _, err := tx.Get(ctx, k); !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := tx.Create(ctx, k, store.Document{}); err != nil {
			return err
		}
		if err := tx.Create(ctx, k, store.Document{}); !errors.Is(err, store.ErrAlreadyExists) {
			t.Errorf("second create: %v", err)
		}
		if err := tx.Set(ctx, k, store.Document{}); err != nil {
			return err
		}
		return tx.Delete(ctx, k)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := opcount.Counts{Reads: 1, Writes: 3, Deletes: 1}
	if got := s.Counts(); got != want {
		t.Errorf("counts = %+v, want %+v (a failed Create still counts)", got, want)
	}
	if d := s.Counts().Sub(opcount.Counts{Reads: 1}); d != (opcount.Counts{Writes: 3, Deletes: 1}) {
		t.Errorf("Sub = %+v", d)
	}
}

func TestGetSharedCountsAReadAndSharesTheDocument(t *testing.T) {
	s := opcount.Wrap(memstore.New())
	ctx := context.Background()
	k := store.Key{Collection: "c", ID: "a"}
	if err := s.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
		return tx.Set(ctx, k, store.Document{Fields: map[string]any{"v": int64(1)}})
	}); err != nil {
		t.Fatal(err)
	}
	before := s.Counts()
	err := s.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
		shared, err := store.GetShared(ctx, tx, k)
		if err != nil {
			return err
		}
		again, err := store.GetShared(ctx, tx, k)
		if err != nil {
			return err
		}
		copied, err := tx.Get(ctx, k)
		if err != nil {
			return err
		}
		if shared.Fields["v"] != int64(1) {
			t.Errorf("GetShared = %v", shared.Fields)
		}
		copied.Fields["v"] = int64(2) // a copy: the store keeps 1
		again.Fields["probe"] = true  // shared: visible through the first read
		if _, ok := shared.Fields["probe"]; !ok {
			t.Error("two GetShared reads returned different maps; want the store's own document")
		}
		delete(again.Fields, "probe")
		if shared.Fields["v"] != int64(1) {
			t.Error("changing Get's document changed the store's")
		}
		if _, err := store.GetShared(ctx, tx, store.Key{Collection: "c", ID: "missing"}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("missing document: %v, want ErrNotFound", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Counts().Sub(before); got != (opcount.Counts{Reads: 4}) {
		t.Errorf("counts = %+v, want 4 reads", got)
	}
}

func TestOwnedWritesCountAndKeepTheDocument(t *testing.T) {
	s := opcount.Wrap(memstore.New())
	ctx := context.Background()
	owned := store.Key{Collection: "c", ID: "owned"}
	converted := store.Key{Collection: "c", ID: "converted"}
	doc := map[string]any{"v": int64(1), "m": map[string]any{"k": "x"}}
	err := s.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := store.CreateOwned(ctx, tx, owned, store.Document{Fields: doc}); err != nil {
			return err
		}
		if err := store.CreateOwned(ctx, tx, owned, store.Document{}); !errors.Is(err, store.ErrAlreadyExists) {
			t.Errorf("second CreateOwned: %v, want ErrAlreadyExists", err)
		}
		// Not in the value model (int): converted, as Set would.
		return store.SetOwned(ctx, tx, converted, store.Document{Fields: map[string]any{"v": 7}})
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Counts(); got != (opcount.Counts{Writes: 3}) {
		t.Errorf("counts = %+v, want 3 writes", got)
	}
	err = s.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
		kept, err := store.GetShared(ctx, tx, owned)
		if err != nil {
			return err
		}
		if reflect.ValueOf(kept.Fields).UnsafePointer() != reflect.ValueOf(doc).UnsafePointer() {
			t.Error("an owned document in the value model was copied")
		}
		conv, err := tx.Get(ctx, converted)
		if err != nil {
			return err
		}
		if conv.Fields["v"] != int64(7) {
			t.Errorf("SetOwned kept %#v; want the value converted to int64", conv.Fields["v"])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
