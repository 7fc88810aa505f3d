// Package storetest is the conformance suite every store driver passes: the
// same cases, concurrency included, run against memory, bbolt, PostgreSQL
// and Firestore. It tests the driver through the raw store.Store interface
// and through the engine (duplicates, ordering, leases and fencing, receipts,
// expiry, id normalisation, failpoint crashes, outages, operation counts).
package storetest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/store"
)

// Harness describes the driver under test.
type Harness struct {
	// Store is the store under test. Cases share it and keep apart by using
	// collections named after the case.
	Store store.Store
	// NoIsolation, when not empty, says why the store's transactions are not
	// isolated (the npm Firestore emulator): cases that need isolation are
	// skipped with this reason. Leave it empty for real stores.
	NoIsolation string
	// NoFullInt64, when not empty, says why integers beyond ±2^53 cannot be
	// stored (the npm emulator keeps numbers as JavaScript doubles); the
	// case storing them is skipped with this reason.
	NoFullInt64 string
	// SetMerges, when not empty, says why Set merges into an existing
	// document instead of replacing it (a bug of the npm emulator: real
	// Firestore replaces); the suite then checks only the fields written.
	SetMerges string
	// Concurrency is how many goroutines the concurrent cases use; default 16.
	Concurrency int
}

// Run runs every case against h.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.Concurrency == 0 {
		h.Concurrency = 16
	}
	s := &suite{h: h}
	for _, c := range s.cases() {
		t.Run(c.name, func(t *testing.T) {
			if c.isolation && h.NoIsolation != "" {
				t.Skipf("needs transaction isolation, which this store lacks: %s", h.NoIsolation)
			}
			if c.int64 && h.NoFullInt64 != "" {
				t.Skipf("stores integers beyond 2^53, which this store cannot: %s", h.NoFullInt64)
			}
			c.run(t, s.env(t))
		})
	}
}

type testCase struct {
	name      string
	isolation bool
	int64     bool
	run       func(t *testing.T, e *env)
}

type suite struct {
	h   Harness
	seq atomic.Int64
}

// env is one case's world: a collection prefix of its own, a fake clock and
// engine constructors.
type env struct {
	t      *testing.T
	h      Harness
	st     store.Store
	prefix string
	clock  *Clock
	n      int
}

func (s *suite) env(t *testing.T) *env {
	name := strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(t.Name()), "_"), "_")
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	prefix := fmt.Sprintf("st%d_%d_%s_", time.Now().UnixNano()%1e6, s.seq.Add(1), name)
	return &env{t: t, h: s.h, st: Guard(t, s.h.Store), prefix: prefix, clock: NewClock(time.Date(2026, 1, 8, 10, 0, 0, 0, time.UTC)), n: s.h.Concurrency}
}

// collection returns a target collection private to the case.
func (e *env) collection(name string) string { return e.prefix + name }

// engine returns an engine on the case's store, prefix and clock; mod may
// change the config.
func (e *env) engine(mod ...func(*engine.Config)) *engine.Engine {
	e.t.Helper()
	cfg := engine.Config{Store: e.st, Env: "prod", CollectionPrefix: e.prefix, Now: e.clock.Now,
		MaxAttempts: 3, LeaseDuration: time.Minute}
	for _, m := range mod {
		m(&cfg)
	}
	eng, err := engine.New(cfg)
	if err != nil {
		e.t.Fatalf("engine.New: %v", err)
	}
	return eng
}

// get reads a document outside the engine (nil when absent).
func (e *env) get(key store.Key) *store.Document {
	e.t.Helper()
	var doc *store.Document
	err := e.st.RunTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		doc = nil
		d, err := tx.Get(ctx, key)
		if err == nil {
			doc = &d
		} else if !isNotFound(err) {
			return err
		}
		return nil
	})
	if err != nil {
		e.t.Fatalf("get %s: %v", key, err)
	}
	return doc
}

// put writes a document outside the engine (a record as an earlier
// release wrote it).
func (e *env) put(key store.Key, fields map[string]any, expireAt time.Time) {
	e.t.Helper()
	if err := e.st.RunTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		return tx.Set(ctx, key, store.Document{Fields: fields, ExpireAt: expireAt})
	}); err != nil {
		e.t.Fatalf("put %s: %v", key, err)
	}
}

// parallel runs fn(i) on e.n goroutines released together.
func (e *env) parallel(fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < e.n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			fn(i)
		}(i)
	}
	close(start)
	wg.Wait()
}

// Clock is a settable clock for engine.Config.Now, safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock showing t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// errType returns the engine error type of err ("" for nil).
func errType(err error) engine.ErrorType {
	t, _ := engine.Classify(err)
	return t
}

func isNotFound(err error) bool      { return errors.Is(err, store.ErrNotFound) }
func isAlreadyExists(err error) bool { return errors.Is(err, store.ErrAlreadyExists) }

// countErrs counts outcomes from many goroutines.
type countErrs struct {
	mu   sync.Mutex
	n    int
	errs []error
}

func (c *countErrs) add(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	if err != nil {
		c.errs = append(c.errs, err)
	}
}
