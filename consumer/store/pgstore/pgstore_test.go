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

	"github.com/jackc/pgx/v5"

	"github.com/eventpipe/eventpipe/consumer/classify"
	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/logfields"

	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/pgstore"
	"github.com/eventpipe/eventpipe/internal/testing/pgtest"
	"github.com/eventpipe/eventpipe/internal/testing/storetest"
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

// TestOpenSizesThePool: a store opened on a URL without pool_max_conns has
// DefaultMaxConns connections at least; the URL's pool_max_conns wins.
func TestOpenSizesThePool(t *testing.T) {
	c, s := start(t)
	if got := pgstore.PoolSize(s); got < pgstore.DefaultMaxConns {
		t.Errorf("pool of %d on %s, want at least %d", got, c.URL, pgstore.DefaultMaxConns)
	}
	sep := "?"
	if strings.Contains(c.URL, "?") {
		sep = "&"
	}
	s2, err := pgstore.Open(context.Background(), c.URL+sep+"pool_max_conns=3")
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got := pgstore.PoolSize(s2); got != 3 {
		t.Errorf("pool of %d with pool_max_conns=3", got)
	}
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
	// A connection in the pool, used just before the server goes down.
	if _, err := eng.Materialize(ctx, engine.Event{MessageID: "m0", EventID: "e0", Payload: []byte(`{"eventId":"e0"}`)},
		engine.Write{Collection: "ops_services", ID: "other", EventTime: time.Now(), Fields: map[string]any{"status": "ok"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	// Deliveries while down meet a connection the server closed and then a
	// refused dial; each is transient, retryable and logged with a SQLSTATE
	// (an empty error_code was the acceptance tests' registry-outage flake).
	for i := range 3 {
		down, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err = eng.Materialize(down, ev, w)
		cancel()
		var ee *engine.Error
		if !errors.As(err, &ee) || ee.Type != engine.TypeTransient || !ee.Retryable() || ee.Code == "" {
			t.Fatalf("delivery %d while PostgreSQL is down: %v; want a retryable transient error with a code", i, err)
		}
		if cl := classify.Of(err); cl.Code != ee.Code || cl.Type != logfields.ErrorTypeTransient {
			t.Fatalf("delivery %d while PostgreSQL is down: logged as %+v, want transient %s", i, cl, ee.Code)
		}
		t.Logf("while down: %v", err)
	}
	_, err = pgstore.Open(ctx, c.URL)
	if code, kind, ok := store.Code(err); !ok || code != "08001" || kind != store.KindTransient {
		t.Errorf("open while PostgreSQL is down: %v (code %q, kind %v); want 08001, transient", err, code, kind)
	}
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

// TestNoWaitAndReadOnlyDoNotWait: while a transaction holds a document, a
// store.NoWait read of it fails at once with store.ErrLocked (transient,
// 55P03) where a plain read would wait, and a store.ReadOnly transaction
// reads its last committed version without waiting and may not write.
// Once the holder commits, both see its write.
func TestNoWaitAndReadOnlyDoNotWait(t *testing.T) {
	c, _ := start(t)
	// A lock_timeout far beyond the test: a read that waited would not end
	// before the holder is released, which happens only after the checks.
	s, err := pgstore.Open(context.Background(), c.URL+"&lock_timeout=10min&statement_timeout=10min&idle_in_transaction_session_timeout=10min")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	key, free := store.Key{Collection: "locks", ID: "held"}, store.Key{Collection: "locks", ID: "free"}
	put := func(k store.Key, v int64) {
		t.Helper()
		if err := s.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
			return tx.Set(ctx, k, store.Document{Fields: map[string]any{"v": v}})
		}); err != nil {
			t.Fatal(err)
		}
	}
	put(key, 1)
	put(free, 1)
	held, release := make(chan struct{}), make(chan struct{})
	holder := make(chan error, 1)
	go func() {
		holder <- s.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
			if _, err := tx.Get(ctx, key); err != nil {
				return err
			}
			close(held)
			<-release
			return tx.Set(ctx, key, store.Document{Fields: map[string]any{"v": int64(2)}})
		})
	}()
	<-held
	read := func(ctx context.Context, k store.Key) (any, error) {
		var v any
		err := s.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
			d, err := tx.Get(ctx, k)
			v = d.Fields["v"]
			return err
		})
		return v, err
	}
	_, err = read(store.NoWait(ctx), key)
	code, kind, _ := store.Code(err)
	if !errors.Is(err, store.ErrLocked) || code != "55P03" || kind != store.KindTransient {
		t.Errorf("NoWait read of a held document: %v; want store.ErrLocked, transient 55P03", err)
	}
	if v, err := read(store.NoWait(ctx), free); err != nil || v != int64(1) {
		t.Errorf("NoWait read of a free document: %v, %v; want 1", v, err)
	}
	if v, err := read(store.ReadOnly(ctx), key); err != nil || v != int64(1) {
		t.Errorf("ReadOnly read of a held document: %v, %v; want the committed 1 without waiting", v, err)
	}
	err = s.RunTx(store.ReadOnly(ctx), func(ctx context.Context, tx store.Tx) error {
		return tx.Set(ctx, free, store.Document{Fields: map[string]any{"v": int64(3)}})
	})
	if code, kind, _ := store.Code(err); err == nil || kind != store.KindConfiguration || code != "" {
		t.Errorf("write in a ReadOnly transaction: %v; want refused", err)
	}
	close(release)
	if err := <-holder; err != nil {
		t.Fatal(err)
	}
	for _, ctx := range []context.Context{store.NoWait(ctx), store.ReadOnly(ctx)} {
		if v, err := read(ctx, key); err != nil || v != int64(2) {
			t.Errorf("after the holder committed: %v, %v; want 2", v, err)
		}
	}
	if v, err := read(ctx, free); err != nil || v != int64(1) {
		t.Errorf("free document after the refused write: %v, %v; want 1", v, err)
	}
}

