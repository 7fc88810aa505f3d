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
	}
	var se *store.Error
	if errors.As(err, &se) {
		return store.LatestResult{}, err
	}
	return store.LatestResult{}, classify(op, err)
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
	for _, s := range []string{v.MessageID, v.EventKey, v.Fingerprint, w.VersionField, w.Target.Collection, w.Target.ID, w.Marker.Collection, w.Marker.ID} {
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
		markerColl, markerID, markerDoc = w.Marker.Collection, w.Marker.ID, string(enc)
		markerExp = expireAt(w.MarkerDoc)
	}
	return []any{
		w.Target.Collection, w.Target.ID, markerColl, markerID, markerDoc, markerExp, string(doc), expireAt(w.Doc),
		w.Now.UTC(), w.VersionField,
		v.HasSequence, v.Sequence, v.EventTime.UTC(), v.PublishTime.UTC(), v.MessageID, v.EventKey, v.Fingerprint,
		w.Window, int64(w.MaxJump), w.ProducerKey,
	}, true
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
// sameEvent, ordering.compare), which its tests hold it to. Parameters:
//
//	$1, $2     target collection and id        $3, $4   marker collection and id (NULL: none)
//	$5, $6     marker document and expiry      $7, $8   target document and expiry
//	$9         now (expiry)                    $10      the version field (engine.MetaField)
//	$11..$17   the message's version: has a sequence, sequence, event time, publish time,
//	           message id, event key, fingerprint
//	$18        the window                      $19      the largest sequence step across it
//	$20        the event key is the producer's
//
// It returns whether it wrote (NULL: a stored value it cannot read as the
// engine does; nothing written), then, for the target and the marker as
// found, whether it exists, the JSON text of the field the engine's
// decision reads (the version; the fingerprint) and the expiry.
var sqlWriteLatest = func() string {
	// A stored version is read only in the exact form store.EncodeJSON
	// writes (the json type keeps a value's text as written); anything
	// else makes it unreadable here (NULL), and the engine decides.
	const (
		isTime = `^\{"\$eventpipe_time":"(000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?Z"\}$`
		isText = `^"[^"\\]*"$` // a string without escapes: its text is the value
		isInt  = `^-?[0-9]{1,19}$`
	)
	// ok(x, re): x is absent or has the form re; time/text/int read it,
	// absent as Go's zero value.
	ok := func(x, re string) string { return fmt.Sprintf("(%s IS NULL OR %s::text ~ '%s')", x, x, re) }
	readTime := func(x string) string {
		return fmt.Sprintf(`CASE WHEN %s IS NULL THEN '0001-01-01T00:00:00Z'::timestamptz ELSE (%s->>'$eventpipe_time')::timestamptz END`, x, x)
	}
	readText := func(x string) string { return fmt.Sprintf(`COALESCE(%s #>> '{}', '')`, x) }
	okInt := func(x string) string {
		// CASE, not AND: only a value of the form is cast.
		return fmt.Sprintf("CASE WHEN %s IS NULL THEN true WHEN %s::text ~ '%s' THEN %s::text::numeric BETWEEN -9223372036854775808 AND 9223372036854775807 ELSE false END", x, x, isInt, x)
	}
	// sameFP is keys.SameFingerprint of stored a and incoming $17.
	sameFP := func(a string) string {
		return fmt.Sprintf(`(%[1]s = $17::text OR (strpos(%[1]s, '+v1:') > 0 AND 'sha256:' || substr(%[1]s, strpos(%[1]s, '+v1:') + 4) = $17::text)`+
			` OR (strpos($17::text, '+v1:') > 0 AND %[1]s = 'sha256:' || substr($17::text, strpos($17::text, '+v1:') + 4)))`, a)
	}
	// sameEvent is the engine's sameEvent for a stored record whose event
	// key matches (keyMatch) with fingerprint fp: the same event, or a
	// reused producer event id (which is no write either).
	sameEvent := func(keyMatch, fp string) string {
		return fmt.Sprintf(`(%s AND (%s = '' OR $17::text = '' OR %s OR $20::boolean))`, keyMatch, fp, sameFP(fp))
	}
	// newerAcross is ordering.newerAcross(late, early) over the columns
	// named by the prefixes ("in_": the message, "st_": stored).
	newerAcross := func(late, early string) string {
		return fmt.Sprintf(`((%[1]shasseq AND %[2]shasseq AND %[1]sseq > %[2]sseq AND %[1]sseq::numeric - %[2]sseq::numeric <= $19::numeric)`+
			` OR %[1]set >= LEAST(%[2]set, %[2]spt))`, late, early)
	}
	row := func(p string) string {
		return fmt.Sprintf(`(%[1]shasseq, %[1]sseq, %[1]set, %[1]spt, %[1]smid COLLATE "C", %[1]skey COLLATE "C", %[1]sfp COLLATE "C")`, p)
	}
	// The stored version's fields, each its JSON text as stored: the
	// document and its version are parsed once (json_to_record).
	col := func(name string) string { return `v."` + name + `"` }
	seq, et, pt := col(store.VersionSequence), col(store.VersionEventTime), col(store.VersionPublishTime)
	mid, key, fp := col(store.VersionMessageID), col(store.VersionEventKey), col(store.VersionFingerprint)
	var cols []string
	for _, name := range []string{store.VersionSequence, store.VersionEventTime, store.VersionPublishTime,
		store.VersionMessageID, store.VersionEventKey, store.VersionFingerprint} {
		cols = append(cols, `"`+name+`" json`)
	}
	mfp := `m.fp`
	return `WITH cur AS MATERIALIZED (
	SELECT data, expire_at, data->($10::text) AS meta FROM ` + Table + ` WHERE collection = $1::text AND id = $2::text
), mk AS MATERIALIZED (
	SELECT data, expire_at, data->'` + store.VersionFingerprint + `' AS fp FROM ` + Table + ` WHERE collection = $3::text AND id = $4::text
), st AS MATERIALIZED (
	SELECT c.expire_at IS NULL OR c.expire_at > $9::timestamptz AS live,
		(c.meta IS NULL OR json_typeof(c.meta) = 'object') AND ` + okInt(seq) + ` AND ` + ok(et, isTime) + ` AND ` + ok(pt, isTime) +
		` AND ` + ok(mid, isText) + ` AND ` + ok(key, isText) + ` AND ` + ok(fp, isText) + ` AS readable,
		v.*
	FROM cur c LEFT JOIN LATERAL json_to_record(CASE WHEN json_typeof(c.meta) = 'object' THEN c.meta END)
		AS v(` + strings.Join(cols, ", ") + `) ON true
), stv AS (
	SELECT live, readable,
		CASE WHEN readable THEN ` + seq + ` IS NOT NULL ELSE false END AS st_hasseq,
		CASE WHEN readable AND ` + seq + ` IS NOT NULL THEN ` + seq + `::text::bigint ELSE 0 END AS st_seq,
		CASE WHEN readable THEN ` + readTime(et) + ` ELSE '0001-01-01T00:00:00Z'::timestamptz END AS st_et,
		CASE WHEN readable THEN ` + readTime(pt) + ` ELSE '0001-01-01T00:00:00Z'::timestamptz END AS st_pt,
		CASE WHEN readable THEN ` + readText(mid) + ` ELSE '' END AS st_mid,
		CASE WHEN readable THEN ` + readText(key) + ` ELSE '' END AS st_key,
		CASE WHEN readable THEN ` + readText(fp) + ` ELSE '' END AS st_fp
	FROM st AS v
), mkv AS (
	SELECT m.expire_at IS NULL OR m.expire_at > $9::timestamptz AS live,
		` + ok(mfp, isText) + ` AS readable,
		CASE WHEN ` + ok(mfp, isText) + ` THEN ` + readText(mfp) + ` ELSE '' END AS fp
	FROM mk m
), inv AS (
	SELECT $11::boolean AS in_hasseq, $12::bigint AS in_seq, $13::timestamptz AS in_et, $14::timestamptz AS in_pt,
		$15::text AS in_mid, $16::text AS in_key, $17::text AS in_fp
), d AS (
	SELECT
		-- the marker: live and the same event (or a reused event id) makes a duplicate
		NOT CASE WHEN mkv.live IS NOT TRUE THEN false
			WHEN NOT mkv.readable THEN NULL
			ELSE ` + sameEvent("true", "mkv.fp") + ` END
		AND (
			-- no live document: the message applies
			stv.live IS NOT TRUE
			OR CASE WHEN NOT stv.readable THEN NULL ELSE
				-- the document's own event: a duplicate; else newer or stale (ordering.compare)
				NOT ` + sameEvent("stv.st_key = inv.in_key", "stv.st_fp") + `
				AND CASE
					WHEN inv.in_pt > stv.st_pt + $18::interval THEN ` + newerAcross("inv.in_", "stv.st_") + `
					WHEN stv.st_pt > inv.in_pt + $18::interval THEN NOT ` + newerAcross("stv.st_", "inv.in_") + `
					ELSE ` + row("inv.in_") + ` > ` + row("stv.st_") + `
				END
			END
		) AS apply
	FROM inv LEFT JOIN stv ON true LEFT JOIN mkv ON true
), write_marker AS (
	INSERT INTO ` + Table + ` (collection, id, data, expire_at)
	SELECT $3::text, $4::text, $5::json, $6::timestamptz FROM d WHERE d.apply AND $3::text IS NOT NULL
	ON CONFLICT (collection, id) DO UPDATE SET data = EXCLUDED.data, expire_at = EXCLUDED.expire_at
), write_target AS (
	INSERT INTO ` + Table + ` (collection, id, data, expire_at)
	SELECT $1::text, $2::text, $7::json, $8::timestamptz FROM d WHERE d.apply
	ON CONFLICT (collection, id) DO UPDATE SET data = EXCLUDED.data, expire_at = EXCLUDED.expire_at
)
SELECT d.apply, cur.data IS NOT NULL, cur.meta::text, cur.expire_at, mk.data IS NOT NULL, mk.fp::text, mk.expire_at
FROM d LEFT JOIN cur ON true LEFT JOIN mk ON true`
}()
