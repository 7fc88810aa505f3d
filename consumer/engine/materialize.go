package engine

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/eventpipe/eventpipe/consumer/keys"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/opcount"
)

// MetaField is the map field the engine keeps on every document it
// materialises: the event key, fingerprint and ordering key of the version
// stored. Write.Fields must not use this name.
const MetaField = "_eventpipe"

// Outcome is what happened to one message (and is the log field outcome).
type Outcome string

// Outcomes of Materialize.
const (
	// Applied: the effect happened now.
	Applied Outcome = logfields.OutcomeApplied
	// Duplicate: the same event was applied before; nothing was written.
	Duplicate Outcome = logfields.OutcomeDuplicate
	// Stale: a newer version is stored; nothing was written.
	Stale Outcome = logfields.OutcomeStale
)

// Mode is how Materialize writes the target document.
type Mode string

// Write modes.
const (
	// ModeLatest keeps the latest state of an aggregate: read the target,
	// compare ordering keys, write or skip. The default.
	ModeLatest Mode = "latest"
	// ModeCreate creates one document per event (an insert-once effect such
	// as a finding or a ledger line); a second delivery finds it exists.
	ModeCreate Mode = "create"
)

// Write is the effect of one message on the store.
type Write struct {
	// Collection is the target collection, e.g. "ops_services".
	Collection string
	// ID is the aggregate id (the producer's, un-normalised); the document id
	// is keys.DocID(Env, ID). Required in ModeLatest; in ModeCreate it
	// defaults to the event's logical key.
	ID string
	// Fields is the document to write (MetaField is added). The top-level
	// names MetaField and "expireAt" are reserved.
	Fields map[string]any
	// Source, when Fields is nil, supplies the fields on demand: the engine
	// builds them only when it writes the target document, so duplicate
	// and stale messages build none. Checks and errors are those of Fields.
	Source FieldSource
	// EventTime is the event's own time, the primary ordering key when the
	// producer has no sequence.
	EventTime time.Time
	// Sequence is the producer's per-aggregate sequence, when it has one.
	Sequence *int64
	// MaxSequenceJump, when positive, is the route's bound on a sequence
	// step trusted across the window (Config.MaxSequenceJump).
	MaxSequenceJump int64
	// Mode is ModeLatest (default) or ModeCreate.
	Mode Mode
	// DedupeMarker also records {prefix}dedupe/{env}__{event key}, in the same
	// transaction, so a republished event is a duplicate even after a newer
	// version replaced it. It costs one write per applied message; without it
	// a latest-state route needs none, because its ordering key is total.
	DedupeMarker bool
}

// FieldSource supplies a Write's fields without building them first
// (route.Routed implements it).
type FieldSource interface {
	// HasField reports whether the fields have the top-level name.
	HasField(name string) bool
	// Values returns every leaf value the fields will hold (nil entries are
	// absent fields and are ignored).
	Values() []any
	// NewFields builds the fields: a new map on every call that shares no
	// map or slice with anything else, so the engine owns it.
	NewFields() map[string]any
}

// Result reports one Materialize call. Its fields map to the log fields
// outcome, doc_path, idempotency_doc, write_kind, store_reads, store_writes.
type Result struct {
	Outcome Outcome
	// DocPath is the target document, "collection/id".
	DocPath string
	// IdempotencyDoc is the document that decided the outcome: the dedupe
	// marker when one is used, else the target.
	IdempotencyDoc string
	// WriteKind is logfields.WriteKindSet when the target document was
	// written (created, in ModeCreate) and logfields.WriteKindNone when not;
	// a dedupe marker written alongside shows in Ops.
	WriteKind string
	// Ops counts the store operations made, across transaction retries.
	Ops opcount.Counts
	// Warning is set when a reused event id was accepted in warn mode.
	Warning string
}

// Reads returns Ops.Reads.
func (r Result) Reads() int64 { return r.Ops.Reads }

