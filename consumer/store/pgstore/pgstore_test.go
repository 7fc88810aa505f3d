package pgstore_test

import (
	"context"
	"errors"
	"strings"
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
