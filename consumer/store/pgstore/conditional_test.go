package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/pgstore"
	"github.com/eventpipe/eventpipe/internal/testing/pgtest"
)

// TestWriteIf: every combination of a conditional write (if absent, or
// matching a token and a status) and a stored document (absent, live,
// expired; matching or not) writes exactly when its condition holds, in
// one round trip of one statement; an if-absent write that finds a
// document returns it as stored; a document another transaction holds is
// neither written nor waited for.
func TestWriteIf(t *testing.T) {
	ctx := context.Background()
	pg := pgtest.Start(t, pgtest.NoSync("counts statements, no timing"))
	var w wire
	s, err := pgstore.OpenConfigured(ctx, pg.URL+"&pool_max_conns=2", func(c *pgxpool.Config) { c.ConnConfig.Tracer = &w })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	doc := func(token int64, status string, exp time.Time) store.Document {
		return store.Document{Fields: map[string]any{"token": token, "status": status, "at": now}, ExpireAt: exp}
	}
	stored := map[string]*store.Document{
		"absent":    nil,
		"live":      ptr(doc(3, "pending", now.Add(time.Minute))),
		"no-expiry": ptr(doc(3, "pending", time.Time{})),
		"expired":   ptr(doc(3, "pending", now)),
		"released":  ptr(doc(3, "released", now.Add(time.Minute))),
		"other":     ptr(doc(4, "pending", now.Add(time.Minute))),
	}
	conds := map[string]store.ConditionalWrite{
		"if-absent": {IfAbsent: true},
		"if-match":  {Match: map[string]any{"token": int64(3), "status": "pending"}},
	}
	n := 0
	for sname, st := range stored {
		for cname, cond := range conds {
			n++
			key := store.Key{Collection: "cond", ID: fmt.Sprint("d", n)}
			if st != nil {
				if err := s.RunTx(ctx, func(ctx context.Context, tx store.Tx) error { return tx.Set(ctx, key, *st) }); err != nil {
					t.Fatal(err)
				}
			}
			cond.Key, cond.Now = key, now
			cond.Doc = doc(5, "completed", now.Add(time.Hour))
			w.reset()
			res, err := s.WriteIf(ctx, cond)
			trips, stmts, sql := w.reset()
			if err != nil {
				t.Fatalf("%s on %s: %v", cname, sname, err)
			}
			want := st == nil
			if !cond.IfAbsent {
				want = sname == "live" || sname == "no-expiry"
			}
			if res.Written != want {
				t.Errorf("%s on %s: written %v, want %v", cname, sname, res.Written, want)
			}
			if trips != 1 || stmts != 1 {
				t.Errorf("%s on %s: %d round trips and %d statements, want 1 and 1: %q", cname, sname, trips, stmts, sql)
			}
			var got *store.Document
			if err := s.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
				d, err := tx.Get(ctx, key)
				if err == nil {
					got = &d
				}
				if errors.Is(err, store.ErrNotFound) {
					return nil
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
			wantDoc := st
			if want {
				wantDoc = &cond.Doc
			}
			if !sameDoc(got, wantDoc) {
				t.Errorf("%s on %s: stored %+v, want %+v", cname, sname, got, wantDoc)
			}
			if cond.IfAbsent && !res.Written && !sameDoc(res.Found, st) {
				t.Errorf("%s on %s: found %+v, want %+v", cname, sname, res.Found, st)
			}
		}
	}
	if _, err := s.WriteIf(ctx, store.ConditionalWrite{Key: store.Key{Collection: "cond", ID: "bad"}, Match: map[string]any{"token": 3}}); err == nil {
		t.Error("a Match value of type int: no error")
	}

	// A document another transaction holds: nothing written, nothing
	// found, and no wait (the call returns while the holder still holds it).
	key := store.Key{Collection: "cond", ID: "held"}
	release := hold(t, s, key)
	for cname, cond := range conds {
		cond.Key, cond.Now, cond.Doc = key, now, doc(3, "pending", now.Add(time.Minute))
		res, err := s.WriteIf(ctx, cond)
		if err != nil || res.Written || res.Found != nil {
			t.Errorf("%s on a held document: %+v, %v; want nothing written or found", cname, res, err)
		}
	}
	release()
}

// hold starts a transaction that holds key (it has read it) until the
// returned function is called, which waits for the transaction to end.
func hold(t *testing.T, s store.Store, key store.Key) (release func()) {
	t.Helper()
	held, done, ended := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		ended <- s.RunTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
			if _, err := tx.Get(ctx, key); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			close(held)
			<-done
			return nil
		})
	}()
	<-held
	return func() {
		close(done)
		if err := <-ended; err != nil {
			t.Fatal(err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// sameDoc compares documents by their encoding.
func sameDoc(a, b *store.Document) bool {
	if a == nil || b == nil {
		return a == b
	}
	ea, err1 := store.EncodeJSON(*a)
	eb, err2 := store.EncodeJSON(*b)
	return err1 == nil && err2 == nil && string(ea) == string(eb) && a.ExpireAt.Equal(b.ExpireAt)
}

// TestNewKeyIsOneRoundTripPerCommit: on PostgreSQL a reservation's claim
// of a new key and its settlement cost one round trip each (each one
// statement, its own commit), where the engine's own transactions take
// two each (a read under the lock, then the write and COMMIT); a replay
// of the settled key is one round trip that writes nothing: it takes no
// transaction id, so its commit has nothing to flush.
func TestNewKeyIsOneRoundTripPerCommit(t *testing.T) {
	ctx := context.Background()
	pg := pgtest.Start(t, pgtest.NoSync("counts round trips, no timing"))
	var w wire
	s, err := pgstore.OpenConfigured(ctx, pg.URL+"&pool_max_conns=1", func(c *pgxpool.Config) { c.ConnConfig.Tracer = &w })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mon, err := pgx.Connect(ctx, pg.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close(ctx)
	// nextXID is the next transaction id the server will hand out (reading
	// it takes none).
	nextXID := func() uint64 {
		var x uint64
		if err := mon.QueryRow(ctx, "SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint").Scan(&x); err != nil {
			t.Fatal(err)
		}
		return x
	}
	var replayXIDs uint64
	trips := func(st store.Store, key string) (claim, settle, replay int) {
		t.Helper()
		eng, err := engine.New(engine.Config{Store: st, Env: "prod"})
		if err != nil {
			t.Fatal(err)
		}
		req := engine.Request{Scope: "http-idempotency", ID: key, Payload: []byte(`{"sku":"A-1"}`)}
		w.reset()
		rv, err := eng.Claim(ctx, req)
		if err != nil || rv.Replayed {
			t.Fatalf("claim %s: %+v, %v", key, rv, err)
		}
		claim, _, _ = w.reset()
		if _, err := eng.Settle(ctx, rv, engine.Settlement{Status: engine.StatusCompleted, Result: map[string]any{"status": int64(201)}}); err != nil {
			t.Fatal(err)
		}
		settle, _, _ = w.reset()
		before := nextXID()
		if again, err := eng.Claim(ctx, req); err != nil || !again.Replayed {
			t.Fatalf("replay %s: %+v, %v", key, again, err)
		}
		replay, _, _ = w.reset()
		replayXIDs = nextXID() - before
		return claim, settle, replay
	}
	trips(s, "warm") // prepares the statements on the connection
	if c, st, r := trips(s, "new"); c != 1 || st != 1 || r != 1 {
		t.Errorf("new key: claim %d, settle %d, replay %d round trips; want 1, 1, 1", c, st, r)
	}
	if replayXIDs != 0 {
		t.Errorf("the replay took %d transaction ids, want none (a read-only commit)", replayXIDs)
	}
	c, st, r := trips(txOnly{s}, "general")
	t.Logf("the engine's own transactions: claim %d, settle %d, replay %d round trips", c, st, r)
	if c < 2 || st < 2 {
		t.Errorf("the engine's own transactions took claim %d and settle %d round trips: the count is not measuring what it claims", c, st)
	}
}