// Writes returns the writes and deletes made.
func (r Result) Writes() int64 { return r.Ops.Writes + r.Ops.Deletes }

// opMaterialize is Materialize's Error.Op.
const opMaterialize = "materialize"

type materialization struct {
	target     store.Key
	marker     store.Key
	markerPath string
	messageID  string
	// order is the message's version, its event key and fingerprint
	// included.
	order    Version
	ordering Ordering
	// jumpFrom is the stored sequence when the transaction that decided
	// the message found it more than the bound away from the message's
	// (logged once the outcome is known: see logJump).
	jumpFrom *int64
	// appliedAt is set by the transaction that may write the document.
	appliedAt time.Time
	// fields are the document's fields without MetaField: in the value
	// model, and shared with Write.Fields (not to be modified); nil when
	// source builds them.
	fields map[string]any
	// source builds owned fields, all in the value model (Write.Source).
	source FieldSource
	// checkSize measures the document before it is written (a large
	// payload, or fields the caller built).
	checkSize bool
	doc       store.Document // built from fields on the first write
	res       Result
}

// document returns the target document: fields plus MetaField (a new
// top-level map, never changed once built: when m owns it the store may
// keep it as it is, see create).
// Only applied messages need it, so it is built on first use.
func (m *materialization) document() (store.Document, error) {
	if m.doc.Fields != nil {
		return m.doc, nil
	}
	var fields map[string]any
	if m.source != nil {
		fields = m.source.NewFields() // owned, and checked to be in the value model
	} else {
		fields = make(map[string]any, len(m.fields)+1)
		maps.Copy(fields, m.fields)
	}
	meta := map[string]any{metaEventKey: m.order.EventKey, metaAppliedAt: m.appliedAt, metaMessageID: m.messageID}
	if m.order.Fingerprint != "" {
		meta[metaFingerprint] = m.order.Fingerprint
	}
	m.order.toMeta(meta)
	fields[MetaField] = meta
	doc := store.Document{Fields: fields}
	if m.checkSize {
		if err := checkDocumentSize(opMaterialize, m.res.DocPath, doc); err != nil {
			return store.Document{}, err
		}
	}
	m.doc = doc
	return m.doc, nil
}

// owned reports whether m's document (document) is the engine's alone: its
// fields come from a FieldSource, which gives a new map sharing nothing;
// fields copied from a Write share its nested maps with the caller.
func (m *materialization) owned() bool { return m.source != nil }

// create creates doc, m's document, at m's target: given to the store
// when m owns it (store.OwnedWriter), since the engine never changes a
// document it built (document caches it, and retries write it again).
func (m *materialization) create(ctx context.Context, tx store.Tx, doc store.Document) error {
	if m.owned() {
		return store.CreateOwned(ctx, tx, m.target, doc)
	}
	return tx.Create(ctx, m.target, doc)
}

// set is create's Set.
func (m *materialization) set(ctx context.Context, tx store.Tx, doc store.Document) error {
	if m.owned() {
		return store.SetOwned(ctx, tx, m.target, doc)
	}
	return tx.Set(ctx, m.target, doc)
}

// MaxDocumentBytes is the largest document the engine writes: Firestore's
// limit, kept on every store so that a message behaves the same whatever
// the store.
const MaxDocumentBytes = 1 << 20

// sizeCheckFrom is the payload size from which a target document is
// measured before it is written: below it, fields taken from the payload,
// ids (at most limits.MaxIDBytes each) and the engine's own fields cannot
// come near MaxDocumentBytes.
const sizeCheckFrom = 256 << 10

// checkDocumentSize makes a document too large for Firestore poison, with
// the fix, instead of a write every store but Firestore accepts and
// Firestore refuses forever. Its size is taken as its JSON encoding.
func checkDocumentSize(op, path string, doc store.Document) error {
	enc, err := store.EncodeJSON(doc)
	if err != nil {
		return err
	}
	if len(enc) > MaxDocumentBytes {
		return newError(TypePoison, op, "%s would take about %d bytes; a document holds at most %d (fix: route fewer or smaller fields into it)",
			path, len(enc), MaxDocumentBytes)
	}
	return nil
}

