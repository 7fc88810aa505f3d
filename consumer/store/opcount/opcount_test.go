package opcount_test

import (
	"context"
	"errors"
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

// TestGetCountsARead: each Get through the counter counts one read,
// missing documents included, and hands out the store's document (which
// is read-only: store.Tx).
func TestGetCountsARead(t *testing.T) {
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
		for range 2 {
			d, err := tx.Get(ctx, k)
			if err != nil {
				return err
			}
			if d.Fields["v"] != int64(1) {
				t.Errorf("Get through the counter: v = %v, want 1", d.Fields["v"])
			}
		}
		if _, err := tx.Get(ctx, store.Key{Collection: "c", ID: "missing"}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("missing document: %v, want ErrNotFound", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Counts().Sub(before); got != (opcount.Counts{Reads: 3}) {
		t.Errorf("counts = %+v, want 3 reads", got)
	}
}
