package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/eventpipe/eventpipe/consumer/keys"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/opcount"
)

// A reservation is the one record behind every effect outside the store
// that must happen once per key: a Pub/Sub event's handler call or action
// (a delivery: {prefix}leases, keyed by route and the event's logical
// key), a callback, and an API request's Idempotency-Key
// ({prefix}receipts, keyed by route and id). Its life:
//
//	Claim    absent or released  -> pending, held by this caller until Until,
//	         with a fencing token and an attempt number; pending and live:
//	         in_progress; pending and lapsed (its holder died or was cut):
//	         taken over; completed or rejected: replayed.
//	Extend   pending -> pending, held a lease length longer (heartbeat).
//	Settle   pending -> completed (the effect happened: its result is
//	         replayed) or rejected (refused for good: its result is replayed,
//	         nothing is called again), running an Effect in the same
//	         transaction.
//	Release  pending -> released (nothing durable happened, or nobody can
//	         tell: the next Claim calls again, as the next attempt).
//
// Extend, Settle and Release succeed only for the holder whose token the
// record still carries: a holder that was taken over gets a stale error
// (code FENCED) and changes nothing.

// Reservation statuses, in the field "status" of every reservation record:
// the one vocabulary of deliveries, callbacks and API keys.
const (
	StatusPending   = "pending"
	StatusReleased  = "released"
	StatusCompleted = "completed"
	StatusRejected  = "rejected"
)

// statusOf reads a record's status, mapping those written before the one
// vocabulary: leases' PENDING, COMPLETED, FAILED; receipts' processing,
// released and the callback's own final status (any other value: the
// callback was applied).
func statusOf(f map[string]any) string {
	switch s := str(f, "status"); s {
	case StatusPending, "PENDING", "processing":
		return StatusPending
	case StatusReleased, "FAILED":
		return StatusReleased
	case StatusRejected:
		return StatusRejected
	case StatusCompleted, "COMPLETED", "":
		return StatusCompleted
	default:
		return StatusCompleted
	}
}

// Request names what a reservation guards and how long a claim holds.
type Request struct {
	// Scope is the route (or handler) the effect belongs to, e.g.
	// "orders", "validation", "http-idempotency".
	Scope string
	// Event, for a Pub/Sub delivery: the reservation is the event's
	// ({prefix}leases), keyed by Scope and the event's logical key (the
	// same across redeliveries and republishes); its payload's fingerprint
	// detects a reused event id.
	Event *Event
	// ID, for anything else (a callback id, an API key's scope): kept
	// exactly (keys.EscapeID) in {prefix}receipts, keyed by Scope and ID.
	ID string
	// Payload is the raw body of an ID request; its fingerprint detects a
	// reused id. Fingerprint, when set, is one the caller computed (a body
	// that is not JSON) and Payload is not fingerprinted.
	Payload     []byte
	Fingerprint string
	// Fields are stored on the record (e.g. the target of a callback).
	Fields map[string]any
	// Lease is how long a claim holds before another may take it over
	// (its holder died or was cut off), and how much Extend adds: the
	// reservation's length, per request. 0: Config.LeaseDuration.
	Lease time.Duration
	// TTL is how long the record is kept (its expireAt). 0: DedupeTTL for
	// an Event, ReceiptTTL for an ID.
	TTL time.Duration
	// MaxAttempts bounds the claims of an Event's reservation: once that
	// many have been released (failed, lapsed or cut), Claim is poison.
	// 0: Config.MaxAttempts for an Event; ID reservations are not bounded.
	MaxAttempts int
	// Aggregate and Sequence, both set on an Event request, add the
	// ordering guard (Ordering) of the aggregate: a claim of an event that
	// does not supersede the last one completed for the aggregate is
	// stale, and Settle(completed) advances it. MaxSequenceJump is the
	// route's Ordering bound (0: Config.MaxSequenceJump).
	Aggregate       string
	Sequence        *int64
	MaxSequenceJump int64
}

