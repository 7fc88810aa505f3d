package storeurl_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/boltstore"
	"github.com/eventpipe/eventpipe/consumer/store/fsstore"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	"github.com/eventpipe/eventpipe/consumer/store/pgstore"
	"github.com/eventpipe/eventpipe/consumer/store/storeurl"
	"github.com/eventpipe/eventpipe/internal/testing/fsemulator"
	"github.com/eventpipe/eventpipe/internal/testing/pgtest"
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
		if !strings.Contains(err.Error(), tc.mention) || !strings.Contains(err.Error(), "bbolt:///var/lib/eventpipe.db") ||
			!strings.Contains(err.Error(), "accepted schemes: "+storeurl.Schemes) {
			t.Errorf("Open(%q): %q should mention %q and show the accepted schemes and valid examples", tc.url, err, tc.mention)
		}
		assertReadsOnce(t, tc.url, err)
	}
}

// TestOpenUnknownSchemeMessage pins the whole message of the issue 26 case: it reads
// once, names the variable and lists what is accepted.
func TestOpenUnknownSchemeMessage(t *testing.T) {
	_, err := storeurl.Open(context.Background(), "nope://x")
	want := `store open: configuration: EVENTPIPE_STORE "nope://x": unknown scheme "nope"; ` +
		`accepted schemes: mem, bbolt, postgres, postgresql, firestore ` +
		`(e.g. mem://, bbolt:///var/lib/eventpipe.db, postgres://user:password@host:5432/db, firestore://PROJECT/DATABASE)`
	if err == nil || err.Error() != want {
		t.Fatalf("Open(nope://x) = %v\nwant %s", err, want)
	}
}

// TestOpenDriverErrorsNameTheVariable: a driver's own error (here bbolt on a path
// whose directory is a file) keeps its kind and gains the variable and scheme once,
// never the URL (a PostgreSQL one may hold a password).
func TestOpenDriverErrorsNameTheVariable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	url := "bbolt://" + filepath.Join(file, "e.db")
	_, err := storeurl.Open(context.Background(), url)
	if _, kind, ok := store.Code(err); !ok || kind != store.KindConfiguration {
		t.Fatalf("Open(%q): %v; want the driver's configuration *store.Error", url, err)
	}
	if !strings.HasPrefix(err.Error(), "EVENTPIPE_STORE bbolt://…: store open bbolt") || strings.Contains(err.Error(), url) {
		t.Fatalf("Open(%q): %q", url, err)
	}
	assertReadsOnce(t, url, err)
}

// assertReadsOnce: the variable and the store's "open" appear once in err.
func assertReadsOnce(t *testing.T, url string, err error) {
	t.Helper()
	for _, word := range []string{"EVENTPIPE_STORE", "open"} {
		if n := strings.Count(err.Error(), word); n != 1 {
			t.Errorf("Open(%q): %q says %q %d times, want once", url, err, word, n)
		}
	}
}