// TestLockClassIsOurOwn: the store's document locks are two-key advisory
// locks of class pgstore.LockClass. Another application's lock with the
// same numbers in the one-key (bigint) form, or in the two-key form with
// another class, does not hold our document; only the same class and objid
// does (the test can fail).
func TestLockClassIsOurOwn(t *testing.T) {
	c, s := start(t)
	ctx := context.Background()
	key := store.Key{Collection: "locks", ID: "shared-db"}
	obj := pgstore.LockKey(key)
	other, err := pgx.Connect(ctx, c.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	for _, tc := range []struct {
		name, lock, unlock string
		args               []any
		holds              bool
	}{
		{"one-key form, same numbers", "SELECT pg_advisory_lock($1::bigint)", "SELECT pg_advisory_unlock($1::bigint)",
			[]any{int64(pgstore.LockClass)<<32 | int64(uint32(obj))}, false},
		{"two-key form, another class", "SELECT pg_advisory_lock($1, $2)", "SELECT pg_advisory_unlock($1, $2)",
			[]any{pgstore.LockClass + 1, obj}, false},
		{"two-key form, our class", "SELECT pg_advisory_lock($1, $2)", "SELECT pg_advisory_unlock($1, $2)",
			[]any{pgstore.LockClass, obj}, true},
	} {
		if _, err := other.Exec(ctx, tc.lock, tc.args...); err != nil {
			t.Fatal(err)
		}
		err := s.RunTx(store.NoWait(ctx), func(ctx context.Context, tx store.Tx) error {
			_, err := tx.Get(ctx, key)
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			return err
		})
		if held := errors.Is(err, store.ErrLocked); held != tc.holds || (err != nil && !held) {
			t.Errorf("%s: our read got %v; want held=%v", tc.name, err, tc.holds)
		}
		if _, err := other.Exec(ctx, tc.unlock, tc.args...); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLockKeyCollisionOnlySerialises: two documents whose lock keys
// collide (found by search) share a lock, so transactions on them run one
// after the other, and nothing else changes: concurrent read-increment-
// write transactions on both, alone and together, lose no update.
func TestLockKeyCollisionOnlySerialises(t *testing.T) {
	_, s := start(t)
	ctx := context.Background()
	seen := map[int32]string{}
	var a, b store.Key
	for i := 0; ; i++ {
		id := fmt.Sprintf("doc-%d", i)
		k := pgstore.LockKey(store.Key{Collection: "collide", ID: id})
		if prev, ok := seen[k]; ok {
			a, b = store.Key{Collection: "collide", ID: prev}, store.Key{Collection: "collide", ID: id}
			break
		}
		seen[k] = id
	}
	t.Logf("%s and %s share lock key %d", a, b, pgstore.LockKey(a))
	held, release := make(chan struct{}), make(chan struct{})
	holder := make(chan error, 1)
	go func() {
		holder <- s.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
			if _, err := tx.Get(ctx, a); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	err := s.RunTx(store.NoWait(ctx), func(ctx context.Context, tx store.Tx) error {
		_, err := tx.Get(ctx, b)
		return err
	})
	close(release)
	if !errors.Is(err, store.ErrLocked) {
		t.Errorf("read of %s while %s is held: %v; want it held too (the keys collide)", b, a, err)
	}
	if err := <-holder; err != nil {
		t.Fatal(err)
	}
	incr := func(ctx context.Context, tx store.Tx, keys ...store.Key) error {
		docs, err := store.GetAll(ctx, tx, keys)
		if err != nil {
			return err
		}
		for i, k := range keys {
			n := int64(0)
			if docs[i] != nil {
				n = docs[i].Fields["n"].(int64)
			}
			if err := tx.Set(ctx, k, store.Document{Fields: map[string]any{"n": n + 1}}); err != nil {
				return err
			}
		}
		return nil
	}
	const each = 20
	var wg sync.WaitGroup
	errs := make(chan error, 3*each)
	for range each {
		for _, keys := range [][]store.Key{{a}, {b}, {a, b}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- s.RunTx(ctx, func(ctx context.Context, tx store.Tx) error { return incr(ctx, tx, keys...) })
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []store.Key{a, b} {
		err := s.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
			d, err := tx.Get(ctx, k)
			if err == nil && d.Fields["n"] != int64(2*each) {
				return fmt.Errorf("%s: n = %v; want %d (an update was lost)", k, d.Fields["n"], 2*each)
			}
			return err
		})
		if err != nil {
			t.Error(err)
		}
	}
}
