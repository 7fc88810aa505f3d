package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/pgstore"
	"github.com/eventpipe/eventpipe/internal/testing/pgtest"
)

// TestClaimOfAHeldRecordDoesNotWait (PostgreSQL): while another
// transaction holds a reservation's record (a caller claiming, settling or
// releasing it), Claim does not queue behind it: it decides from a
// snapshot at once. A pending record is in_progress (with the holder's
// HeldUntil); a settled one is replayed — concurrent replays of a
// completed key are never told "in progress" (issue 34, item 4).
func TestClaimOfAHeldRecordDoesNotWait(t *testing.T) {
	pg := pgtest.Start(t)
	ctx := context.Background()
	// A lock wait would outlast the test: only an answer without waiting passes.
	s, err := pgstore.Open(ctx, pg.URL+"&lock_timeout=10min&statement_timeout=10min&idle_in_transaction_session_timeout=10min")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	eng, err := engine.New(engine.Config{Store: s, Env: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	req := engine.Request{Scope: "validation", ID: "cb-1", Payload: []byte(`{"callback_id":"cb-1"}`)}
	rc, err := eng.Claim(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	// hold holds the record in another transaction while fn runs.
	hold := func(fn func()) {
		t.Helper()
		coll, id, _ := strings.Cut(rc.Doc, "/")
		held, release, holder := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		go func() {
			holder <- s.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
				if _, err := tx.Get(ctx, store.Key{Collection: coll, ID: id}); err != nil {
					return err
				}
				close(held)
				<-release
				return nil
			})
		}()
		<-held
		fn()
		close(release)
		if err := <-holder; err != nil {
			t.Fatal(err)
		}
	}
	hold(func() {
		got, err := eng.Claim(ctx, req)
		var ee *engine.Error
		if !errors.As(err, &ee) || ee.Type != engine.TypeInProgress || !got.HeldUntil.Equal(rc.Until) || !got.ReceivedAt.Equal(rc.ReceivedAt) {
			t.Fatalf("Claim of a held pending record: %+v, %v; want in_progress with the holder's HeldUntil and ReceivedAt", got, err)
		}
	})
	if _, err := eng.Settle(ctx, rc, engine.Settlement{Status: engine.StatusCompleted, Result: map[string]any{"status": int64(201)}}); err != nil {
		t.Fatal(err)
	}
	hold(func() {
		got, err := eng.Claim(ctx, req)
		if err != nil || !got.Replayed || got.Result["status"] != int64(201) {
			t.Fatalf("Claim of a held completed record: %+v, %v; want it replayed", got, err)
		}
	})
}
