package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/eventpipe/eventpipe/consumer/store"
)

// WriteIf implements store.ConditionalWriter: one statement, which
// PostgreSQL runs as a transaction of its own, so the write costs one
// round trip and its one commit. The statement first tries the document's
// advisory lock, as every transaction of the store takes it (so it is
// serialised with them), without waiting: a document another transaction
// holds is not written (nor read), and the caller's transaction waits for
// it as RunTx does.
//
// IfAbsent is an insert that does nothing on a conflict, returning the
// row as it was when the statement began (the statement's snapshot: a row
// committed after that but before the lock was granted is not returned,
// and the insert, which checks the index itself, does not write over it).
// Match is an update whose condition PostgreSQL checks on the newest
// version of the row (READ COMMITTED's recheck of a row updated after the
// snapshot), under the lock.
func (s *Store) WriteIf(ctx context.Context, w store.ConditionalWrite) (store.ConditionalResult, error) {
	op := "write " + w.Key.String() + " if "
	data, err := store.EncodeJSON(w.Doc)
	if err != nil {
		return store.ConditionalResult{}, fmt.Errorf("write %s: %w", w.Key, err)
	}
	args := []any{LockClass, lockKey(w.Key), w.Key.Collection, w.Key.ID, data, expireAt(w.Doc)}
	var res store.ConditionalResult
	if w.IfAbsent {
		op += "absent"
		var got bool
		var found []byte
		var exp *time.Time
		err := s.pool.QueryRow(ctx, sqlCreateOrGet, args...).Scan(&got, &res.Written, &found, &exp)
		if err != nil {
			return store.ConditionalResult{}, classify(op, err)
		}
		if !got || res.Written || found == nil {
			return res, nil
		}
		fields, err := store.DecodeJSON(found)
		if err != nil {
			return store.ConditionalResult{}, &store.Error{Op: "get " + w.Key.String(), Kind: store.KindConfiguration, Err: err}
		}
		d := store.Document{Fields: fields}
		if exp != nil {
			d.ExpireAt = exp.UTC()
		}
		res.Found = &d
		return res, nil
	}
	op += "matched"
	match, err := matchJSON(w.Match)
	if err != nil {
		return store.ConditionalResult{}, fmt.Errorf("write %s: %w", w.Key, err)
	}
	tag, err := s.pool.Exec(ctx, sqlUpdateIf, append(args, w.Now.UTC(), match)...)
	if err != nil {
		return store.ConditionalResult{}, classify(op, err)
	}
	res.Written = tag.RowsAffected() == 1
	return res, nil
}

// matchJSON is a Match as the JSON object the row's data must contain
// (jsonb's @>, which compares scalars by value: 5 and 5.0 are equal, as
// the engine's int64 reading of both is).
func matchJSON(m map[string]any) ([]byte, error) {
	for name, v := range m {
		switch v.(type) {
		case string, int64, bool:
		default:
			return nil, fmt.Errorf("ConditionalWrite.Match[%q] is a %T: use a string, an int64 or a bool", name, v)
		}
	}
	return json.Marshal(m)
}

// sqlCreateOrGet inserts a document if no row has its key (and the lock
// was granted at once), and returns whether the lock was granted, whether
// it wrote, and the row as the statement's snapshot had it. Parameters:
// $1, $2 the lock; $3, $4 the key; $5, $6 the data and expiry.
const sqlCreateOrGet = `WITH l AS (SELECT pg_try_advisory_xact_lock($1::integer, $2::integer) AS got),
w AS (
	INSERT INTO ` + Table + ` (collection, id, data, expire_at)
	SELECT $3::text, $4::text, $5::json, $6::timestamptz FROM l WHERE l.got
	ON CONFLICT (collection, id) DO NOTHING
	RETURNING true AS written
)
SELECT l.got, EXISTS (SELECT 1 FROM w), c.data, c.expire_at
FROM l LEFT JOIN ` + Table + ` AS c ON l.got AND c.collection = $3::text AND c.id = $4::text`

// sqlUpdateIf replaces a document whose row is live at $7 and whose data
// contains $8 (jsonb @>), if the lock was granted at once. Parameters as
// sqlCreateOrGet's, then $7 now and $8 the match.
const sqlUpdateIf = `WITH l AS (SELECT pg_try_advisory_xact_lock($1::integer, $2::integer) AS got)
UPDATE ` + Table + ` AS t SET data = $5::json, expire_at = $6::timestamptz
FROM l WHERE l.got AND t.collection = $3::text AND t.id = $4::text
	AND (t.expire_at IS NULL OR t.expire_at > $7::timestamptz) AND t.data::jsonb @> $8::jsonb`
