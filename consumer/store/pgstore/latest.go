package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/eventpipe/eventpipe/consumer/store"
)

// WriteLatest implements store.LatestWriter: the engine's latest-state
// write in one round trip and at most one commit. One pipelined batch,
// which PostgreSQL runs as one implicit transaction, sends two statements:
// the advisory locks of the target and the marker (as every transaction of
// the store takes them, so it is serialised with the others), then
// sqlWriteLatest, which reads both documents under the locks, decides as
// the engine does and writes both only if the message applies, and returns
// what it found. A duplicate or stale message writes nothing, so its
// transaction commits nothing to flush.
//
// A lock another transaction holds is waited for only the probe
// (Settings.Probe, the session's lock_timeout); past it, and on a
// deadlock, nothing is written and the result is undecided, so the engine
// runs its own transaction, which waits as RunTx does.
func (s *Store) WriteLatest(ctx context.Context, w store.LatestWrite) (store.LatestResult, error) {
	args, ok := latestArgs(w)
	if !ok {
		return store.LatestResult{}, nil // values SQL would not compare as Go does
	}
	locks := []int32{lockKey(w.Target)}
	if w.Marker != (store.Key{}) {
		if k := lockKey(w.Marker); k != locks[0] {
			locks = append(locks, k)
		}
	}
	slices.Sort(locks) // the order every transaction of the store locks in
	var b pgx.Batch
	if len(locks) == 1 {
		b.Queue(sqlLock, LockClass, locks[0])
	} else {
		b.Queue(sqlLock2, LockClass, locks[0], locks[1])
	}
	b.Queue(sqlWriteLatest, args...)
	op := "write latest " + w.Target.String()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return store.LatestResult{}, classify(op, err)
	}
	defer conn.Release()
	br := conn.Conn().SendBatch(ctx, &b)
	var res store.LatestResult
	err = func() error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		var apply *bool
		var hasTarget, hasMarker bool
		var version, fingerprint []byte
		var targetExp, markerExp *time.Time
		if err := br.QueryRow().Scan(&apply, &hasTarget, &version, &targetExp, &hasMarker, &fingerprint, &markerExp); err != nil {
			return err
		}
		if apply == nil {
			return nil // a stored value the statement cannot read as the engine does
		}
		var err error
		if res.Target, err = found(w.Target, hasTarget, w.VersionField, version, targetExp); err != nil {
			return err
		}
		if res.Marker, err = found(w.Marker, hasMarker, store.VersionFingerprint, fingerprint, markerExp); err != nil {
			return err
		}
		res.Decided, res.Written = true, *apply
		return nil
	}()
	if cerr := br.Close(); err == nil && cerr != nil {
		err = cerr
	}
	switch {
	case err == nil:
		return res, nil
	case lockTimedOut(err), retryable(err):
		// A held document (or a deadlock): the engine's transaction waits
		// for it as RunTx does. Nothing was written.
		return store.LatestResult{}, nil
	case dataException(err):
		// A stored value PostgreSQL would not convert as the engine reads
		// it: the engine decides. Nothing was written.
		return store.LatestResult{}, nil
	}
	var se *store.Error
	if errors.As(err, &se) {
		return store.LatestResult{}, err
	}
	return store.LatestResult{}, classify(op, err)
}

// dataException reports a SQLSTATE of class 22 (a value out of range, a
// cast that failed, an unsupported escape).
func dataException(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && strings.HasPrefix(pe.Code, "22")
}

// found is a document sqlWriteLatest found: nil when it has none, else
// the one field it returns (its JSON text; none when NULL) and its expiry.
func found(key store.Key, exists bool, field string, value []byte, exp *time.Time) (*store.Document, error) {
	if !exists {
		return nil, nil
	}
	d := store.Document{Fields: map[string]any{}}
	if value != nil {
		name, err := json.Marshal(field)
		if err != nil {
			return nil, err
		}
		fields, err := store.DecodeJSON(slices.Concat([]byte("{"), name, []byte(":"), value, []byte("}")))
		if err != nil {
			return nil, &store.Error{Op: "get " + key.String(), Kind: store.KindConfiguration, Err: err}
		}
		d.Fields = fields
	}
	if exp != nil {
		d.ExpireAt = exp.UTC()
	}
	return &d, nil
}