// Reservation is one claim of a reservation record; keep it to Extend,
// Settle or Release it.
type Reservation struct {
	// Doc is the record, "collection/id": the key handlers see
	// (Idempotency-Key of deliveries).
	Doc string
	// Status is StatusPending for a claim this caller holds, or the
	// settled status (StatusCompleted, StatusRejected) when Replayed.
	Status string
	// Replayed says the effect was settled before: this call must answer
	// with Result (and Status) and call nothing.
	Replayed bool
	// Result is what a settled reservation answers with (set by Settle).
	Result map[string]any
	// Token is the fencing token: it grows with every claim of the record.
	Token int64
	// Attempt counts the claims of the record, this one included (a
	// released, lapsed or cut one counts). With an in_progress error: the
	// holder's.
	Attempt int64
	// PreviousInDoubt says the previous attempt ended without anyone
	// knowing whether its effect happened (its call timed out, lost its
	// connection or was cut; or its holder died): the handler is told.
	PreviousInDoubt bool
	// Until is when this claim lapses unless extended.
	Until time.Time
	// TookOver is true when this claim took over a lapsed one (a holder
	// that died or was cut off): lease_event stale_found.
	TookOver bool
	// ReceivedAt is when the key was first claimed.
	ReceivedAt time.Time
	// HeldUntil is, with an in_progress error from Claim, when the
	// holder's claim lapses (zero when the record was in use and could
	// not be read).
	HeldUntil time.Time
	// Ops counts the store operations of the call that returned it.
	Ops opcount.Counts

	key       store.Key
	aggregate store.Key
	version   Version
	messageID string
	event     *Event
	ordering  Ordering
	scope     string
	lease     time.Duration
	ttl       time.Duration
	maxTries  int64
	// record is the record as this claim (or its last Extend) wrote it:
	// what a later write of this holder starts from (update).
	record map[string]any
}

// reservationKey is where r's record lives, its fingerprint, and the
// aggregate record of its ordering guard (zero without one).
type reservationKey struct {
	key, agg    store.Key
	eventKey    string
	fingerprint string
}

func (e *Engine) reservationKey(op string, r Request) (reservationKey, error) {
	scope, err := keys.NormalizeID(r.Scope)
	if err != nil {
		return reservationKey{}, newError(TypeConfiguration, op, "Request.Scope: %v", err)
	}
	var k reservationKey
	switch {
	case r.Event != nil && r.ID != "":
		return k, newError(TypeConfiguration, op, "Request has both an Event and an ID: give one")
	case r.Event != nil:
		if k.eventKey, k.fingerprint, err = r.Event.eventKey(); err != nil {
			return k, newError(TypePoison, op, "%v", err)
		}
		k.key = store.Key{Collection: e.leases, ID: keys.JoinID(e.envID, scope, eventRecordID(k.eventKey, k.fingerprint))}
		if r.Aggregate != "" && r.Sequence != nil {
			a, err := keys.NormalizeID(r.Aggregate)
			if err != nil {
				return k, newError(TypePoison, op, "aggregate id: %v", err)
			}
			k.agg = store.Key{Collection: e.leases, ID: keys.JoinID(e.envID, scope, "a-"+a)}
		}
	default:
		id, err := keys.EscapeID(r.ID)
		if err != nil {
			return k, newError(TypePoison, op, "id: %v (the caller must send the id it was given)", err)
		}
		k.key = store.Key{Collection: e.receipts, ID: keys.JoinID(e.envID, scope, id)}
		k.fingerprint = r.Fingerprint
		if k.fingerprint == "" && len(r.Payload) > 0 {
			if k.fingerprint, err = keys.Fingerprint(r.Payload); err != nil {
				return k, newError(TypePoison, op, "payload: %v; fix: %s", err, payloadFix())
			}
		}
	}
	return k, nil
}

