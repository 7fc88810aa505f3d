// Package pgstore is the PostgreSQL store driver (URL "postgres://…"), built
// on pgx: a durable processed-event registry. Transactions are serialisable
// by strict two-phase locking on documents: one transaction-level advisory
// lock per document, taken before the document is first read or written
// and held until commit, with each read a READ COMMITTED statement issued
// after its lock is granted. Concurrent deliveries for one document run one
// after the other; those for different documents never abort each other
// (SERIALIZABLE's predicate locks cover index pages, so writers of
// neighbouring keys did). Deadlocks (SQLSTATE 40P01) are retried. Every
// process writing the table must use this driver at this version: a
// writer that does not take the locks is not serialised with it.
//
// Every wait is bounded (Settings): a transaction waits for held documents
// at most lock_timeout in all, then fails with a transient error; only
// Settings.Waiters of the pool's connections may wait longer than a short
// probe, so waiters for held documents never take the whole pool; the
// server ends statements that run past statement_timeout and sessions
// that sit in a transaction past idle_in_transaction_session_timeout (an
// instance frozen or cut off while holding locks). Documents live in one
// table, created on first use:
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
	"hash/fnv"
	"math/rand/v2"
	"slices"
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

// LockClass is the first key of every advisory lock the store takes
// (pg_advisory_xact_lock(LockClass, objid)): the store's own class, so its
// locks cannot meet those of another application using the two-key form
// with another class, nor any using the one-key (bigint) form, which
// PostgreSQL keeps apart (pg_locks.objsubid 1 against 2).
const LockClass int32 = 0x65706970 // "epip"

// schemaLock is the objid of the advisory lock that serialises schema
// creation by several processes starting at once.
const schemaLock int32 = 0

// Store is a PostgreSQL-backed store.Store.
type Store struct {
	pool *pgxpool.Pool
	set  Settings
	// waiters holds a token for each connection waiting longer than the
	// probe for a held document (at most set.Waiters).
	waiters chan struct{}
}

// Open connects to url, checks the connection and creates the schema if it
// is missing. The URL's query may set the bounds described at Settings.
func Open(ctx context.Context, url string) (*Store, error) {
	return open(ctx, url, nil)
}

// open is Open; configure, when not nil, changes the pool's configuration
// (a test's tracer).
func open(ctx context.Context, url string, configure func(*pgxpool.Config)) (*Store, error) {
	cfg, err := ParsePoolConfig(url)
	if err != nil {
		return nil, &store.Error{Op: "open postgres", Kind: store.KindConfiguration,
			Err: fmt.Errorf("parse URL: %w (use postgres://user:password@host:5432/database)", err)}
	}
	set, err := parseSettings(cfg)
	if err != nil {
		return nil, &store.Error{Op: "open postgres", Kind: store.KindConfiguration, Err: fmt.Errorf("URL query: %w", err)}
	}
	if configure != nil {
		configure(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, classify("open postgres", err)
	}
	s := &Store{pool: pool, set: set, waiters: make(chan struct{}, set.Waiters)}
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
	if _, err := tx.Exec(ctx, sqlLockTimeout, millis(s.set.LockTimeout)); err != nil {
		return classify("create schema", err)
	}
	if _, err := tx.Exec(ctx, sqlLock, LockClass, schemaLock); err != nil {
		return classify("create schema", err)
	}
	if _, err := tx.Exec(ctx, schema); err != nil {
		return classify("create schema", err)
	}
	return classify("create schema", tx.Commit(ctx))
}

// Settings returns the store's bounds on waiting.
func (s *Store) Settings() Settings { return s.set }

// RunTx implements store.Store. It waits for documents other transactions
// hold at most Settings.LockTimeout in all: a transaction first waits up to
// Settings.Probe with its connection; past that it gives the connection
// back, takes one of the Settings.Waiters slots (waiting without a
// connection) and runs again waiting for what is left of the bound. A
// transaction that still cannot get its documents fails with a transient
// *store.Error (SQLSTATE 55P03): nothing was written, and the delivery is
// retried later. A store.ReadOnly transaction reads a REPEATABLE READ
// snapshot without taking locks, so it waits for none.
func (s *Store) RunTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	deadline := time.Now().Add(s.set.LockTimeout)
	waiting := false // a waiter: holds a slot, may wait past the probe
	var err error
	for attempt := 1; attempt <= MaxAttempts; attempt++ {
		if waiting {
			err = s.attemptWaiting(ctx, fn, deadline)
		} else {
			err = s.attempt(ctx, fn, 0)
		}
		switch {
		case lockTimedOut(err):
			if waiting || !time.Now().Before(deadline) {
				return s.lockTimeout(err)
			}
			waiting = true
			continue
		case !retryable(err):
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

// attemptWaiting runs one attempt as a waiter: with a slot, taken without a
// connection, and a lock_timeout of what is left until deadline.
func (s *Store) attemptWaiting(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error, deadline time.Time) error {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case s.waiters <- struct{}{}:
	case <-timer.C:
		return s.lockTimeout(fmt.Errorf("all %d lock-waiting connections stayed busy", s.set.Waiters))
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.waiters }()
	left := time.Until(deadline)
	if left < time.Millisecond {
		return s.lockTimeout(errors.New("no time left to wait"))
	}
	return s.attempt(ctx, fn, left)
}

// lockTimeout is the error of a transaction that could not get its
// documents within Settings.LockTimeout.
func (s *Store) lockTimeout(err error) error {
	return &store.Error{Op: "lock documents", Code: codeLockNotAvailable, Kind: store.KindTransient,
		Err: fmt.Errorf("another transaction held a document for longer than lock_timeout %v (an instance frozen, cut off or slow while holding it; retry later): %w", s.set.LockTimeout, err)}
}

// codeLockNotAvailable is SQLSTATE lock_not_available: lock_timeout expired.
const codeLockNotAvailable = "55P03"

func lockTimedOut(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == codeLockNotAvailable
}

// attempt runs fn once in a transaction on a connection of the pool; a
// positive lockWait replaces the session's lock_timeout (the probe) for it.
func (s *Store) attempt(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error, lockWait time.Duration) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return classify("begin", err)
	}
	defer conn.Release()
	t := &tx{conn: conn.Conn(), locked: map[int32]bool{}, lockWait: lockWait, readOnly: store.IsReadOnly(ctx)}
	defer t.rollback(ctx)
	if err := fn(ctx, t); err != nil {
		return err
	}
	return t.commit(ctx)
}

