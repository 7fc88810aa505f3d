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