// Claim claims the reservation r names for this caller. It returns a
// pending Reservation this caller holds, a Replayed one (completed or
// rejected before: answer with its Result, call nothing), or an *Error:
// in_progress (another caller holds it: retry after HeldUntil), stale (the
// event does not supersede the last one completed for its aggregate),
// poison (a reused event id or callback id, or an Event whose attempts ran
// out), configuration, transient. A lapsed claim is taken over, and a
// released one claimed again, each as the next attempt.
//
// It costs one read and one write when it claims (one more read with an
// aggregate), and one read otherwise. The record is read without waiting
// for a transaction that holds it (store.NoWait): one that is held right
// now (being claimed or settled) is read from a snapshot instead, so
// concurrent replays of a settled key all replay, and a key being claimed
// is in_progress at once.
func (e *Engine) Claim(ctx context.Context, r Request) (Reservation, error) {
	const op = "claim reservation"
	k, err := e.reservationKey(op, r)
	if err != nil {
		return Reservation{}, err
	}
	extra, err := store.CopyFields(r.Fields)
	if err != nil {
		return Reservation{}, newError(TypeConfiguration, op, "Request.Fields: %v", err)
	}
	rv := Reservation{Doc: k.key.String(), key: k.key, aggregate: k.agg, event: r.Event, scope: r.Scope,
		lease: cmpPositive(r.Lease, e.cfg.LeaseDuration)}
	rv.ttl, rv.maxTries = r.TTL, int64(r.MaxAttempts)
	if r.Event != nil {
		rv.messageID = r.Event.MessageID
		rv.ttl = cmpPositive(rv.ttl, e.cfg.DedupeTTL)
		if rv.maxTries == 0 {
			rv.maxTries = int64(e.cfg.MaxAttempts)
		}
		if k.agg != (store.Key{}) {
			// Ranked by sequence alone: an event at or below the last one
			// completed is stale.
			rv.version = Version{HasSequence: true, Sequence: *r.Sequence, PublishTime: e.publishTime(ctx, *r.Event, k.agg.String())}
		}
	} else {
		rv.ttl = cmpPositive(rv.ttl, e.cfg.ReceiptTTL)
	}
	if rv.lease >= rv.ttl {
		return Reservation{}, newError(TypeConfiguration, op, "the reservation's length (%s) must be shorter than its record's TTL (%s)", rv.lease, rv.ttl)
	}
	rv.ordering = e.ordering(r.MaxSequenceJump)
	claimed, decided := rv, false
	if e.conditional != nil && k.agg == (store.Key{}) {
		claimed, decided, err = e.claimAbsent(ctx, op, r, k, extra, rv)
	}
	if !decided {
		err = e.runTx(ctx, &claimed.Ops, func(ctx context.Context, tx store.Tx) error {
			now := e.now()
			ops := claimed.Ops
			claimed = rv
			claimed.Ops, claimed.ReceivedAt = ops, now
			// Read the record even when expired: its token keeps fencing
			// monotonic. Without waiting: see held.
			cur, err := tx.Get(store.NoWait(ctx), k.key)
			if errors.Is(err, store.ErrLocked) {
				return errHeld
			}
			exists := err == nil
			if err != nil && !isNotFound(err) {
				return err
			}
			f := cur.Fields
			live := exists && !cur.Expired(now)
			if live {
				settled, err := e.inspect(ctx, op, k, f, now, &claimed)
				if err != nil || settled {
					return err
				}
			}
			if k.agg != (store.Key{}) {
				ad, ok, err := getLive(ctx, tx, k.agg, now)
				if err != nil {
					return err
				}
				if ok {
					if last := aggregateVersion(ad.Fields); !rv.ordering.Supersedes(claimed.version, last) {
						return newError(TypeStale, op, "sequence %d of aggregate %q does not supersede the last one completed (%d)", claimed.version.Sequence, r.Aggregate, last.Sequence)
					}
				}
			}
			var prev map[string]any // the live record claimed again or taken over
			if live {
				prev = f
			}
			fields, err := e.claimRecord(op, r, k, extra, i64(f, "token"), prev, now, &claimed)
			if err != nil {
				return err
			}
			return tx.Set(ctx, k.key, store.Document{Fields: fields, ExpireAt: now.Add(rv.ttl)})
		})
	}
	if errors.Is(err, errHeld) {
		claimed, err = e.held(ctx, op, k, rv, claimed.Ops)
	}
	if err != nil {
		t, code := Classify(err)
		e.cfg.Logger.InfoContext(ctx, "lease", logfields.LeaseEvent, logfields.LeaseAcquireFailed, logfields.IdempotencyDoc, k.key.String(),
			logfields.ErrorType, string(t), logfields.ErrorCode, code)
		return claimed, wrap(op, err)
	}
	if claimed.Replayed {
		return claimed, nil
	}
	event := logfields.LeaseAcquired
	if claimed.TookOver {
		event = logfields.LeaseStaleFound
	}
	e.cfg.Logger.InfoContext(ctx, "lease", logfields.LeaseEvent, event, logfields.IdempotencyDoc, k.key.String(), "token", claimed.Token, "attempt", claimed.Attempt)
	hit := WorkerAfterClaim
	if r.Event == nil {
		hit = CallbackAfterReserve
	}
	if err := e.Hit(ctx, hit); err != nil {
		return Reservation{}, err
	}
	return claimed, nil
}