// Materialize applies one message's effect atomically: in ModeLatest it
// reads the target, compares ordering keys and writes or skips in one
// transaction (1 read + 1 write applied, 1 read + 0 writes duplicate or
// stale); in ModeCreate it creates the target (0 reads + 1 write applied).
// A ModeLatest delivery for a document whose transaction is in flight
// waits and is decided with the others waiting, in one transaction (see
// Config.MaxWaitingPerDocument): it returns once that has committed, with
// its own outcome, and the group's one read and write are counted on the
// winner's Result.
// Errors are *Error: poison for a reused event id (error mode) or bad input,
// transient or configuration for store errors (nothing was recorded; the
// Result then has no Outcome but still names the documents and counts the
// operations spent).
func (e *Engine) Materialize(ctx context.Context, ev Event, w Write) (Result, error) {
	m, err := e.prepare(ctx, ev, w)
	if err != nil {
		return Result{}, err
	}
	if err := e.Hit(ctx, ProjectionBeforeWrite); err != nil {
		return Result{}, err
	}
	switch {
	case w.Mode == ModeCreate:
		err = e.create(ctx, m)
	case e.coalescer != nil:
		err = e.coalesce(ctx, m)
	default:
		err = e.materializeLatest(ctx, m)
	}
	if err != nil {
		// Nothing was recorded; keep the paths and the operations spent for the log.
		return Result{DocPath: m.res.DocPath, IdempotencyDoc: m.res.IdempotencyDoc, Ops: m.res.Ops}, wrap(opMaterialize, err)
	}
	e.logJump(ctx, m)
	if err := e.Hit(ctx, ProjectionAfterWrite); err != nil {
		return Result{}, err
	}
	return m.res, nil
}

// noteJump records, for logJump, that m's sequence and the stored
// version's are more than the bound apart.
func (m *materialization) noteJump(stored Version) {
	m.jumpFrom = nil
	if m.ordering.jump(m.order, stored) {
		seq := stored.Sequence
		m.jumpFrom = &seq
	}
}

// logJump logs, at WARNING with both sequences, a message whose sequence
// was more than the bound away from the stored version's: a producer
// whose sequence jumped, or a bogus one on either side. Inside the window
// the sequences still order the two (so any permutation of deliveries
// converges); across it the jump does not count (ordering.compare).
func (e *Engine) logJump(ctx context.Context, m *materialization) {
	if m.jumpFrom == nil {
		return
	}
	e.cfg.Logger.WarnContext(ctx, "sequence jump beyond the maximum from the stored version: trusted only within the window of its publish time",
		logfields.MessageID, m.messageID, "sequence", m.order.Sequence, "stored_sequence", *m.jumpFrom,
		"max_sequence_jump", m.ordering.MaxSequenceJump, logfields.Outcome, string(m.res.Outcome), logfields.DocPath, m.res.DocPath)
}

// create is the ModeCreate transaction, then, if the document exists,
// the read that tells a duplicate from a reused event id.
func (e *Engine) create(ctx context.Context, m *materialization) error {
	err := e.runTx(ctx, &m.res.Ops, func(ctx context.Context, tx store.Tx) error {
		m.res.Outcome, m.res.WriteKind, m.res.Warning = Applied, logfields.WriteKindSet, ""
		m.appliedAt = e.now()
		doc, err := m.document()
		if err != nil {
			return err
		}
		return m.create(ctx, tx, doc)
	})
	if isAlreadyExists(err) {
		err = e.runTx(ctx, &m.res.Ops, func(ctx context.Context, tx store.Tx) error {
			return e.createSlow(ctx, tx, m)
		})
	}
	return err
}