func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// lockKey is the objid of the transaction-level advisory lock (class
// LockClass) that stands for key: a 32-bit FNV-1a hash of its collection
// and id. Two keys that share a hash only serialise more than they need to:
// a transaction on one waits for a transaction on the other, and each
// still reads its own row after the lock, so the result stays serialisable.
func lockKey(key store.Key) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key.Collection))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(key.ID))
	return int32(h.Sum32())
}

// SQL a transaction sends.
const (
	sqlBegin         = "BEGIN ISOLATION LEVEL READ COMMITTED"
	sqlBeginReadOnly = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
	sqlLock          = "SELECT pg_advisory_xact_lock($1, $2)"
	sqlTryLock       = "SELECT pg_try_advisory_xact_lock($1, $2)"
	sqlLockTimeout   = "SELECT set_config('lock_timeout', $1, true)"
	sqlGet           = "SELECT data, expire_at FROM " + Table + " WHERE collection = $1 AND id = $2"
	sqlCreate        = "INSERT INTO " + Table + " (collection, id, data, expire_at) VALUES ($1, $2, $3, $4)"
	sqlSet           = "INSERT INTO " + Table + " (collection, id, data, expire_at) VALUES ($1, $2, $3, $4) " +
		"ON CONFLICT (collection, id) DO UPDATE SET data = EXCLUDED.data, expire_at = EXCLUDED.expire_at"
	sqlDelete = "DELETE FROM " + Table + " WHERE collection = $1 AND id = $2"
)

// tx is one transaction: strict two-phase locking on documents. Before it
// first reads or writes a document it takes the document's advisory lock
// (lockKey), held until it commits or rolls back; each read runs as its own
// READ COMMITTED statement after the lock is granted, so it sees every
// transaction that held the lock before. Transactions touching the same
// document run one after the other and no other pair conflicts, so the
// result is serialisable without the aborts that SERIALIZABLE's predicate
// locks cause between writers of neighbouring keys. BEGIN goes with the
// first read, and the writes are held back and sent with COMMIT, so a
// read-then-write transaction costs two round trips.
type tx struct {
	conn     *pgx.Conn
	begun    bool // BEGIN sent
	done     bool // committed or rolled back
	locked   map[int32]bool
	writes   []write
	lockWait time.Duration // > 0: the transaction's lock_timeout (a waiter)
	// readOnly: a store.ReadOnly transaction, which reads a snapshot
	// without locks and may not write.
	readOnly bool
}