// claimRecord is the record a claim writes at now, after the token
// lastToken (of the record found, expired or not: fencing stays
// monotonic), and sets claimed's token, attempt and lease. prev is the
// live record claimed again (released) or taken over (lapsed), nil for a
// first claim: its attempts count on, bounded by the request's.
func (e *Engine) claimRecord(op string, r Request, k reservationKey, extra map[string]any, lastToken int64, prev map[string]any, now time.Time, claimed *Reservation) (map[string]any, error) {
	claimed.Token, claimed.Attempt = lastToken+1, 1
	fields := map[string]any{"scope": r.Scope, metaFingerprint: k.fingerprint, "receivedAt": now}
	if extra != nil {
		fields["fields"] = extra
	}
	if r.Event != nil {
		fields[metaEventKey], fields[metaMessageID] = k.eventKey, r.Event.MessageID
	} else {
		fields["id"] = r.ID
	}
	if prev != nil {
		attempts := i64(prev, "attempts")
		if claimed.maxTries > 0 && attempts >= claimed.maxTries {
			return nil, newError(TypePoison, op, "%s was tried %d times (the maximum is %d): %s", k.key, attempts, claimed.maxTries, str(prev, "lastError"))
		}
		claimed.Attempt = attempts + 1
		if t := tm(prev, "receivedAt"); !t.IsZero() {
			claimed.ReceivedAt = t
		}
		fields["receivedAt"] = claimed.ReceivedAt
		fields["lastError"] = str(prev, "lastError")
		if claimed.TookOver || prev["inDoubt"] == true {
			claimed.PreviousInDoubt = true
		}
	}
	claimed.Status, claimed.Until = StatusPending, now.Add(claimed.lease)
	fields["status"], fields["owner"], fields["token"], fields["attempts"] = StatusPending, e.cfg.Owner, claimed.Token, claimed.Attempt
	fields["leaseUntil"], fields["updatedAt"] = claimed.Until, now
	claimed.record = fields
	return fields, nil
}

// claimAbsent claims a key no record has in one round trip (the store's
// store.ConditionalWriter: the record written only if absent). When a
// record is there it decides from it, as Claim's transaction would, what
// that record decides alone: a settled one replays, a live claim is
// in_progress, a reused key is poison. Anything else (no record read: it
// is held right now; an expired, released or lapsed one, whose claim
// carries its token or its attempts on) is left undecided, having written
// nothing, for Claim's transaction.
func (e *Engine) claimAbsent(ctx context.Context, op string, r Request, k reservationKey, extra map[string]any, rv Reservation) (Reservation, bool, error) {
	now := e.now()
	claimed := rv
	claimed.ReceivedAt = now
	fields, err := e.claimRecord(op, r, k, extra, 0, nil, now, &claimed)
	if err != nil {
		return rv, false, nil
	}
	res, err := e.conditional.WriteIf(ctx, store.ConditionalWrite{Key: k.key, Doc: store.Document{Fields: fields, ExpireAt: now.Add(rv.ttl)},
		IfAbsent: true, Now: now})
	switch {
	case err != nil:
		claimed.Ops.Writes = 1
		return claimed, true, err
	case res.Written:
		claimed.Ops.Writes = 1
		return claimed, true, nil
	}
	rv.Ops.Reads = 1
	cur := res.Found
	if cur == nil || cur.Expired(now) {
		return rv, false, nil
	}
	switch statusOf(cur.Fields) {
	case StatusCompleted, StatusRejected:
	case StatusPending:
		if !leaseUntil(cur.Fields, rv.lease).After(now) {
			return rv, false, nil // lapsed: taken over in Claim's transaction
		}
	default:
		return rv, false, nil // released: claimed again in Claim's transaction
	}
	claimed = rv
	claimed.ReceivedAt = now
	settled, err := e.inspect(ctx, op, k, cur.Fields, now, &claimed)
	return claimed, err != nil || settled, err
}