// materializeLatest is one delivery's ModeLatest transaction, then, if its
// dedupe marker exists, the transaction that reads the marker first (to
// tell a duplicate from an expired marker, which TTL deletion lags).
// A store that decides the write itself (store.LatestWriter) is asked
// first, and only when it cannot decide does the engine run its own.
func (e *Engine) materializeLatest(ctx context.Context, m *materialization) error {
	if e.latestWriter != nil {
		if decided, err := e.writeLatest(ctx, m); decided {
			return err
		}
	}
	err := e.runTx(ctx, &m.res.Ops, func(ctx context.Context, tx store.Tx) error {
		return e.latest(ctx, tx, m, false, e.now())
	})
	if isAlreadyExists(err) {
		err = e.runTx(ctx, &m.res.Ops, func(ctx context.Context, tx store.Tx) error {
			return e.latest(ctx, tx, m, true, e.now())
		})
	}
	return err
}

func (e *Engine) prepare(ctx context.Context, ev Event, w Write) (*materialization, error) {
	const op = opMaterialize
	if err := validCollection(w.Collection); err != nil {
		return nil, newError(TypeConfiguration, op, "Write.Collection %q: %v", w.Collection, err)
	}
	lazy := w.Fields == nil && w.Source != nil
	if lazy && !valuesInModel(w.Source.Values()) {
		// Some value needs converting (or is rejected): build the fields
		// now and take the Fields path, errors included.
		w.Fields, lazy = w.Source.NewFields(), false
	}
	for _, reserved := range []string{MetaField, store.ExpireAtField} {
		has := lazy && w.Source.HasField(reserved)
		if !lazy {
			_, has = w.Fields[reserved]
		}
		if has {
			return nil, newError(TypeConfiguration, op, "Write.Fields has the reserved field %q (the engine's own): rename the route's output field", reserved)
		}
	}
	switch w.Mode {
	case "":
		w.Mode = ModeLatest
	case ModeLatest, ModeCreate:
	default:
		return nil, newError(TypeConfiguration, op, "Write.Mode %q: use %q or %q", w.Mode, ModeLatest, ModeCreate)
	}
	if w.MaxSequenceJump < 0 {
		return nil, newError(TypeConfiguration, op, "Write.MaxSequenceJump is negative (%d): use a positive bound, or 0 for Config.MaxSequenceJump", w.MaxSequenceJump)
	}
	key, fp, err := ev.eventKey()
	if err != nil {
		return nil, newError(TypePoison, op, "%v", err)
	}
	m := &materialization{messageID: ev.MessageID}
	var target string
	switch {
	case w.ID != "":
		// keys.DocID(Env, ID), with the environment normalised once, in New.
		id, err := keys.NormalizeID(w.ID)
		if err != nil {
			return nil, newError(TypePoison, op, "aggregate id: %v", err)
		}
		m.target, target = e.envKey(w.Collection, id)
	case w.Mode == ModeCreate:
		// One document per event: under a derived key, the payload tells
		// events apart too.
		m.target, target = e.envKey(w.Collection, eventRecordID(key, fp))
	default:
		return nil, newError(TypePoison, op, "the message has no aggregate id (Write.ID): latest-state writes need one to name the document")
	}
	published := e.publishTime(ctx, ev, target)
	m.order = Version{HasSequence: w.Sequence != nil, EventTime: e.eventTime(ctx, ev, w.EventTime, published, target),
		PublishTime: published, EventKey: key, Fingerprint: fp}
	if w.Sequence != nil {
		m.order.Sequence = *w.Sequence
	}
	m.ordering = e.ordering(w.MaxSequenceJump)
	// Fields not in the value model are converted (or rejected) now; the
	// document itself is built when it is written (see document).
	if lazy {
		m.source = w.Source
	} else if m.fields, err = store.ValueModelFields(w.Fields); err != nil {
		return nil, newError(TypePoison, op, "Write.Fields: %v", err)
	}
	m.res = Result{DocPath: target, IdempotencyDoc: target}
	m.checkSize = !lazy || len(ev.Payload)+attributeBytes(ev.Attributes) >= sizeCheckFrom
	if w.DedupeMarker {
		m.marker, m.markerPath = e.envKey(e.dedupe, key)
		m.res.IdempotencyDoc = m.markerPath
	}
	return m, nil
}

