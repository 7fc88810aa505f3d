package boltstore_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/store"

	"github.com/eventpipe/eventpipe/consumer/store/boltstore"
	"github.com/eventpipe/eventpipe/internal/testing/storetest"
)

func open(t testing.TB) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "sub", "eventpipe.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Harness{Store: open(t)})
}

// TestGroupCommit checks that transactions queued during a commit share the
// next one (one fsync for many messages), and that each transaction's
// writes stay its own: a failing one in the batch loses only its writes.
func TestGroupCommit(t *testing.T) {
	s := open(t)
	ctx := context.Background()
	const n = 64
	var entered sync.WaitGroup
	entered.Add(n - 1)
	release := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, n)
	run := func(i int) {
		defer wg.Done()
		errs[i] = s.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
			if i == 0 {
				<-release // hold the committer while the others queue
			}
			if err := tx.Set(ctx, store.Key{Collection: "c", ID: fmt.Sprint(i)}, store.Document{Fields: map[string]any{"i": i}}); err != nil {
				return err
			}
			if i%10 == 5 {
				return errFail
			}
			return nil
		})
	}
	wg.Add(1)
	go run(0)
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			entered.Done()
			run(i)
		}(i)
	}
	entered.Wait()
	time.Sleep(20 * time.Millisecond) // let the queued senders block on the committer
	close(release)
	wg.Wait()
	for i, err := range errs {
		if (i%10 == 5) != errors.Is(err, errFail) || (i%10 != 5 && err != nil) {
			t.Errorf("tx %d: %v", i, err)
		}
	}
	st := s.Stats()
	t.Logf("%d transactions in %d commits", st.Transactions, st.Commits)
	if st.Transactions != n || st.Commits >= n/2 {
		t.Errorf("%d transactions took %d commits; want group commits (far fewer commits than transactions)", st.Transactions, st.Commits)
	}
	err := s.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
		for i := 0; i < n; i++ {
			_, err := tx.Get(ctx, store.Key{Collection: "c", ID: fmt.Sprint(i)})
			if found := err == nil; found == (i%10 == 5) {
				t.Errorf("doc %d: found=%v (err %v); a failed transaction's writes must not be committed, the others' must", i, found, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if after := s.Stats().Commits; after != st.Commits {
		t.Errorf("a read-only transaction committed (%d -> %d commits): it must not cost an fsync", st.Commits, after)
	}
}

var errFail = errors.New("fail this transaction")
