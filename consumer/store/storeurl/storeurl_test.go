package storeurl_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/boltstore"
	"github.com/eventpipe/eventpipe/consumer/store/fsstore"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	"github.com/eventpipe/eventpipe/consumer/store/pgstore"
	"github.com/eventpipe/eventpipe/consumer/store/storeurl"
	"github.com/eventpipe/eventpipe/internal/fsemulator"
	"github.com/eventpipe/eventpipe/internal/pgtest"
)

func TestOpen(t *testing.T) {
	ctx := context.Background()
	pg := pgtest.Start(t)
	fsemulator.Start(t)
	tests := []struct {
		url  string
		want any
	}{
		{"mem://", &memstore.Store{}},
		{"bbolt://" + filepath.Join(t.TempDir(), "a", "e.db"), &boltstore.Store{}},
		{pg.URL, &pgstore.Store{}},
		{strings.Replace(pg.URL, "postgres://", "postgresql://", 1), &pgstore.Store{}},
		{"firestore://eventpipe-test/(default)", &fsstore.Store{}},
		{"firestore://eventpipe-test", &fsstore.Store{}},
	}
	for _, tc := range tests {
		s, err := storeurl.Open(ctx, tc.url)
		if err != nil {
			t.Errorf("Open(%q): %v", tc.url, err)
			continue
		}
		if got, want := fmt.Sprintf("%T", s), fmt.Sprintf("%T", tc.want); got != want {
			t.Errorf("Open(%q) = %s, want %s", tc.url, got, want)
		}
		if err := s.Close(); err != nil {
			t.Errorf("close %q: %v", tc.url, err)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	for _, tc := range []struct{ url, mention string }{
		{"", "scheme"},
		{"/var/lib/x.db", "scheme"},
		{"redis://localhost", `unknown scheme "redis"`},
		{"mem://host", "no host"},
		{"bbolt://var/lib/x.db", "three slashes"},
		{"bbolt://", "file path"},
		{"firestore:///db", "needs a project"},
		{"firestore://p/db/extra", "one path segment"},
	} {
		_, err := storeurl.Open(context.Background(), tc.url)
		code, kind, ok := store.Code(err)
		if !ok || kind != store.KindConfiguration || code != "" {
			t.Errorf("Open(%q): %v; want a configuration *store.Error", tc.url, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.mention) || !strings.Contains(err.Error(), "bbolt:///var/lib/eventpipe.db") {
			t.Errorf("Open(%q): %q should mention %q and show valid examples", tc.url, err, tc.mention)
		}
	}
}
