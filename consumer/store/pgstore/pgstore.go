// Package pgstore is the PostgreSQL store driver (URL "postgres://…"), built
// on pgx: a durable processed-event registry. Every transaction runs
// at SERIALIZABLE isolation and is retried on serialization failures
// (SQLSTATE 40001) and deadlocks (40P01), so concurrent deliveries are
// correct. Documents live in one table, created on first use:
//
//	eventpipe_documents(collection text, id text, data json, expire_at timestamptz,
//	                    PRIMARY KEY (collection, id))
//
// data is json (not jsonb) so numbers and keys come back exactly as written.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventpipe/eventpipe/consumer/store"
)

// Table is the documents table.
const Table = "eventpipe_documents"

// MaxAttempts bounds the retries of a transaction that keeps failing to serialise.
const MaxAttempts = 20

const schema = `
CREATE TABLE IF NOT EXISTS ` + Table + ` (
	collection text NOT NULL,
	id         text NOT NULL,
	data       json NOT NULL,
	expire_at  timestamptz,
	PRIMARY KEY (collection, id)
);
CREATE INDEX IF NOT EXISTS ` + Table + `_expire_at ON ` + Table + ` (expire_at) WHERE expire_at IS NOT NULL;
`

// schemaLock is the advisory lock key that serialises schema creation by
// several processes starting at once.
const schemaLock = 0x6576656e74706970 // "eventpip"

// Store is a PostgreSQL-backed store.Store.
type Store struct {
	pool *pgxpool.Pool
}

// Open connects to url, checks the connection and creates the schema if it
// is missing.
func Open(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, &store.Error{Op: "open postgres", Kind: store.KindConfiguration,
			Err: fmt.Errorf("parse URL: %w (use postgres://user:password@host:5432/database)", err)}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, classify("open postgres", err)
	}
	s := &Store{pool: pool}
	if err := s.ensureSchema(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) ensureSchema(ctx context.Context) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return classify("create schema", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(schemaLock)); err != nil {
		return classify("create schema", err)
	}
	if _, err := tx.Exec(ctx, schema); err != nil {
		return classify("create schema", err)
	}
	return classify("create schema", tx.Commit(ctx))
}

// RunTx implements store.Store.
func (s *Store) RunTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	var err error
	for attempt := 1; attempt <= MaxAttempts; attempt++ {
		err = s.attempt(ctx, fn)
		if !retryable(err) {
			return err
		}
		// Back off a little, with jitter, so the conflicting transactions spread out.
		d := time.Duration(attempt) * time.Duration(1+rand.IntN(3)) * time.Millisecond
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

func (s *Store) attempt(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	ptx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable})
	if err != nil {
		return classify("begin", err)
	}
	defer func() { _ = ptx.Rollback(ctx) }()
	if err := fn(ctx, &tx{tx: ptx}); err != nil {
		return err
	}
	return classify("commit", ptx.Commit(ctx))
}

func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

type tx struct {
	tx      pgx.Tx
	written bool
}

func (t *tx) Get(ctx context.Context, key store.Key) (store.Document, error) {
	if t.written {
		return store.Document{}, fmt.Errorf("get %s: %w", key, store.ErrReadAfterWrite)
	}
	var data []byte
	var exp *time.Time
	err := t.tx.QueryRow(ctx, "SELECT data, expire_at FROM "+Table+" WHERE collection = $1 AND id = $2",
		key.Collection, key.ID).Scan(&data, &exp)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Document{}, fmt.Errorf("get %s: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return store.Document{}, classify("get "+key.String(), err)
	}
	fields, err := store.DecodeJSON(data)
	if err != nil {
		return store.Document{}, &store.Error{Op: "get " + key.String(), Kind: store.KindConfiguration, Err: err}
	}
	d := store.Document{Fields: fields}
	if exp != nil {
		d.ExpireAt = exp.UTC()
	}
	return d, nil
}

func encode(key store.Key, doc store.Document) ([]byte, *time.Time, error) {
	data, err := store.EncodeJSON(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("write %s: %w", key, err)
	}
	if doc.ExpireAt.IsZero() {
		return data, nil, nil
	}
	exp := doc.ExpireAt.UTC()
	return data, &exp, nil
}

func (t *tx) Create(ctx context.Context, key store.Key, doc store.Document) error {
	data, exp, err := encode(key, doc)
	if err != nil {
		return err
	}
	t.written = true
	tag, err := t.tx.Exec(ctx, "INSERT INTO "+Table+" (collection, id, data, expire_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
		key.Collection, key.ID, string(data), exp)
	if err != nil {
		return classify("create "+key.String(), err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("create %s: %w", key, store.ErrAlreadyExists)
	}
	return nil
}

func (t *tx) Set(ctx context.Context, key store.Key, doc store.Document) error {
	data, exp, err := encode(key, doc)
	if err != nil {
		return err
	}
	t.written = true
	_, err = t.tx.Exec(ctx, "INSERT INTO "+Table+" (collection, id, data, expire_at) VALUES ($1, $2, $3, $4) "+
		"ON CONFLICT (collection, id) DO UPDATE SET data = EXCLUDED.data, expire_at = EXCLUDED.expire_at",
		key.Collection, key.ID, string(data), exp)
	return classify("set "+key.String(), err)
}

func (t *tx) Delete(ctx context.Context, key store.Key) error {
	t.written = true
	_, err := t.tx.Exec(ctx, "DELETE FROM "+Table+" WHERE collection = $1 AND id = $2", key.Collection, key.ID)
	return classify("delete "+key.String(), err)
}

// Close closes the connection pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// classify wraps a pgx error as a *store.Error keeping its SQLSTATE.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return &store.Error{Op: op, Code: pe.Code, Kind: kindOf(pe.Code), Err: err}
	}
	// Connection errors and the like: the database may be back soon.
	return &store.Error{Op: op, Kind: store.KindTransient, Err: err}
}

// kindOf classifies a SQLSTATE by its class (the first two characters).
func kindOf(code string) store.Kind {
	if len(code) < 2 {
		return store.KindTransient
	}
	switch code[:2] {
	case "08", "40", "53", "55", "57", "58", "XX":
		// connection, rollback, resources, object state, operator, system
		return store.KindTransient
	default:
		// 28 auth, 3D database, 42 syntax/undefined, 22 data, 23 integrity…
		return store.KindConfiguration
	}
}
