package pgstore

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// URL query parameters the store reads (besides pgx's own, such as
// pool_max_conns). Every one is optional; see Settings for the defaults.
const (
	// ParamRequestTimeout is the consumer's request timeout (the push ack
	// deadline), from which the other bounds default. The consumer sets it
	// from EVENTPIPE_REQUEST_TIMEOUT.
	ParamRequestTimeout = "eventpipe_request_timeout"
	// ParamLockTimeout bounds how long a transaction waits, in all, for
	// documents other transactions hold.
	ParamLockTimeout = "lock_timeout"
	// ParamStatementTimeout is PostgreSQL's statement_timeout for the
	// store's sessions.
	ParamStatementTimeout = "statement_timeout"
	// ParamIdleInTransactionTimeout is PostgreSQL's
	// idle_in_transaction_session_timeout for the store's sessions: the
	// server ends a session that holds a transaction (and its document
	// locks) open without sending anything for this long.
	ParamIdleInTransactionTimeout = "idle_in_transaction_session_timeout"
)

// DefaultMaxConns is the pool size (pgxpool's MaxConns) when the store URL
// sets no pool_max_conns, unless pgx's own default (the larger of 4 and
// the number of CPUs) is larger. pgx sizes its default for work that keeps
// a CPU busy; a store connection spends most of a delivery waiting for the
// server, its commit's flush to disk above all, so a pool of 4 admits 4
// commits at once and every further push waits for a connection.
// Measured with pushload (8 and 64 concurrent pushes on a syncing
// PostgreSQL, docs/benchmarks.md): 8 connections against pgx's 4 gave the
// consumer 1.72–1.81× the messages per second at 0.77–0.78 of the CPU per
// message. Each instance may hold this many server connections: the
// instances' total must fit the server's max_connections (set
// pool_max_conns lower in the URL when it does not).
const DefaultMaxConns = 8

// ParsePoolConfig is pgxpool.ParseConfig of the store URL raw with the
// store's pool size: DefaultMaxConns when raw (a postgres:// URL; a
// key=value string is left as pgx reads it) sets no pool_max_conns and
// pgx's default is smaller. The store opens its pool with it, and so does
// any program that must size its pool as the store does (pushload's bare
// loop).
func ParsePoolConfig(raw string) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(raw)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(raw)
	if err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") && !u.Query().Has("pool_max_conns") {
		cfg.MaxConns = max(cfg.MaxConns, DefaultMaxConns)
	}
	return cfg, nil
}

// DefaultRequestTimeout is the request timeout assumed when the URL gives
// none: Pub/Sub's default (and shortest) push ack deadline.
const DefaultRequestTimeout = 10 * time.Second

// maxProbe bounds a transaction's first wait for a document lock; a
// transaction that waits longer gives its connection back and waits again
// as one of the store's bounded lock waiters (Settings.Waiters).
const maxProbe = 50 * time.Millisecond

// Settings are the store's bounds on waiting, from the URL query. With
// request timeout R (eventpipe_request_timeout, default 10s):
//
//	lock_timeout                          R/4: a transaction that cannot get its documents' locks in
//	                                      this time fails with a transient error (SQLSTATE 55P03)
//	statement_timeout                     R/2: the server cancels a statement running longer (57014)
//	idle_in_transaction_session_timeout   R/4: the server ends a session that holds a transaction
//	                                      open and silent this long (a frozen or cut-off instance),
//	                                      which releases its locks
//
// Durations take PostgreSQL's or Go's syntax ("2500ms", "2.5s", "1min",
// "1m30s"; a bare number is milliseconds) and must be positive.
type Settings struct {
	RequestTimeout           time.Duration
	LockTimeout              time.Duration
	StatementTimeout         time.Duration
	IdleInTransactionTimeout time.Duration
	// Probe is a transaction's first wait for a held document: min(50ms,
	// LockTimeout). A longer wait needs one of the Waiters slots.
	Probe time.Duration
	// Waiters is how many of the pool's connections may wait for a held
	// document longer than Probe: the pool size (pool_max_conns) minus a
	// reserve of a quarter (at least one), so waiters for held documents
	// never occupy the whole pool and other documents proceed. A pool of
	// one connection has no reserve.
	Waiters int
}

// parseSettings takes the store's parameters out of cfg's runtime
// parameters (where pgx puts every query parameter it does not know),
// fills in the defaults and sets the server-side ones back in milliseconds.
func parseSettings(cfg *pgxpool.Config) (Settings, error) {
	params := cfg.ConnConfig.RuntimeParams
	var s Settings
	var errs []string
	get := func(name string, dst *time.Duration, def func() time.Duration) {
		v, ok := params[name]
		if !ok {
			*dst = def()
			return
		}
		delete(params, name)
		d, err := parseDuration(v)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s=%q: %v (use a positive duration such as 2500ms, 2.5s or 1min)", name, v, err))
			return
		}
		*dst = d
	}
	get(ParamRequestTimeout, &s.RequestTimeout, func() time.Duration { return DefaultRequestTimeout })
	get(ParamLockTimeout, &s.LockTimeout, func() time.Duration { return s.RequestTimeout / 4 })
	get(ParamStatementTimeout, &s.StatementTimeout, func() time.Duration { return s.RequestTimeout / 2 })
	get(ParamIdleInTransactionTimeout, &s.IdleInTransactionTimeout, func() time.Duration { return s.RequestTimeout / 4 })
	if len(errs) > 0 {
		return Settings{}, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	s.Probe = min(maxProbe, s.LockTimeout)
	n := int(cfg.MaxConns)
	s.Waiters = max(1, n-max(1, n/4))
	// The session's lock_timeout is the probe; a transaction waiting as one
	// of the Waiters sets its own (SET LOCAL) to what is left of LockTimeout.
	params["lock_timeout"] = millis(s.Probe)
	params["statement_timeout"] = millis(s.StatementTimeout)
	params["idle_in_transaction_session_timeout"] = millis(s.IdleInTransactionTimeout)
	return s, nil
}

// millis renders d as PostgreSQL milliseconds, at least 1 (0 turns the
// timeouts off).
func millis(d time.Duration) string {
	return strconv.FormatInt(max(1, d.Milliseconds()), 10)
}

// parseDuration reads a positive duration in PostgreSQL's syntax (a bare
// number of milliseconds; units us, ms, s, min, h, d) or Go's.
func parseDuration(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	var d time.Duration
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		d = time.Duration(n * float64(time.Millisecond))
	} else {
		g := v
		switch {
		case strings.HasSuffix(g, "min"):
			g = strings.TrimSuffix(g, "in")
		case strings.HasSuffix(g, "d"):
			n, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(g, "d")), 64)
			if err != nil {
				return 0, fmt.Errorf("not a duration")
			}
			g = strconv.FormatFloat(n*24, 'f', -1, 64) + "h"
		}
		if d, err = time.ParseDuration(strings.ReplaceAll(g, " ", "")); err != nil {
			return 0, fmt.Errorf("not a duration")
		}
	}
	if d < time.Millisecond {
		return 0, fmt.Errorf("not positive (at least 1ms)")
	}
	return d, nil
}

// WithRequestTimeout returns the store URL raw with eventpipe_request_timeout
// set to d, unless raw sets it already (the URL wins). The consumer calls it
// with EVENTPIPE_REQUEST_TIMEOUT.
func WithRequestTimeout(raw string, d time.Duration) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("store URL: %w", err)
	}
	q := u.Query()
	if q.Has(ParamRequestTimeout) {
		return raw, nil
	}
	q.Set(ParamRequestTimeout, d.String())
	u.RawQuery = q.Encode()
	return u.String(), nil
}
