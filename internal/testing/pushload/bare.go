package pushload

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/eventpipe/eventpipe/consumer/store/pgstore"
)

// bareApply is the bare loop's whole apply of one message, one statement
// in one round trip and one commit: insert the dedupe marker unless it
// exists, and only if it was inserted, upsert the document unless the
// stored version's order key is not lower. A duplicate costs the marker's
// conflict and nothing else; concurrent deliveries of one document or
// marker are serialised by the row locks INSERT ... ON CONFLICT takes, so
// no version overwrites a newer one and no event applies twice. The order
// key compares bytes (COLLATE "C"), as the consumer's ordering does.
const bareApply = `WITH marker AS (
	INSERT INTO ` + pgstore.Table + ` (collection, id, data, expire_at) VALUES ('eventpipe_dedupe', $1, $2, now() + interval '7 days')
	ON CONFLICT (collection, id) DO NOTHING
	RETURNING 1)
INSERT INTO ` + pgstore.Table + ` AS d (collection, id, data)
SELECT 'ops_services', $3, $4 FROM marker
ON CONFLICT (collection, id) DO UPDATE SET data = EXCLUDED.data
WHERE (d.data->'_eventpipe'->>'order') COLLATE "C" < (EXCLUDED.data->'_eventpipe'->>'order') COLLATE "C"`

// Bare is the bare loop on the database at url: pgx's pool, sized as the
// consumer's store sizes its own (pgstore.ParsePoolConfig: the URL's
// pool_max_conns, else pgstore.DefaultMaxConns), and bareApply per
// message. It creates the consumer's table (pgstore's
// schema) if it is missing, so the two write the same rows to the same
// table.
type Bare struct {
	pool *pgxpool.Pool
}

// OpenBare connects to url and makes sure the table exists.
func OpenBare(ctx context.Context, url string) (*Bare, error) {
	st, err := pgstore.Open(ctx, url) // the consumer's schema, made once
	if err != nil {
		return nil, err
	}
	_ = st.Close()
	cfg, err := pgstore.ParsePoolConfig(url)
	if err != nil {
		return nil, fmt.Errorf("bare loop: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("bare loop: %w", err)
	}
	return &Bare{pool: pool}, nil
}

// Send applies m.
func (b *Bare) Send(ctx context.Context, m *Message) error {
	_, err := b.pool.Exec(ctx, bareApply, m.MarkerID, m.Marker, m.DocID, m.Doc)
	return err
}

// Close closes the pool.
func (b *Bare) Close() { b.pool.Close() }