// ordering is the engine's ordering guard, with a route's bound on the
// sequence step trusted across the window (0: Config.MaxSequenceJump).
func (e *Engine) ordering(maxJump int64) Ordering {
	o := Ordering{Window: e.cfg.MaxEventSkew, MaxSequenceJump: uint64(e.cfg.MaxSequenceJump)}
	if maxJump > 0 {
		o.MaxSequenceJump = uint64(maxJump)
	}
	return o
}

// eventTime is the event time that orders an event: its own, as sent,
// whatever it is, since every copy of the event must rank the same
// (Ordering). One more than the window ahead of its publish time (a
// producer's clock far off, a placeholder such as 9999-12-31) is logged at
// WARNING with both times: it wins inside the window, and holds its
// aggregate at most the window (Ordering's invariant).
func (e *Engine) eventTime(ctx context.Context, ev Event, at, published time.Time, target string) time.Time {
	at = at.UTC().Truncate(time.Microsecond)
	if !published.IsZero() && at.After(published.Add(e.cfg.MaxEventSkew)) {
		e.cfg.Logger.WarnContext(ctx, "event time is beyond the window ahead of the publish time: it holds its aggregate at most the window",
			logfields.MessageID, ev.MessageID, logfields.EventTime, at, logfields.PublishTime, published,
			"max_event_skew", e.cfg.MaxEventSkew.String(), logfields.DocPath, target)
	}
	return at
}

// publishTime is the publish time that orders ev (TrustedPublishTime at
// the engine's clock); one beyond ClockTolerance ahead of the clock is
// replaced by the time received and logged at WARNING with both times.
func (e *Engine) publishTime(ctx context.Context, ev Event, target string) time.Time {
	now := e.now()
	trusted := TrustedPublishTime(ev.PublishTime, now)
	if published := ev.PublishTime.UTC().Truncate(time.Microsecond); !trusted.Equal(published) {
		e.cfg.Logger.WarnContext(ctx, "publish time is beyond the clock tolerance ahead of the clock: ordered by the time received",
			logfields.MessageID, ev.MessageID, logfields.PublishTime, published, "received_at", trusted,
			"clock_tolerance", ClockTolerance.String(), logfields.DocPath, target)
	}
	return trusted
}

// envKey returns the key of collection/{env}__{id} (keys.JoinID with the
// engine's normalised env) and its String(), sharing one allocation.
func (e *Engine) envKey(collection, id string) (store.Key, string) {
	path := collection + "/" + e.envID + keys.Separator + id
	return store.Key{Collection: collection, ID: path[len(collection)+1:]}, path
}

// latest is the ModeLatest transaction at time now. Without slow it
// trusts Create to find an existing marker; with slow it reads the marker
// first (so an expired one is overwritten) and costs one more read. It
// only reads the documents it gets. It is the one home of a lone
// delivery's decision: a store.LatestWriter's is tested against it, and
// its outcome is derived from it (writeLatest).
func (e *Engine) latest(ctx context.Context, tx store.Tx, m *materialization, slow bool, now time.Time) error {
	m.res.Outcome, m.res.WriteKind, m.res.Warning, m.jumpFrom = "", logfields.WriteKindNone, "", nil
	m.appliedAt = now // the document's appliedAt, if this transaction writes it
	useMarker := m.marker != store.Key{}
	if slow && useMarker {
		if dup, err := m.markedDuplicate(ctx, e, tx, now); dup || err != nil {
			return err
		}
		// No live marker, or another event under the same derived key: ordered below.
	}
	cur, exists, err := getLive(ctx, tx, m.target, now)
	if err != nil {
		return err
	}
	if exists {
		stored := versionFromMeta(sub(cur.Fields, MetaField)) // its event key and fingerprint too
		if dup, err := m.duplicateOf(ctx, e, m.target, stored.EventKey, stored.Fingerprint); dup || err != nil {
			return err
		}
		m.noteJump(stored)
		if !m.ordering.Supersedes(m.order, stored) {
			m.res.Outcome = Stale
			if useMarker && !slow {
				// Older than the state: a republished event is a duplicate
				// by its marker (IdempotencyDoc already names it). One more
				// read, only on this path.
				_, err := m.markedDuplicate(ctx, e, tx, now)
				return err
			}
			return nil
		}
	}
	if useMarker {
		if err := e.writeMarker(ctx, tx, m, now, slow); err != nil {
			return err
		}
	}
	m.res.WriteKind = logfields.WriteKindSet
	m.res.Outcome = Applied
	doc, err := m.document()
	if err != nil {
		return err
	}
	return m.set(ctx, tx, doc)
}

