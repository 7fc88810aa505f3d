package pgstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/pgstore"
	"github.com/eventpipe/eventpipe/consumer/storetest"
	"github.com/eventpipe/eventpipe/internal/pgtest"
)

func TestConformance(t *testing.T) {
	c := pgtest.Start(t)
	ctx := context.Background()
	s, err := pgstore.Open(ctx, c.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
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
