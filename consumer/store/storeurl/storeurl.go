// Package storeurl opens a store driver from a URL (the consumer's
// EVENTPIPE_STORE):
//
//	mem://                          in-memory, for tests
//	bbolt:///var/lib/eventpipe.db   embedded bbolt file (absolute path)
//	postgres://user:pw@host/db      PostgreSQL (also postgresql://)
//	firestore://PROJECT/DATABASE    Firestore; DATABASE defaults to (default)
package storeurl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/eventpipe/eventpipe/consumer/settings"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/boltstore"
	"github.com/eventpipe/eventpipe/consumer/store/fsstore"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	"github.com/eventpipe/eventpipe/consumer/store/pgstore"
)

// Schemes lists the URL schemes Open accepts, for error messages.
const Schemes = "mem, bbolt, postgres, postgresql, firestore"

// Examples lists one valid URL per scheme, for error messages.
const Examples = "mem://, bbolt:///var/lib/eventpipe.db, postgres://user:password@host:5432/db, firestore://PROJECT/DATABASE"

// Open opens the store named by raw. Every error names EVENTPIPE_STORE once,
// so callers return it unwrapped: a bad URL is a *store.Error of kind
// configuration (Op "open") saying what is wrong, the schemes accepted and a
// valid example of each; a driver's error (unreachable database, unwritable
// file) keeps its own *store.Error and is prefixed with the variable and
// scheme, never the URL, which may hold a password.
func Open(ctx context.Context, raw string) (store.Store, error) {
	s, err := open(ctx, raw)
	if err != nil {
		var se *store.Error
		if errors.As(err, &se) && se.Op == opOpen {
			return nil, err // bad() named the variable
		}
		scheme, _, _ := strings.Cut(strings.TrimSpace(raw), "://")
		return nil, fmt.Errorf("%s %s://…: %w", settings.Store, scheme, err)
	}
	return s, nil
}

// opOpen is the Op of Open's own configuration errors.
const opOpen = "open"

func open(ctx context.Context, raw string) (store.Store, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Scheme == "" {
		return nil, bad(raw, "not a URL with a scheme")
	}
	switch u.Scheme {
	case "mem":
		if u.Host != "" || (u.Path != "" && u.Path != "/") {
			return nil, bad(raw, "mem:// takes no host or path")
		}
		return memstore.New(), nil
	case "bbolt":
		if u.Host != "" {
			return nil, bad(raw, fmt.Sprintf("bbolt:// takes an absolute path and no host (found host %q): use three slashes, bbolt:///path/file.db", u.Host))
		}
		if u.Path == "" || u.Path == "/" {
			return nil, bad(raw, "bbolt:// needs a file path, e.g. bbolt:///var/lib/eventpipe.db")
		}
		return boltstore.Open(u.Path)
	case "postgres", "postgresql":
		return pgstore.Open(ctx, raw)
	case "firestore":
		if u.Host == "" {
			return nil, bad(raw, "firestore:// needs a project: firestore://PROJECT/DATABASE")
		}
		db := strings.Trim(u.Path, "/")
		if strings.Contains(db, "/") {
			return nil, bad(raw, "firestore://PROJECT/DATABASE has one path segment, the database id")
		}
		return fsstore.Open(ctx, u.Host, db)
	default:
		return nil, bad(raw, fmt.Sprintf("unknown scheme %q", u.Scheme))
	}
}

func bad(raw, why string) error {
	return &store.Error{Op: opOpen, Kind: store.KindConfiguration,
		Err: fmt.Errorf("%s %q: %s; accepted schemes: %s (e.g. %s)", settings.Store, raw, why, Schemes, Examples)}
}
