package pgstore

import (
	"context"
	"encoding/json"
	"errors"
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
	low, high := jumpBounds(v.Sequence, int64(w.MaxJump))
	var hash any // NULL: the message's fingerprint names no v1 hash
	if h, ok := strings.CutPrefix(v.Fingerprint, "sha256:"); ok {
		hash = h
	}
	return []any{
		w.Target.Collection, w.Target.ID, markerColl, markerID, markerDoc, markerExp, doc, expireAt(w.Doc),
		w.Now.UTC(), w.VersionField,
		v.HasSequence, v.Sequence, v.EventTime.UTC(), v.PublishTime.UTC(), v.EventKey, v.Fingerprint,
		v.PublishTime.Add(-w.Window).UTC(), v.PublishTime.Add(w.Window).UTC(), low,
		v.Fingerprint == "" || w.ProducerKey, v1Form(v.Fingerprint), hash, high,
	}, true
}

// jumpBounds are the sequences a step of at most jump (>= 0) reaches from
// seq downwards and upwards, clamped to int64: a stored sequence s is
// within the step of seq, in either direction, exactly when low <= s <=
// high (what Ordering.newerAcross computes without overflow).
func jumpBounds(seq, jump int64) (low, high int64) {
	low, high = math.MinInt64, math.MaxInt64
	if seq >= math.MinInt64+jump {
		low = seq - jump
	}
	if seq <= math.MaxInt64-jump {
		high = seq + jump
	}
	return low, high
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
//	$19, $23   the lowest and highest sequences within the largest step trusted across the
//	           window from the message's (jumpBounds)
//	$20        any stored fingerprint is this event's (the message has none, or its event
//	           key is the producer's, under which another is a reused event id: no write either)
//	$21        the v1 form of the message's fingerprint ("": none)
//	$22        the message's fingerprint without "sha256:" (NULL: it has no such prefix), which
//	           a stored fingerprint's v1 hash (after "+v1:") names it by
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
// Its cost on the server is mostly setting the statement up for each
// execution (PostgreSQL compiles every expression of the plan, each
// function call a step with its own lookups, whichever branch runs), so it
// is written for few steps: the stored version is read once, a level below
// the decision (c), each of its fields extracted once; the checks that it
// is in the form the engine writes use translate and a list of forms, not
// regular expressions (PostgreSQL caches a compiled expression, but its
// matcher builds its DFA states anew on each match); what depends on the message alone comes as parameters. A stored
// value in a form the engine would read otherwise (a field of another
// type, a time not in the form EncodeJSON writes) makes the answer NULL; a
// value PostgreSQL refuses to convert (a sequence beyond 64 bits, a date
// that does not exist, a NUL in a string) fails the statement (class 22,
// nothing written): both leave the decision to the engine.
var sqlWriteLatest = func() string {
	readTime := func(name string) string {
		return `COALESCE((vb->'` + name + `'->>'$eventpipe_time')::timestamptz, '0001-01-01T00:00:00Z'::timestamptz)`
	}
	seq := `'` + store.VersionSequence + `'`
	// ok: the stored version is absent or in the form the engine writes
	// (NULL counts as true: each check is NULL only for a field that is
	// absent). The sequence's own JSON text (json, as stored) is an
	// integer: -?[0-9]+.
	readable := `vb IS NULL OR (jsonb_typeof(vb) = 'object'
				AND ` + integerForm(`(meta->`+seq+`)::text`) + `
				AND ` + timeForm(`(vb->'`+store.VersionEventTime+`')::text`) + `
				AND ` + timeForm(`(vb->'`+store.VersionPublishTime+`')::text`) + `
				AND jsonb_typeof(vb->'` + store.VersionEventKey + `') = 'string'
				AND jsonb_typeof(vb->'` + store.VersionFingerprint + `') = 'string')`
	// The fields are read only from a version in that form.
	guard := func(x string) string { return `CASE WHEN ok IS NOT FALSE THEN ` + x + ` END` }
	// sameEvent is the engine's sameEvent of a stored fingerprint fp of a
	// record whose event key matches (keys.SameFingerprint against the
	// message's): the same event, or a reused event id (no write either).
	sameEvent := func(fp string) string {
		return `($20::boolean OR ` + fp + ` IN ('', $16::text, $21::text) OR substring(` + fp + ` FROM '\+v1:(.*)$') = $22::text)`
	}
	return `WITH d AS (
	SELECT CASE
			-- a live marker of this event (or a reused event id): a duplicate
			WHEN m.live AND m.fp_json IS NOT NULL AND json_typeof(m.fp_json) <> 'string' THEN NULL
			WHEN m.live AND ` + sameEvent(`m.fp`) + ` THEN false
			-- no live document: the message applies
			WHEN c.found IS NULL OR c.expire_at <= $9::timestamptz THEN true
			WHEN NOT c.ok THEN NULL
			-- the document's own event: a duplicate
			WHEN c.key = $15::text AND ` + sameEvent(`c.fp`) + ` THEN false
			-- newer or stale (Ordering.Compare): across the window (newerAcross), then within it
			WHEN c.pt < $17::timestamptz THEN (c.hasseq AND $11::boolean AND c.seq < $12::bigint AND c.seq >= $19::bigint)
				OR $13::timestamptz >= LEAST(c.et, c.pt)
			WHEN c.pt > $18::timestamptz THEN NOT ((c.hasseq AND $11 AND c.seq > $12 AND c.seq <= $23::bigint)
				OR c.et >= LEAST($13, $14::timestamptz))
			ELSE ($11, $12, $13, $15 COLLATE "C", $16 COLLATE "C") > (c.hasseq, c.seq, c.et, c.key COLLATE "C", c.fp COLLATE "C")
		END AS apply,
		c.found IS NOT NULL AS has_target, c.meta, c.expire_at AS target_exp,
		m.found IS NOT NULL AS has_marker, m.fp_json, m.expire_at AS marker_exp
	FROM (SELECT 1) AS one
	LEFT JOIN (
		SELECT true AS found, expire_at, meta, ok,
			COALESCE(vb ? ` + seq + `, false) AS hasseq,
			` + guard(`COALESCE((vb->>`+seq+`)::bigint, 0)`) + ` AS seq,
			` + guard(readTime(store.VersionEventTime)) + ` AS et,
			` + guard(readTime(store.VersionPublishTime)) + ` AS pt,
			COALESCE(vb->>'` + store.VersionEventKey + `', '') AS key,
			COALESCE(vb->>'` + store.VersionFingerprint + `', '') AS fp
		FROM (
			SELECT expire_at, meta, vb, ` + readable + ` AS ok FROM (
				SELECT expire_at, meta, meta::jsonb AS vb FROM (
					SELECT expire_at, data->($10::text) AS meta FROM ` + Table + ` WHERE collection = $1::text AND id = $2::text OFFSET 0
				) AS r OFFSET 0
			) AS v OFFSET 0
		) AS w OFFSET 0
	) AS c ON true
	LEFT JOIN (
		SELECT true AS found, expire_at, (expire_at IS NULL OR expire_at > $9::timestamptz) AS live,
			data->'` + store.VersionFingerprint + `' AS fp_json, COALESCE(data->>'` + store.VersionFingerprint + `', '') AS fp
		FROM ` + Table + ` WHERE collection = $3::text AND id = $4::text OFFSET 0
	) AS m ON true
), write_marker AS (
	INSERT INTO ` + Table + ` (collection, id, data, expire_at)
	SELECT $3::text, $4::text, $5::json, $6::timestamptz FROM d WHERE d.apply AND $3::text IS NOT NULL
	ON CONFLICT (collection, id) DO UPDATE SET data = EXCLUDED.data, expire_at = EXCLUDED.expire_at
), write_target AS (
	INSERT INTO ` + Table + ` (collection, id, data, expire_at)
	SELECT $1::text, $2::text, $7::json, $8::timestamptz FROM d WHERE d.apply
	ON CONFLICT (collection, id) DO UPDATE SET data = EXCLUDED.data, expire_at = EXCLUDED.expire_at
)
SELECT apply, has_target, meta, target_exp, has_marker, fp_json, marker_exp FROM d`
}()

// timeForm is SQL that is true when x, the jsonb text of a stored time, is
// {"$eventpipe_time": "…"} alone with the text EncodeJSON writes (what the
// engine reads as PostgreSQL does): yyyy-mm-ddThh:mm:ss, up to six
// fraction digits, Z, a year from 0001; or an object without the time, or
// with null (read as the zero time, as the statement always has); NULL
// when x is NULL (no time: the zero time). It checks with translate and a
// list of forms what a regular expression would, for a small part of the
// cost of matching one (PostgreSQL caches a compiled expression, but its
// matcher builds its DFA states anew on each match).
func timeForm(x string) string {
	forms := []string{`'{}'`, `'{"$eventpipe_time": null}'`}
	for frac := range 7 {
		f := ""
		if frac > 0 {
			f = "." + strings.Repeat("0", frac)
		}
		forms = append(forms, `'{"$eventpipe_time": "0000-00-00T00:00:00`+f+`Z"}'`)
	}
	return `(translate(` + x + `, '123456789', '000000000') IN (` + strings.Join(forms, ", ") + `)
				AND ` + x + ` NOT LIKE '{"$eventpipe\_time": "0000%')`
}

// integerForm is SQL that is true when x, the JSON text of a stored
// sequence, is an integer (-?[0-9]+; no JSON value's text is empty or "-",
// which it does not tell from one); NULL when x is NULL.
func integerForm(x string) string {
	return `rtrim(translate(` + x + `, '123456789', '000000000'), '0') IN ('', '-')`
}
