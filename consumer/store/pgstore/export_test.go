package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// LockKey exposes lockKey to the package's external tests.
var LockKey = lockKey

// OpenConfigured is Open with configure applied to the pool's
// configuration (a tracer).
func OpenConfigured(ctx context.Context, url string, configure func(*pgxpool.Config)) (*Store, error) {
	return open(ctx, url, configure)
}

// PoolSize is the store's pool size (pgxpool's MaxConns).
func PoolSize(s *Store) int32 { return s.pool.Config().MaxConns }
