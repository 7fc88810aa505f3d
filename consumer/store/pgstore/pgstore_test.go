package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/engine"

	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/pgstore"
	"github.com/eventpipe/eventpipe/consumer/storetest"
	"github.com/eventpipe/eventpipe/internal/pgtest"
)

// start starts a throwaway cluster and opens the store on it.
func start(t *testing.T) (*pgtest.Cluster, *pgstore.Store) {
	t.Helper()
	c := pgtest.Start(t)
	s, err := pgstore.Open(context.Background(), c.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return c, s
}

func TestConformance(t *testing.T) {
	c, s := start(t)
	ctx := context.Background()
	// A second Open on the same database finds the schema in place.
	s2, err := pgstore.Open(ctx, c.URL)
	if err != nil {
		t.Fatalf("second open: %v", err)
	}
	s2.Close()
	storetest.Run(t, storetest.Harness{Store: s})

	t.Run("ErrorsKeepSQLSTATE", func(t *testing.T) {
		bad := strings.Replace(c.URL, "/postgres?", "/no_such_db?", 1)
		_, err := pgstore.Open(ctx, bad)
		code, kind, ok := store.Code(err)
		if !ok || code != "3D000" || kind != store.KindConfiguration {
			t.Errorf("open of a missing database: %v (code %q, kind %v); want SQLSTATE 3D000, configuration", err, code, kind)
		}
	})
}

// TestOutage is a registry outage against a real server: while
// PostgreSQL is down a delivery fails with a retryable transient error and
// records nothing; once it is back, the redelivery applies the event once.
func TestOutage(t *testing.T) {
	c, s := start(t)
	ctx := context.Background()
	eng, err := engine.New(engine.Config{Store: s, Env: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	ev := engine.Event{MessageID: "m1", EventID: "e1", Payload: []byte(`{"eventId":"e1"}`)}
	w := engine.Write{Collection: "ops_services", ID: "svc", EventTime: time.Now(), Fields: map[string]any{"status": "ok"}}
	if err := c.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	down, cancel := context.WithTimeout(ctx, 10*time.Second)
	_, err = eng.Materialize(down, ev, w)
	cancel()
	var ee *engine.Error
	if !errors.As(err, &ee) || ee.Type != engine.TypeTransient || !ee.Retryable() {
		t.Fatalf("delivery while PostgreSQL is down: %v; want a retryable transient error", err)
	}
	t.Logf("while down: %v", err)
	if err := c.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := eng.Materialize(ctx, ev, w)
	if err != nil || r.Outcome != engine.Applied {
		t.Fatalf("redelivery after the outage: %+v, %v; want applied (nothing was recorded while down)", r, err)
	}
	if r, err := eng.Materialize(ctx, ev, w); err != nil || r.Outcome != engine.Duplicate {
		t.Fatalf("third delivery: %+v, %v; want duplicate", r, err)
	}
}

// TestDeadlockRetried: two transactions read two documents in opposite
// orders and then each writes the document the other read, so their
// document locks deadlock at commit. PostgreSQL aborts one (40P01), the
// driver runs it again, and both commit.
func TestDeadlockRetried(t *testing.T) {
	_, s := start(t)
	a := store.Key{Collection: "deadlock", ID: "a"}
	b := store.Key{Collection: "deadlock", ID: "b"}
	var attempts atomic.Int64
	var bothRead sync.WaitGroup
	bothRead.Add(2)
	run := func(read, write store.Key, errs chan<- error) {
		first := true
		errs <- s.RunTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
			attempts.Add(1)
			if _, err := tx.Get(ctx, read); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if first {
				// Both hold their first lock before either asks for the other.
				first = false
				bothRead.Done()
				bothRead.Wait()
			}
			return tx.Set(ctx, write, store.Document{Fields: map[string]any{"by": read.ID}})
		})
	}
	errs := make(chan error, 2)
	go run(a, b, errs)
	go run(b, a, errs)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("transaction failed: %v; want the deadlock's victim retried", err)
		}
	}
	if n := attempts.Load(); n < 3 {
		t.Errorf("%d attempts for 2 transactions; want a retry (the deadlock did not happen)", n)
	}
}

// TestLockWaitCancelled: a transaction whose context ends while it waits
// for a document another transaction holds fails with the context's error,
// and leaves no lock behind: once the holder commits, the document is free.
func TestLockWaitCancelled(t *testing.T) {
	_, s := start(t)
	key := store.Key{Collection: "locks", ID: "held"}
	held, release := make(chan struct{}), make(chan struct{})
	holder := make(chan error, 1)
	go func() {
		holder <- s.RunTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
			if _, err := tx.Get(ctx, key); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			close(held)
			<-release
			return tx.Set(ctx, key, store.Document{Fields: map[string]any{"v": int64(1)}})
		})
	}()
	<-held
	// The holder keeps the lock until release, so this wait always ends by the deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	err := s.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
		_, err := tx.Get(ctx, key)
		return err
	})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting for a held document past the deadline: %v; want context.DeadlineExceeded", err)
	}
	close(release)
	if err := <-holder; err != nil {
		t.Fatalf("holder: %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = s.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
		d, err := tx.Get(ctx, key)
		if err == nil && d.Fields["v"] != int64(1) {
			return fmt.Errorf("read %v, want the holder's write", d.Fields)
		}
		if err != nil {
			return err
		}
		return tx.Set(ctx, key, store.Document{Fields: map[string]any{"v": int64(2)}})
	})
	if err != nil {
		t.Fatalf("after the holder committed: %v; want the document free", err)
	}
}
