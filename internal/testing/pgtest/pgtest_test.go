package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/eventpipe/eventpipe/internal/testing/pgtest"
)

func TestStartQueryStop(t *testing.T) {
	ctx := context.Background()
	c, err := pgtest.StartCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, c.URL)
	if err != nil {
		t.Fatal(err)
	}
	var v string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	t.Logf("PostgreSQL %s on port %d", v, c.Port)
	url, err := c.NewDatabase(ctx, "second")
	if err != nil {
		t.Fatal(err)
	}
	conn2, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to the new database: %v", err)
	}
	var db string
	if err := conn2.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil || db != "second" {
		t.Fatalf("current_database = %q, %v", db, err)
	}
	conn2.Close(ctx)
	conn.Close(ctx)
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := pgx.Connect(ctx, c.URL); err == nil {
		t.Error("server still answers after Stop")
	}
}

// TestSyncsByDefault: a cluster syncs as Cloud SQL does unless the caller
// says why it need not, so a figure taken on the default cluster is one a
// user would see.
func TestSyncsByDefault(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts []pgtest.Option
		want string
	}{
		{"default", nil, "on"},
		{"NoSync", []pgtest.Option{pgtest.NoSync("this test reads the settings only")}, "off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := pgtest.Start(t, tc.opts...)
			if got := c.Syncing(); got != (tc.want == "on") {
				t.Errorf("Syncing() = %v, want %v", got, tc.want == "on")
			}
			conn, err := pgx.Connect(ctx, c.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			for _, setting := range []string{"fsync", "synchronous_commit", "full_page_writes"} {
				var v string
				if err := conn.QueryRow(ctx, "SELECT current_setting($1)", setting).Scan(&v); err != nil {
					t.Fatal(err)
				}
				if v != tc.want {
					t.Errorf("%s = %s, want %s (%s)", setting, v, tc.want, c)
				}
			}
		})
	}
}

func TestNoSyncNeedsAReason(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NoSync(\"\") did not panic: a cluster that does not sync must say why")
		}
	}()
	pgtest.NoSync(" ")
}