// write is a write held back until commit.
type write struct {
	op   string // "create", "set" or "delete", for errors
	key  store.Key
	sql  string
	args []any
}

// queueLocks adds to b what statements on keys need first: BEGIN (and a
// waiter's lock_timeout), if not sent yet, and the locks of keys not held
// yet, in the order of their lock keys (so two transactions locking the
// same documents in one batch do not deadlock); with try, the locks are
// tried instead of waited for. It returns how many statements it added
// before the locks and the locks it queued.
func (t *tx) queueLocks(b *pgx.Batch, try bool, keys ...store.Key) (int, []int32) {
	n := b.Len()
	if !t.begun {
		begin := sqlBegin
		if t.readOnly {
			begin = sqlBeginReadOnly
		}
		b.Queue(begin)
		if t.lockWait > 0 {
			b.Queue(sqlLockTimeout, millis(t.lockWait))
		}
		t.begun = true
	}
	if t.readOnly {
		return b.Len() - n, nil
	}
	var locks []int32
	for _, key := range keys {
		if k := lockKey(key); !t.locked[k] {
			t.locked[k] = true
			locks = append(locks, k)
		}
	}
	slices.Sort(locks)
	sql := sqlLock
	if try {
		sql = sqlTryLock
	}
	for _, k := range locks {
		b.Queue(sql, LockClass, k)
	}
	return b.Len() - n - len(locks), locks
}

func (t *tx) Get(ctx context.Context, key store.Key) (store.Document, error) {
	docs, err := t.get(ctx, "get "+key.String(), []store.Key{key})
	if err != nil {
		return store.Document{}, err
	}
	if docs[0] == nil {
		return store.Document{}, fmt.Errorf("get %s: %w", key, store.ErrNotFound)
	}
	return *docs[0], nil
}

// GetAll implements store.MultiGetter: the locks and reads of every key go
// in one round trip.
func (t *tx) GetAll(ctx context.Context, keys []store.Key) ([]*store.Document, error) {
	return t.get(ctx, fmt.Sprintf("get %d documents", len(keys)), keys)
}

// get locks and reads keys in one batch: nil for a key with no document.
// With a store.NoWait context, a key another transaction holds fails the
// read at once with store.ErrLocked.
func (t *tx) get(ctx context.Context, op string, keys []store.Key) ([]*store.Document, error) {
	if len(t.writes) > 0 {
		return nil, fmt.Errorf("%s: %w", op, store.ErrReadAfterWrite)
	}
	var b pgx.Batch
	try := store.IsNoWait(ctx)
	pre, locks := t.queueLocks(&b, try, keys...)
	for _, k := range keys {
		b.Queue(sqlGet, k.Collection, k.ID)
	}
	br := t.conn.SendBatch(ctx, &b)
	docs := make([]*store.Document, len(keys))
	err := func() error {
		for range pre {
			if _, err := br.Exec(); err != nil {
				return classify(op, err)
			}
		}
		busy := false
		for _, k := range locks {
			if !try {
				if _, err := br.Exec(); err != nil {
					return classify(op, err)
				}
				continue
			}
			var got bool
			if err := br.QueryRow().Scan(&got); err != nil {
				return classify(op, err)
			}
			if !got {
				delete(t.locked, k)
				busy = true
			}
		}
		if busy {
			return &store.Error{Op: op, Code: codeLockNotAvailable, Kind: store.KindTransient, Err: store.ErrLocked}
		}
		for i, k := range keys {
			var data []byte
			var exp *time.Time
			err := br.QueryRow().Scan(&data, &exp)
			if errors.Is(err, pgx.ErrNoRows) {
				continue
			}
			if err != nil {
				return classify("get "+k.String(), err)
			}
			fields, err := store.DecodeJSON(data)
			if err != nil {
				return &store.Error{Op: "get " + k.String(), Kind: store.KindConfiguration, Err: err}
			}
			d := store.Document{Fields: fields}
			if exp != nil {
				d.ExpireAt = exp.UTC()
			}
			docs[i] = &d
		}
		return nil
	}()
	// Close reports an error the results did not (a failed send).
	if cerr := br.Close(); err == nil && cerr != nil {
		err = classify(op, cerr)
	}
	if err != nil {
		return nil, err
	}
	return docs, nil
}

// errReadOnly is a write in a store.ReadOnly transaction.
var errReadOnly = errors.New("write in a read-only transaction (store.ReadOnly): a programming error")

