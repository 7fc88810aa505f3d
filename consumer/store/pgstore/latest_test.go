package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/pgstore"
	"github.com/eventpipe/eventpipe/internal/testing/pgtest"
)

// wire counts what the store sends: round trips (a query, or a batch of
// statements sent together) and statements.
type wire struct {
	mu                     sync.Mutex
	roundTrips, statements int
	sql                    []string
}

func (w *wire) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.roundTrips++
	w.statements++
	w.sql = append(w.sql, d.SQL)
	return ctx
}

func (w *wire) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (w *wire) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.roundTrips++
	return ctx
}

func (w *wire) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.statements++
	w.sql = append(w.sql, d.SQL)
}

func (w *wire) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (w *wire) reset() (roundTrips, statements int, sql []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	roundTrips, statements, sql = w.roundTrips, w.statements, w.sql
	w.roundTrips, w.statements, w.sql = 0, 0, nil
	return
}

// txOnly hides the store's LatestWriter: the engine runs its own transaction.
type txOnly struct{ store.Store }

// TestWriteLatestIsOneRoundTrip: on PostgreSQL an applied latest-state
// message with a dedupe marker costs one round trip of at most three
// statements, and a duplicate or a stale one one round trip that writes
// nothing (its rows keep their version); the engine's own transaction
// takes two round trips and seven statements for the same message.
func TestWriteLatestIsOneRoundTrip(t *testing.T) {
	ctx := context.Background()
	pg := pgtest.Start(t, pgtest.NoSync("counts statements, no timing"))
	var w wire
	s, err := pgstore.OpenConfigured(ctx, pg.URL+"&pool_max_conns=1", func(c *pgxpool.Config) { c.ConnConfig.Tracer = &w })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	deliver := func(st store.Store, n int, id string) engine.Result {
		t.Helper()
		eng, err := engine.New(engine.Config{Store: st, Env: "prod", CollectionPrefix: "rt_"})
		if err != nil {
			t.Fatal(err)
		}
		ev := engine.Event{MessageID: fmt.Sprint("m", n), PublishTime: at.Add(time.Duration(n) * time.Second),
			EventID: fmt.Sprint("e", n), Payload: []byte(fmt.Sprintf(`{"n":%d}`, n))}
		res, err := eng.Materialize(ctx, ev, engine.Write{Collection: "docs", ID: id, Fields: map[string]any{"n": int64(n)},
			EventTime: ev.PublishTime, DedupeMarker: true})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	conn, err := pgx.Connect(ctx, pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// versions lists every row with its version (xmin: the transaction
	// that wrote it).
	versions := func() string {
		var out string
		if err := conn.QueryRow(ctx, "SELECT string_agg(id || ':' || xmin::text, ',' ORDER BY id) FROM "+pgstore.Table).Scan(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	deliver(s, 1, "warm") // prepares the statements on the connection
	w.reset()
	for _, tc := range []struct {
		name   string
		n      int
		want   engine.Outcome
		writes bool
	}{
		{name: "applied", n: 5, want: engine.Applied, writes: true},
		{name: "duplicate", n: 5, want: engine.Duplicate},
		{name: "stale", n: 3, want: engine.Stale},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := versions()
			res := deliver(s, tc.n, "doc")
			trips, stmts, sql := w.reset()
			if res.Outcome != tc.want {
				t.Fatalf("outcome %s, want %s", res.Outcome, tc.want)
			}
			if trips != 1 || stmts > 3 {
				t.Errorf("%d round trips and %d statements, want 1 and at most 3:\n%q", trips, stmts, sql)
			}
			if after := versions(); (after != before) != tc.writes {
				t.Errorf("rows before %s, after %s: want a write %v", before, after, tc.writes)
			}
		})
	}
	// The engine's own transaction, for the same kind of message.
	deliver(txOnly{s}, 7, "other")
	trips, stmts, sql := w.reset()
	t.Logf("the engine's own transaction: %d round trips, %d statements: %q", trips, stmts, sql)
	if trips < 2 || stmts < 5 {
		t.Errorf("the engine's own transaction took %d round trips and %d statements: the count is not measuring what it claims", trips, stmts)
	}
}

// TestWriteLatestLeavesAHeldDocumentToTheEngine: WriteLatest waits for a
// document another transaction holds only the probe (the session's
// lock_timeout), then writes nothing and leaves the decision to the
// engine's transaction, which waits as RunTx does (bounded, with its
// connection given back); once the document is free it decides.
func TestWriteLatestLeavesAHeldDocumentToTheEngine(t *testing.T) {
	ctx := context.Background()
	_, s := start(t)
	target := store.Key{Collection: "held", ID: "doc"}
	w := store.LatestWrite{Target: target, Doc: store.Document{Fields: map[string]any{"v": int64(1)}}, Now: time.Now(),
		VersionField: engine.MetaField, Window: time.Minute, MaxJump: 10}
	release := hold(t, s, target)
	started := time.Now()
	res, err := s.WriteLatest(ctx, w)
	if err != nil || res.Decided || res.Written {
		t.Fatalf("WriteLatest on a held document: %+v, %v; want undecided and no error", res, err)
	}
	if waited, probe := time.Since(started), s.Settings().Probe; waited > probe+2*time.Second {
		t.Errorf("WriteLatest waited %v for the held document; the probe is %v", waited, probe)
	}
	release()
	res, err = s.WriteLatest(ctx, w)
	if err != nil || !res.Decided || !res.Written || res.Target != nil {
		t.Fatalf("WriteLatest on the free, absent document: %+v, %v; want decided and written, nothing found", res, err)
	}
}