// errHeld is Claim's signal that the record is held by another
// transaction right now.
var errHeld = errors.New("reservation record held by another transaction")

// held decides a claim whose record another transaction holds (it is
// being claimed, extended, settled or released right now) from a snapshot
// of it, without waiting: a settled one replays, anything else is
// in_progress.
func (e *Engine) held(ctx context.Context, op string, k reservationKey, rv Reservation, ops opcount.Counts) (Reservation, error) {
	claimed := rv
	claimed.Ops = ops
	err := e.runTx(store.ReadOnly(ctx), &claimed.Ops, func(ctx context.Context, tx store.Tx) error {
		now := e.now()
		claimed.ReceivedAt, claimed.Replayed, claimed.Result, claimed.Status, claimed.HeldUntil = time.Time{}, false, nil, "", time.Time{}
		cur, ok, err := getLive(ctx, tx, k.key, now)
		if err != nil || !ok {
			return err
		}
		settled, err := e.inspect(ctx, op, k, cur.Fields, now, &claimed)
		if err != nil || settled {
			return err
		}
		return nil
	})
	if err != nil || claimed.Replayed {
		return claimed, err
	}
	return claimed, &Error{Type: TypeInProgress, Code: "HELD", Op: op, Err: fmt.Errorf("%s is being claimed or settled by another caller right now", k.key)}
}

// inspect decides a live record at now for a claim: a settled one
// replays (settled true), a live pending one is in_progress, a reused key
// is poison (or, in warn mode, the same event). A lapsed pending one is
// marked TookOver; a released one is left to be claimed.
func (e *Engine) inspect(ctx context.Context, op string, k reservationKey, f map[string]any, now time.Time, rv *Reservation) (settled bool, err error) {
	status := statusOf(f)
	if status != StatusReleased {
		if _, err := e.fingerprintConflict(ctx, op, k.key, str(f, metaFingerprint), k.fingerprint); err != nil {
			return false, err
		}
	}
	rv.ReceivedAt = tm(f, "receivedAt")
	switch status {
	case StatusCompleted, StatusRejected:
		rv.Status, rv.Replayed = status, true
		rv.Result, _ = store.CloneValue(f["result"]).(map[string]any) // the caller's, not the store's
		return true, nil
	case StatusPending:
		if until := leaseUntil(f, rv.lease); until.After(now) {
			rv.HeldUntil, rv.Attempt = until, i64(f, "attempts")
			return false, newError(TypeInProgress, op, "%s is held by %s until %s (attempt %d)", k.key, str(f, "owner"), until.Format(time.RFC3339), rv.Attempt)
		}
		rv.TookOver = true
	}
	return false, nil
}

// leaseUntil is when a pending record's claim lapses (receipts written
// before leaseUntil was stored: reservedAt plus the lease).
func leaseUntil(f map[string]any, lease time.Duration) time.Time {
	if until := tm(f, "leaseUntil"); !until.IsZero() {
		return until
	}
	return tm(f, "reservedAt").Add(lease)
}

// aggregateVersion reads the last event completed for an aggregate
// (records written before the one ordering guard kept only lastSequence:
// their update time stands in for its publish time).
func aggregateVersion(f map[string]any) Version {
	if !has(f, metaSequence) && has(f, "lastSequence") {
		return Version{HasSequence: true, Sequence: i64(f, "lastSequence"), PublishTime: tm(f, "updatedAt")}
	}
	return versionFromMeta(f)
}

// holding reads rv's record in tx and checks that rv still holds it.
func (e *Engine) holding(ctx context.Context, tx store.Tx, op string, rv Reservation, now time.Time) (store.Document, error) {
	cur, exists, err := getLive(ctx, tx, rv.key, now)
	if err != nil {
		return store.Document{}, err
	}
	if !exists {
		return store.Document{}, &Error{Type: TypeStale, Code: "FENCED", Op: op, Err: fmt.Errorf("%s is gone (expired or deleted): the claim was lost", rv.Doc)}
	}
	if tok := i64(cur.Fields, "token"); tok != rv.Token || statusOf(cur.Fields) != StatusPending {
		return store.Document{}, &Error{Type: TypeStale, Code: "FENCED", Op: op,
			Err: fmt.Errorf("%s is %s with token %d; this holder has token %d: it was taken over or settled", rv.Doc, statusOf(cur.Fields), tok, rv.Token)}
	}
	return cur, nil
}