// put holds back a create or set of doc until commit.
func (t *tx) put(op, sql string, key store.Key, doc store.Document) error {
	if t.readOnly {
		return &store.Error{Op: op + " " + key.String(), Kind: store.KindConfiguration, Err: errReadOnly}
	}
	data, err := store.EncodeJSON(doc)
	if err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	var exp *time.Time // NULL: no expiry
	if !doc.ExpireAt.IsZero() {
		e := doc.ExpireAt.UTC()
		exp = &e
	}
	t.writes = append(t.writes, write{op: op, key: key, sql: sql, args: []any{key.Collection, key.ID, data, exp}})
	return nil
}

// Create implements store.Tx. A document that already exists is reported
// by RunTx (ErrAlreadyExists), as Firestore reports it from the commit.
func (t *tx) Create(_ context.Context, key store.Key, doc store.Document) error {
	return t.put("create", sqlCreate, key, doc)
}

func (t *tx) Set(_ context.Context, key store.Key, doc store.Document) error {
	return t.put("set", sqlSet, key, doc)
}

func (t *tx) Delete(_ context.Context, key store.Key) error {
	if t.readOnly {
		return &store.Error{Op: "delete " + key.String(), Kind: store.KindConfiguration, Err: errReadOnly}
	}
	t.writes = append(t.writes, write{op: "delete", key: key, sql: sqlDelete, args: []any{key.Collection, key.ID}})
	return nil
}

// commit sends the locks of the written documents not held yet, the
// held-back writes and COMMIT in one round trip.
func (t *tx) commit(ctx context.Context) error {
	if !t.begun && len(t.writes) == 0 {
		t.done = true
		return nil // nothing read, nothing written
	}
	var b pgx.Batch
	keys := make([]store.Key, len(t.writes))
	for i, w := range t.writes {
		keys[i] = w.key
	}
	pre, locks := t.queueLocks(&b, false, keys...)
	for _, w := range t.writes {
		b.Queue(w.sql, w.args...)
	}
	b.Queue("COMMIT")
	br := t.conn.SendBatch(ctx, &b)
	var err error
	for i := range b.Len() {
		if _, err = br.Exec(); err == nil {
			continue
		}
		// Statement i is a lock (or BEGIN), a held-back write or COMMIT.
		switch w := i - pre - len(locks); {
		case w < 0:
			err = classify("begin and lock documents", err)
		case w == len(t.writes):
			err = classify("commit", err)
		default:
			op := t.writes[w].op + " " + t.writes[w].key.String()
			var pe *pgconn.PgError
			if t.writes[w].op == "create" && errors.As(err, &pe) && pe.Code == "23505" {
				err = fmt.Errorf("%s: %w", op, store.ErrAlreadyExists)
			} else {
				err = classify(op, err)
			}
		}
		break
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = classify("commit", cerr)
	}
	if err == nil {
		t.done = true
	}
	return err
}

// rollback ends a transaction that did not commit. It runs even when ctx
// has ended (the connection would otherwise go back to the pool inside a
// transaction); a connection it cannot roll back is closed, which ends the
// transaction too.
func (t *tx) rollback(ctx context.Context) {
	if t.done || !t.begun {
		return
	}
	t.done = true
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := t.conn.Exec(rctx, "ROLLBACK"); err != nil {
		_ = t.conn.Close(rctx)
	}
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
	return &store.Error{Op: op, Code: connectionCode(err), Kind: store.KindTransient, Err: err}
}

// SQLSTATEs of the connection exception class (08) that the client side
// reports for errors the server never sent a SQLSTATE for.
const (
	// codeUnableToConnect: the dial or the startup failed (server down,
	// refusing connections, unreachable).
	codeUnableToConnect = "08001"
	// codeConnectionFailure: an established connection broke (the server
	// shut down or was killed mid-session, a reset, an unexpected EOF).
	codeConnectionFailure = "08006"
)

// connectionCode is the SQLSTATE of a driver error that carries none, so
// every store error has a code (an outage logs 08001 or 08006, never an
// empty error_code): a failed connection attempt is 08001, anything else
// the driver reports without a server error is a broken connection, 08006.
func connectionCode(err error) string {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return codeUnableToConnect
	}
	return codeConnectionFailure
}

// kindOf classifies a SQLSTATE by its class (the first two characters).
func kindOf(code string) store.Kind {
	if len(code) < 2 {
		return store.KindTransient
	}
	if code == "25P03" {
		// idle_in_transaction_session_timeout ended the session: this
		// instance sat in a transaction too long (it was frozen); nothing
		// was committed.
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
