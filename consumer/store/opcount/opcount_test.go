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