// writeMarker writes m's dedupe marker (the fields eventKey, messageId,
// fingerprint, target and createdAt): created without a prior read, so
// that an existing one fails the transaction (store.ErrAlreadyExists), or
// with slow, after the marker was read, set.
func (e *Engine) writeMarker(ctx context.Context, tx store.Tx, m *materialization, now time.Time, slow bool) error {
	marker := e.markerDoc(m, now) // built here and never changed: given to the store
	if slow {
		return store.SetOwned(ctx, tx, m.marker, marker)
	}
	return store.CreateOwned(ctx, tx, m.marker, marker)
}

// markerDoc is m's dedupe marker written at now.
func (e *Engine) markerDoc(m *materialization, now time.Time) store.Document {
	return store.Document{Fields: map[string]any{metaEventKey: m.order.EventKey, metaMessageID: m.messageID,
		metaFingerprint: m.order.Fingerprint, "target": m.res.DocPath, "createdAt": now}, ExpireAt: now.Add(e.cfg.DedupeTTL)}
}

// duplicateOf reports whether the event recorded in rec (its key and
// fingerprint) is this message's event (Engine.sameEvent), and if so makes
// the outcome a duplicate, with a warning or an error for a reused event id.
func (m *materialization) duplicateOf(ctx context.Context, e *Engine, rec store.Key, storedKey, storedFP string) (bool, error) {
	same, warning, err := e.sameEvent(ctx, opMaterialize, rec, storedKey, storedFP, m.order.EventKey, m.order.Fingerprint)
	if same {
		m.res.Outcome, m.res.Warning = Duplicate, warning
	}
	return same, err
}

// markedDuplicate reads m's dedupe marker and reports whether it is live
// and records m's event (duplicateOf).
func (m *materialization) markedDuplicate(ctx context.Context, e *Engine, tx store.Tx, now time.Time) (bool, error) {
	md, live, err := getLive(ctx, tx, m.marker, now)
	if err != nil || !live {
		return false, err
	}
	return m.duplicateOf(ctx, e, m.marker, m.order.EventKey, str(md.Fields, metaFingerprint))
}

// createSlow runs after ModeCreate found the document: a duplicate, unless
// the fingerprints differ.
func (e *Engine) createSlow(ctx context.Context, tx store.Tx, m *materialization) error {
	m.res.Outcome, m.res.WriteKind, m.res.Warning = Duplicate, logfields.WriteKindNone, ""
	cur, err := tx.Get(ctx, m.target)
	if isNotFound(err) {
		return fmt.Errorf("%s vanished between create and read: %w", m.target, store.ErrNotFound)
	}
	if err != nil {
		return err
	}
	meta := sub(cur.Fields, MetaField)
	m.res.Warning, err = e.fingerprintConflict(ctx, opMaterialize, m.target, str(meta, metaFingerprint), m.order.Fingerprint)
	return err
}

// valuesInModel reports whether every non-nil value is in the store's value
// model (so fields built from them need no conversion).
func valuesInModel(vs []any) bool {
	for _, v := range vs {
		if v != nil && !store.InValueModel(v) {
			return false
		}
	}
	return true
}