// update rewrites the record rv holds with change applied; change may
// read and write other records in tx, before the record is set. alone
// says change touches no other record (it is then called with a nil tx):
// with a store.ConditionalWriter the record is rewritten in one round trip
// from the one this holder last wrote, if the stored record still carries
// rv's token and is pending and live. That is exact, not a guess: a
// pending record with rv's token was written by rv's claim and changed
// since only by its Extends, which rewrite leaseUntil and updatedAt alone
// (every other write of it settles or releases it, or claims it with the
// next token), and change is applied to it as it would be to the record
// read. Otherwise (the record changed, or is held right now) the engine's
// transaction reads it and decides.
func (e *Engine) update(ctx context.Context, op string, rv *Reservation, alone bool, change func(ctx context.Context, tx store.Tx, f map[string]any, now time.Time) error) error {
	if rv.Replayed || rv.Token == 0 {
		return newError(TypeConfiguration, op, "%s is not held by this caller (a replayed reservation is read-only)", rv.Doc)
	}
	rv.Ops = opcount.Counts{}
	if alone && e.conditional != nil && rv.record != nil {
		before := *rv // change may set rv's fields: kept only if written
		now := e.now()
		f := maps.Clone(rv.record)
		f["updatedAt"] = now
		if err := change(ctx, nil, f, now); err != nil {
			return wrap(op, err)
		}
		res, err := e.conditional.WriteIf(ctx, store.ConditionalWrite{Key: rv.key, Doc: store.Document{Fields: f, ExpireAt: now.Add(rv.ttl)},
			Match: map[string]any{"token": rv.Token, "status": StatusPending}, Now: now})
		rv.Ops.Writes = 1
		if err != nil || res.Written {
			if err == nil {
				rv.record = f
			}
			return wrap(op, err)
		}
		*rv = before
	}
	return wrap(op, e.runTx(ctx, &rv.Ops, func(ctx context.Context, tx store.Tx) error {
		now := e.now()
		cur, err := e.holding(ctx, tx, op, *rv, now)
		if err != nil {
			return err
		}
		f := maps.Clone(cur.Fields) // what Get returns is read-only
		f["updatedAt"] = now
		if err := change(ctx, tx, f, now); err != nil {
			return err
		}
		rv.record = f
		return tx.Set(ctx, rv.key, store.Document{Fields: f, ExpireAt: now.Add(rv.ttl)})
	}))
}

// Extend holds rv another lease length from now (a heartbeat while its
// call runs). A stale *Error (code FENCED) means it was taken over: stop,
// and settle nothing.
func (e *Engine) Extend(ctx context.Context, rv Reservation) (Reservation, error) {
	err := e.update(ctx, "extend reservation", &rv, true, func(_ context.Context, _ store.Tx, f map[string]any, now time.Time) error {
		rv.Until = now.Add(rv.lease)
		f["leaseUntil"] = rv.Until
		return nil
	})
	if err != nil {
		e.cfg.Logger.WarnContext(ctx, "lease", logfields.LeaseEvent, logfields.LeaseHeartbeatFailed, logfields.IdempotencyDoc, rv.Doc, logfields.Error, err.Error())
	}
	return rv, err
}

// Effect is an effect on the store run inside the transaction that
// settles a reservation (reads first, as in any transaction).
type Effect func(ctx context.Context, tx store.Tx) error

// Settlement is how a reservation ends for good.
type Settlement struct {
	// Status is StatusCompleted (the effect happened) or StatusRejected
	// (refused for good): either way every later Claim replays Result.
	Status string
	// Result is stored and replayed.
	Result map[string]any
	// Effect, when set, runs in the settling transaction: it happens
	// exactly when the record says it did.
	Effect Effect
}