// latestArgs are sqlWriteLatest's parameters. ok is false when a value
// would not reach the statement as Go holds it: text PostgreSQL refuses
// (invalid UTF-8, NUL) or times and durations finer than its microseconds.
func latestArgs(w store.LatestWrite) (args []any, ok bool) {
	v := w.Version
	for _, s := range []string{v.EventKey, v.Fingerprint, w.VersionField, w.Target.Collection, w.Target.ID, w.Marker.Collection, w.Marker.ID} {
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			return nil, false
		}
	}
	for _, t := range []time.Time{v.EventTime, v.PublishTime} {
		if t.Nanosecond()%1000 != 0 {
			return nil, false
		}
	}
	if w.Window%time.Microsecond != 0 || w.Window < 0 || w.MaxJump > math.MaxInt64 {
		return nil, false
	}
	doc, err := store.EncodeJSON(w.Doc)
	if err != nil {
		return nil, false
	}
	var markerColl, markerID, markerDoc any // NULL: no marker
	var markerExp *time.Time
	if w.Marker != (store.Key{}) {
		enc, err := store.EncodeJSON(w.MarkerDoc)
		if err != nil {
			return nil, false
		}
		markerColl, markerID, markerDoc = w.Marker.Collection, w.Marker.ID, enc
		markerExp = expireAt(w.MarkerDoc)
	}
	return []any{
		w.Target.Collection, w.Target.ID, markerColl, markerID, markerDoc, markerExp, doc, expireAt(w.Doc),
		w.Now.UTC(), w.VersionField,
		v.HasSequence, v.Sequence, v.EventTime.UTC(), v.PublishTime.UTC(), v.EventKey, v.Fingerprint,
		v.PublishTime.Add(-w.Window).UTC(), v.PublishTime.Add(w.Window).UTC(), int64(w.MaxJump),
		v.Fingerprint == "" || w.ProducerKey, v1Form(v.Fingerprint),
	}, true
}

// v1Form is the v1 form a fingerprint names ("sha256:" and the hash after
// "+v1:"), or "" (keys.SameFingerprint's matches, read by the statement).
func v1Form(fp string) string {
	if _, v1, ok := strings.Cut(fp, "+v1:"); ok {
		return "sha256:" + v1
	}
	return ""
}

// expireAt is a document's expiry as a parameter: NULL for none.
func expireAt(d store.Document) *time.Time {
	if d.ExpireAt.IsZero() {
		return nil
	}
	e := d.ExpireAt.UTC()
	return &e
}

// sqlLock2 takes two documents' advisory locks, in the order given.
const sqlLock2 = "SELECT pg_advisory_xact_lock($1, $2), pg_advisory_xact_lock($1, $3)"

