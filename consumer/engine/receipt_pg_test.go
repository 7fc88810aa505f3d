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

// TestReserveOfAHeldReceiptIsInProgressAtOnce (PostgreSQL): while another
// transaction holds a callback's receipt (a delivery reserving, finishing
// or releasing it), Reserve answers in_progress at once (code 55P03, no
// HeldUntil or ReceivedAt: it did not read the receipt) instead of
// queueing behind it; afterwards Reserve reads the receipt as before.
func TestReserveOfAHeldReceiptIsInProgressAtOnce(t *testing.T) {
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
	req := engine.ReceiptRequest{Route: "validation", CallbackID: "cb-1", Payload: []byte(`{"callback_id":"cb-1"}`)}
	rc, err := eng.Reserve(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
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
	got, err := eng.Reserve(ctx, req)
	close(release)
	var ee *engine.Error
	if !errors.As(err, &ee) || ee.Type != engine.TypeInProgress || ee.Code != "55P03" || !errors.Is(err, store.ErrLocked) ||
		!got.HeldUntil.IsZero() || !got.ReceivedAt.IsZero() {
		t.Fatalf("Reserve of a held receipt: %+v, %v; want in_progress 55P03 (store.ErrLocked) without HeldUntil or ReceivedAt", got, err)
	}
	if err := <-holder; err != nil {
		t.Fatal(err)
	}
	got, err = eng.Reserve(ctx, req)
	if !errors.As(err, &ee) || ee.Type != engine.TypeInProgress || got.HeldUntil.IsZero() || !got.ReceivedAt.Equal(rc.ReceivedAt) {
		t.Fatalf("Reserve once the receipt is free: %+v, %v; want in_progress with the reservation's HeldUntil and ReceivedAt", got, err)
	}
}