// Settle ends rv with s, if rv still holds its record (else a stale
// *Error, code FENCED, and neither the effect nor the status is written).
// A completed Event reservation with an aggregate advances the
// aggregate's ordering guard.
func (e *Engine) Settle(ctx context.Context, rv Reservation, s Settlement) (Reservation, error) {
	const op = "settle reservation"
	if s.Status != StatusCompleted && s.Status != StatusRejected {
		return rv, newError(TypeConfiguration, op, "Settlement.Status %q: use %q or %q", s.Status, StatusCompleted, StatusRejected)
	}
	if rv.event != nil {
		if err := e.Hit(ctx, WorkerBeforeMarkDone); err != nil {
			return rv, err
		}
	}
	res, err := store.CopyFields(s.Result)
	if err != nil {
		return rv, newError(TypeConfiguration, op, "Settlement.Result: %v", err)
	}
	advances := rv.aggregate != (store.Key{}) && s.Status == StatusCompleted
	err = e.update(ctx, op, &rv, s.Effect == nil && !advances, func(ctx context.Context, tx store.Tx, f map[string]any, now time.Time) error {
		var ad store.Document
		var advance bool
		if advances {
			var ok bool
			if ad, ok, err = getLive(ctx, tx, rv.aggregate, now); err != nil {
				return err
			}
			advance = !ok || rv.ordering.Supersedes(rv.version, aggregateVersion(ad.Fields))
		}
		if s.Effect != nil {
			if err := s.Effect(ctx, tx); err != nil {
				return err
			}
		}
		f["status"], f["settledAt"] = s.Status, now
		delete(f, "leaseUntil")
		delete(f, "inDoubt")
		if res != nil {
			f["result"] = res
		}
		if !advance {
			return nil
		}
		meta := map[string]any{metaMessageID: rv.messageID, "updatedAt": now}
		rv.version.toMeta(meta)
		return tx.Set(ctx, rv.aggregate, store.Document{Fields: meta, ExpireAt: now.Add(rv.ttl)})
	})
	if err != nil {
		return rv, err
	}
	rv.Status, rv.Result = s.Status, res
	e.cfg.Logger.InfoContext(ctx, "lease", logfields.LeaseEvent, logfields.LeaseCompleted, logfields.IdempotencyDoc, rv.Doc, "token", rv.Token, "status", s.Status)
	return rv, nil
}

// Release gives rv back after its effect failed or its outcome cannot be
// known (cause says why; inDoubt says the call may have had its effect:
// the next attempt is told), so the next Claim calls again as the next
// attempt. When that was the last attempt an Event reservation allows,
// exhausted is true and the poison audit record of the event is written:
// acknowledge or dead-letter the message, it will not be tried again.
func (e *Engine) Release(ctx context.Context, rv Reservation, cause error, inDoubt bool) (exhausted bool, err error) {
	const op = "release reservation"
	msg := "unknown error"
	if cause != nil {
		msg = cause.Error()
	}
	err = e.update(ctx, op, &rv, true, func(_ context.Context, _ store.Tx, f map[string]any, now time.Time) error {
		f["status"], f["lastError"], f["releasedAt"] = StatusReleased, msg, now
		delete(f, "leaseUntil")
		if inDoubt {
			f["inDoubt"] = true
		} else {
			delete(f, "inDoubt")
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	exhausted = rv.event != nil && rv.maxTries > 0 && rv.Attempt >= rv.maxTries
	e.cfg.Logger.InfoContext(ctx, "lease", logfields.LeaseEvent, logfields.LeaseFailed, logfields.IdempotencyDoc, rv.Doc, "attempt", rv.Attempt,
		"in_doubt", inDoubt, "poison", exhausted)
	if exhausted {
		t, code := Classify(cause)
		_, err = e.RecordPoison(ctx, *rv.event, PoisonRecord{Handler: rv.scope, Reason: msg,
			ErrorType: t, ErrorCode: code, Attempts: rv.Attempt, Source: rv.Doc})
	}
	return exhausted, err
}

// Apply runs effect in a transaction of the engine's store, with no
// reservation (a callback without an idempotency key: nothing can fence
// it), and returns the operations it cost; errors are *Error as every
// engine call's. With a store.ReadOnly context the transaction only reads.
func (e *Engine) Apply(ctx context.Context, effect Effect) (opcount.Counts, error) {
	var ops opcount.Counts
	err := e.runTx(ctx, &ops, func(ctx context.Context, tx store.Tx) error { return effect(ctx, tx) })
	return ops, wrap("apply", err)
}

// cmpPositive is d when positive, else def.
func cmpPositive(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
