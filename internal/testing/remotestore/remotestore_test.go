package remotestore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/internal/testing/remotestore"
	"github.com/eventpipe/eventpipe/internal/testing/storetest"
)

// TestConformance runs the store suite on the model, whose transactions
// run concurrently and abort on conflicts, with attempts enough for the
// suite's concurrent writers of one document all to commit.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{Store: remotestore.New(time.Millisecond, 100)})
}

// TestAbortsConflicts checks the model's contention: of transactions
// that all read one document and write it, released together, one commits
// per round and the others are aborted and retried, and those still losing
// after DefaultAttempts fail with a transient ABORTED error, having
// written nothing.
func TestAbortsConflicts(t *testing.T) {
	s := remotestore.New(5*time.Millisecond, 0)
	key := store.Key{Collection: "c", ID: "hot"}
	const n = 32
	var wg sync.WaitGroup
	var mu sync.Mutex
	var committed, aborted int
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := s.RunTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
				d, err := tx.Get(ctx, key)
				count := int64(0)
				if err == nil {
					count = d.Fields["n"].(int64)
				} else if !errors.Is(err, store.ErrNotFound) {
					return err
				}
				return tx.Set(ctx, key, store.Document{Fields: map[string]any{"n": count + 1}})
			})
			mu.Lock()
			defer mu.Unlock()
			code, kind, _ := store.Code(err)
			switch {
			case err == nil:
				committed++
			case code == "ABORTED" && kind == store.KindTransient:
				aborted++
			default:
				t.Errorf("RunTx: %v; want nil or a transient ABORTED error", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if aborted == 0 || committed == 0 || committed+aborted != n {
		t.Fatalf("%d committed, %d aborted of %d contending transactions; want some of each", committed, aborted, n)
	}
	var got int64
	if err := s.RunTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		d, err := tx.Get(ctx, key)
		if err == nil {
			got = d.Fields["n"].(int64)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got != int64(committed) {
		t.Errorf("counter = %d after %d commits: a lost update or a write of an aborted transaction", got, committed)
	}
}