// sqlWriteLatest decides and applies one latest-state write (see
// store.LatestWriter), with the engine's rules (package engine: latest,
// sameEvent, Ordering.Compare), which its tests hold it to. Parameters
// (latestArgs):
//
//	$1, $2     target collection and id        $3, $4   marker collection and id (NULL: none)
//	$5, $6     marker document and expiry      $7, $8   target document and expiry
//	$9         now (expiry)                    $10      the version field (engine.MetaField)
//	$11..$16   the message's version: has a sequence, sequence, event time, publish time
//	           (as trusted), event key, fingerprint
//	$17, $18   its publish time less and plus the window
//	$19        the largest sequence step trusted across the window
//	$20        any stored fingerprint is this event's (the message has none, or its event
//	           key is the producer's, under which another is a reused event id: no write either)
//	$21        the v1 form of the message's fingerprint ("": none)
//
// Within the window the decision is the tuple (has a sequence, sequence,
// event time, event key, fingerprint), text in byte order (COLLATE "C"):
// the fields every copy of an event shares, so a republished copy ranks as
// the original; across it, newerAcross. The stored publish time is as the
// engine trusted it when it wrote the version.
//
// It returns whether it wrote (NULL: a stored value it cannot read as the
// engine does; nothing written), then, for the target and the marker as
// found, whether it exists, the JSON text of the field the engine's
// decision reads (the version; the fingerprint) and the expiry.
//
// It is one query and two inserts (a plan of few nodes: the server's work
// is mostly setting a plan up), and reads the stored version as jsonb,
// parsed once. A stored value in a form the engine would read otherwise
// (a field of another type, a time not in the form EncodeJSON writes)
// makes the answer NULL; a value PostgreSQL refuses to convert (a
// sequence beyond 64 bits, a NUL in a string) fails the statement (class
// 22, nothing written): both leave the decision to the engine.
var sqlWriteLatest = func() string {
	const isTime = `^(000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?Z$`
	field := func(name string) string { return `(c.vb->'` + name + `')` }
	text := func(name string) string { return `COALESCE(c.vb->>'` + name + `', '')` }
	// A time is absent (Go's zero time) or {"$eventpipe_time": "…"} alone.
	timeOK := func(name string) string {
		x := field(name)
		return fmt.Sprintf(`CASE WHEN %[1]s IS NULL THEN true WHEN jsonb_typeof(%[1]s) <> 'object' THEN false
			ELSE (%[1]s - '$eventpipe_time') = '{}'::jsonb AND (%[1]s->>'$eventpipe_time') ~ '%[2]s' END`, x, isTime)
	}
	readTime := func(name string) string {
		return fmt.Sprintf(`COALESCE((%s->>'$eventpipe_time')::timestamptz, '0001-01-01T00:00:00Z'::timestamptz)`, field(name))
	}
	textOK := func(name string) string {
		return fmt.Sprintf(`(%[1]s IS NULL OR jsonb_typeof(%[1]s) = 'string')`, field(name))
	}
	seq := `'` + store.VersionSequence + `'`
	readable := `(c.vb IS NULL OR (jsonb_typeof(c.vb) = 'object'
			AND (NOT c.vb ? ` + seq + ` OR (jsonb_typeof(c.vb->` + seq + `) = 'number' AND (c.meta->` + seq + `)::text ~ '^-?[0-9]+$'))
			AND ` + timeOK(store.VersionEventTime) + `
			AND ` + timeOK(store.VersionPublishTime) + `
			AND ` + textOK(store.VersionEventKey) + ` AND ` + textOK(store.VersionFingerprint) + `))`
	st := map[string]string{
		"hasseq": `COALESCE(c.vb ? ` + seq + `, false)`,
		"seq":    `COALESCE((c.vb->>` + seq + `)::bigint, 0)`,
		"et":     readTime(store.VersionEventTime),
		"pt":     readTime(store.VersionPublishTime),
		"key":    text(store.VersionEventKey),
		"fp":     text(store.VersionFingerprint),
	}
	in := map[string]string{"hasseq": "$11::boolean", "seq": "$12::bigint", "et": "$13::timestamptz", "pt": "$14::timestamptz",
		"key": "$15::text", "fp": "$16::text"}
	// sameFP is keys.SameFingerprint of stored a and the message's.
	sameFP := func(a string) string {
		return fmt.Sprintf(`(%[1]s = $16::text OR ($21::text <> '' AND %[1]s = $21::text)
			OR (strpos(%[1]s, '+v1:') > 0 AND 'sha256:' || substr(%[1]s, strpos(%[1]s, '+v1:') + 4) = $16::text))`, a)
	}
	// sameEvent is the engine's sameEvent of a stored record whose event key
	// matches: the same event, or a reused event id (no write either).
	sameEvent := func(fp string) string {
		return fmt.Sprintf(`($20::boolean OR %[1]s = '' OR %[2]s)`, fp, sameFP(fp))
	}
	// newerAcross is Ordering.newerAcross(late, early).
	newerAcross := func(late, early map[string]string) string {
		return fmt.Sprintf(`((%s AND %s AND %s > %s AND %s::numeric - %s::numeric <= $19::numeric) OR %s >= LEAST(%s, %s))`,
			late["hasseq"], early["hasseq"], late["seq"], early["seq"], late["seq"], early["seq"], late["et"], early["et"], early["pt"])
	}
	row := func(v map[string]string) string {
		return fmt.Sprintf(`(%s, %s, %s, %s COLLATE "C", %s COLLATE "C")`, v["hasseq"], v["seq"], v["et"], v["key"], v["fp"])
	}
	markerLive := `m.data IS NOT NULL AND (m.expire_at IS NULL OR m.expire_at > $9::timestamptz)`
	markerFP := `(m.data->'` + store.VersionFingerprint + `')`
	return `WITH d AS (
	SELECT CASE
			-- a live marker of this event (or a reused event id): a duplicate
			WHEN ` + markerLive + ` AND ` + markerFP + ` IS NOT NULL AND json_typeof(` + markerFP + `) <> 'string' THEN NULL
			WHEN ` + markerLive + ` AND ` + sameEvent(`COALESCE(m.data->>'`+store.VersionFingerprint+`', '')`) + ` THEN false
			-- no live document: the message applies
			WHEN c.found IS NULL OR (c.expire_at IS NOT NULL AND c.expire_at <= $9::timestamptz) THEN true
			WHEN NOT ` + readable + ` THEN NULL
			-- the document's own event: a duplicate
			WHEN ` + st["key"] + ` = $15::text AND ` + sameEvent(st["fp"]) + ` THEN false
			-- newer or stale (Ordering.Compare): across the window, then within it
			WHEN ` + st["pt"] + ` < $17::timestamptz THEN ` + newerAcross(in, st) + `
			WHEN ` + st["pt"] + ` > $18::timestamptz THEN NOT ` + newerAcross(st, in) + `
			ELSE ` + row(in) + ` > ` + row(st) + `
		END AS apply,
		c.found IS NOT NULL AS has_target, c.meta::text AS meta, c.expire_at AS target_exp,
		m.data IS NOT NULL AS has_marker, ` + markerFP + `::text AS marker_fp, m.expire_at AS marker_exp
	FROM (SELECT 1) AS one
	LEFT JOIN (
		SELECT true AS found, expire_at, meta, meta::jsonb AS vb FROM (
			SELECT expire_at, data->($10::text) AS meta FROM ` + Table + ` WHERE collection = $1::text AND id = $2::text OFFSET 0
		) AS r OFFSET 0
	) AS c ON true
	LEFT JOIN ` + Table + ` AS m ON m.collection = $3::text AND m.id = $4::text
), write_marker AS (
	INSERT INTO ` + Table + ` (collection, id, data, expire_at)
	SELECT $3::text, $4::text, $5::json, $6::timestamptz FROM d WHERE d.apply AND $3::text IS NOT NULL
	ON CONFLICT (collection, id) DO UPDATE SET data = EXCLUDED.data, expire_at = EXCLUDED.expire_at
), write_target AS (
	INSERT INTO ` + Table + ` (collection, id, data, expire_at)
	SELECT $1::text, $2::text, $7::json, $8::timestamptz FROM d WHERE d.apply
	ON CONFLICT (collection, id) DO UPDATE SET data = EXCLUDED.data, expire_at = EXCLUDED.expire_at
)
SELECT apply, has_target, meta, target_exp, has_marker, marker_fp, marker_exp FROM d`
}()
