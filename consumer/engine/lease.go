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

// Lease states, stored in the field "status" of {prefix}leases records.
const (
	StatusPending   = "PENDING"
	StatusCompleted = "COMPLETED"
	StatusFailed    = "FAILED"
)

// LeaseRequest names the side effect a lease guards.
type LeaseRequest struct {
	// Handler names the side effect (leases are keyed by (handler,
	// event key)), e.g. "send-email".
	Handler string
	// Aggregate and Sequence, when both set, add a per-aggregate
	// guard: a claim whose Sequence is at or below the last completed one for
	// the Aggregate is stale; Complete advances it.
	Aggregate string
	Sequence  *int64
}

// Lease is a claim on one event's side effect. Keep it to Heartbeat,
// Complete or Fail; its Token fences a holder whose lease was taken over.
type Lease struct {
	// Doc is the lease record, "collection/id".
	Doc string
	// Token is the fencing token: it grows with every claim of the record.
	Token int64
	// Attempt counts claims of the record, this one included.
	Attempt int64
	// Until is when the lease lapses unless extended by Heartbeat.
	Until time.Time
	// TookOver is true when this claim took over an expired PENDING lease
	// (a holder crashed or hung): lease_event stale_found.
	TookOver bool
	// Ops counts the store operations of the last call on this lease.
	Ops opcount.Counts

	key       store.Key
	handler   string
	aggregate store.Key
	sequence  *int64
}

func (e *Engine) leaseKeys(ev Event, r LeaseRequest) (lease, agg store.Key, eventKey, fp string, err error) {
	h, err := keys.NormalizeID(r.Handler)
	if err != nil {
		return lease, agg, "", "", newError(TypeConfiguration, "claim lease", "LeaseRequest.Handler: %v", err)
	}
	eventKey, fp, err = ev.eventKey()
	if err != nil {
		return lease, agg, "", "", newError(TypePoison, "claim lease", "%v", err)
	}
	lease = store.Key{Collection: e.leases, ID: keys.JoinID(e.envID, h, eventRecordID(eventKey, fp))}
	if r.Aggregate != "" && r.Sequence != nil {
		a, err := keys.NormalizeID(r.Aggregate)
		if err != nil {
			return lease, agg, "", "", newError(TypePoison, "claim lease", "LeaseRequest.Aggregate: %v", err)
		}
		agg = store.Key{Collection: e.leases, ID: keys.JoinID(e.envID, h, "a-"+a)}
	}
	return lease, agg, eventKey, fp, nil
}

// Claim claims the side effect of ev for this process. It returns a PENDING lease, or an *Error: duplicate (COMPLETED:
// skip), in_progress (a live PENDING lease: retry later), stale (the
// aggregate's sequence is past this event), poison (FAILED MaxAttempts times,
// or a reused event id). An expired PENDING lease is taken over, and a
// FAILED one retried, each counting an attempt.
func (e *Engine) Claim(ctx context.Context, ev Event, r LeaseRequest) (Lease, error) {
	const op = "claim lease"
	key, agg, eventKey, fp, err := e.leaseKeys(ev, r)
	if err != nil {
		return Lease{}, err
	}
	var l Lease
	err = e.runTx(ctx, &l.Ops, func(ctx context.Context, tx store.Tx) error {
		now := e.now()
		l = Lease{Doc: key.String(), key: key, handler: r.Handler, aggregate: agg, sequence: r.Sequence, Ops: l.Ops}
		// Read the record even when expired: its token keeps fencing monotonic.
		cur, err := tx.Get(ctx, key)
		exists := err == nil
		if err != nil && !isNotFound(err) {
			return err
		}
		var ad store.Document
		var aggLive bool
		if agg != (store.Key{}) {
			if ad, aggLive, err = getLive(ctx, tx, agg, now); err != nil {
				return err
			}
		}
		f := cur.Fields
		live := exists && !cur.Expired(now)
		if live {
			if _, err := e.fingerprintConflict(ctx, op, key, str(f, metaFingerprint), fp); err != nil {
				return err
			}
			switch str(f, "status") {
			case StatusCompleted:
				return newError(TypeDuplicate, op, "%s is COMPLETED", key)
			case StatusPending:
				if until := tm(f, "leaseUntil"); until.After(now) {
					return newError(TypeInProgress, op, "%s is PENDING, held by %s until %s", key, str(f, "owner"), until.Format(time.RFC3339))
				}
				l.TookOver = true
			case StatusFailed:
			default:
				return newError(TypeConfiguration, op, "%s has unknown status %q", key, str(f, "status"))
			}
		}
		if aggLive && has(ad.Fields, "lastSequence") && *r.Sequence <= i64(ad.Fields, "lastSequence") {
			return newError(TypeStale, op, "sequence %d of aggregate %q is at or below the last completed %d", *r.Sequence, r.Aggregate, i64(ad.Fields, "lastSequence"))
		}
		fields := map[string]any{"handler": r.Handler, "eventKey": eventKey, metaMessageID: ev.MessageID,
			metaFingerprint: fp, "createdAt": now}
		l.Token, l.Attempt = i64(f, "token")+1, 1
		if live {
			attempts := i64(f, "attempts")
			if attempts >= int64(e.cfg.MaxAttempts) {
				return newError(TypePoison, op, "%s failed %d times (the maximum is %d): %s", key, attempts, e.cfg.MaxAttempts, str(f, "lastError"))
			}
			l.Attempt = attempts + 1
			if t := tm(f, "createdAt"); !t.IsZero() {
				fields["createdAt"] = t
			}
			fields["lastError"] = str(f, "lastError")
		}
		l.Until = now.Add(e.cfg.LeaseDuration)
		fields["status"], fields["owner"], fields["token"], fields["attempts"] = StatusPending, e.cfg.Owner, l.Token, l.Attempt
		fields["leaseUntil"], fields["updatedAt"] = l.Until, now
		return tx.Set(ctx, key, store.Document{Fields: fields, ExpireAt: now.Add(e.cfg.DedupeTTL)})
	})
	if err != nil {
		t, code := Classify(err)
		e.cfg.Logger.InfoContext(ctx, "lease", logfields.LeaseEvent, logfields.LeaseAcquireFailed, logfields.IdempotencyDoc, key.String(), logfields.ErrorType, string(t), logfields.ErrorCode, code)
		return Lease{}, wrap(op, err)
	}
	event := logfields.LeaseAcquired
	if l.TookOver {
		event = logfields.LeaseStaleFound
	}
	e.cfg.Logger.InfoContext(ctx, "lease", logfields.LeaseEvent, event, logfields.IdempotencyDoc, key.String(), "token", l.Token, "attempt", l.Attempt)
	if err := e.Hit(ctx, WorkerAfterClaim); err != nil {
		return Lease{}, err
	}
	return l, nil
}

// holding reads the lease record and checks that l still holds it.
func (e *Engine) holding(ctx context.Context, tx store.Tx, op string, l Lease) (store.Document, error) {
	cur, exists, err := getLive(ctx, tx, l.key, e.now())
	if err != nil {
		return store.Document{}, err
	}
	if !exists {
		return store.Document{}, newError(TypeStale, op, "%s is gone (expired or deleted): the lease was lost", l.Doc)
	}
	if tok := i64(cur.Fields, "token"); tok != l.Token || str(cur.Fields, "status") != StatusPending {
		return store.Document{}, &Error{Type: TypeStale, Code: "FENCED", Op: op,
			Err: fmt.Errorf("%s is %s with token %d; this holder has token %d: the lease was taken over", l.Doc, str(cur.Fields, "status"), tok, l.Token)}
	}
	return cur, nil
}

// update rewrites the lease record l holds with change applied (change
// may read and write other records in tx; the lease record is set last).
func (e *Engine) update(ctx context.Context, op string, l *Lease, change func(ctx context.Context, tx store.Tx, f map[string]any, now time.Time) error) error {
	l.Ops = opcount.Counts{}
	return wrap(op, e.runTx(ctx, &l.Ops, func(ctx context.Context, tx store.Tx) error {
		cur, err := e.holding(ctx, tx, op, *l)
		if err != nil {
			return err
		}
		now := e.now()
		f := maps.Clone(cur.Fields) // what Get returns is read-only
		f["updatedAt"] = now
		if err := change(ctx, tx, f, now); err != nil {
			return err
		}
		return tx.Set(ctx, l.key, store.Document{Fields: f, ExpireAt: now.Add(e.cfg.DedupeTTL)})
	}))
}

// Heartbeat extends a PENDING lease by LeaseDuration. A stale *Error (code
// FENCED) means the lease was taken over: stop and do not complete.
func (e *Engine) Heartbeat(ctx context.Context, l Lease) (Lease, error) {
	err := e.update(ctx, "heartbeat lease", &l, func(_ context.Context, _ store.Tx, f map[string]any, now time.Time) error {
		l.Until = now.Add(e.cfg.LeaseDuration)
		f["leaseUntil"] = l.Until
		return nil
	})
	if err != nil {
		e.cfg.Logger.WarnContext(ctx, "lease", logfields.LeaseEvent, logfields.LeaseHeartbeatFailed, logfields.IdempotencyDoc, l.Doc, logfields.Error, err.Error())
	}
	return l, err
}

// Complete marks the lease COMPLETED, recording
// result fields, and advances the aggregate's sequence. Later claims of the
// event are duplicates. A holder fenced out gets a stale *Error.
func (e *Engine) Complete(ctx context.Context, l Lease, result map[string]any) (Lease, error) {
	const op = "complete lease"
	if err := e.Hit(ctx, WorkerBeforeMarkDone); err != nil {
		return l, err
	}
	res, err := store.CopyFields(result)
	if err != nil {
		return l, newError(TypeConfiguration, op, "result: %v", err)
	}
	err = e.update(ctx, op, &l, func(ctx context.Context, tx store.Tx, f map[string]any, now time.Time) error {
		f["status"], f["completedAt"], f["result"] = StatusCompleted, now, res
		delete(f, "leaseUntil")
		if l.aggregate == (store.Key{}) {
			return nil
		}
		aggDoc, aggOK, err := getLive(ctx, tx, l.aggregate, now)
		if err != nil || (aggOK && *l.sequence <= i64(aggDoc.Fields, "lastSequence")) {
			return err
		}
		return tx.Set(ctx, l.aggregate, store.Document{Fields: map[string]any{"lastSequence": *l.sequence, "updatedAt": now},
			ExpireAt: now.Add(e.cfg.DedupeTTL)})
	})
	if err == nil {
		e.cfg.Logger.InfoContext(ctx, "lease", logfields.LeaseEvent, logfields.LeaseCompleted, logfields.IdempotencyDoc, l.Doc, "token", l.Token)
	}
	return l, err
}

// Fail marks the lease FAILED with cause, so the next
// delivery retries it. When this was attempt MaxAttempts it also writes a
// poison audit record and returns poison = true: acknowledge or dead-letter
// the message, it will not be retried.
func (e *Engine) Fail(ctx context.Context, l Lease, ev Event, cause error) (poison bool, err error) {
	const op = "fail lease"
	msg := "unknown error"
	if cause != nil {
		msg = cause.Error()
	}
	err = e.update(ctx, op, &l, func(_ context.Context, _ store.Tx, f map[string]any, now time.Time) error {
		f["status"], f["lastError"] = StatusFailed, msg
		delete(f, "leaseUntil")
		poison = i64(f, "attempts") >= int64(e.cfg.MaxAttempts)
		return nil
	})
	if err != nil {
		return false, err
	}
	e.cfg.Logger.InfoContext(ctx, "lease", logfields.LeaseEvent, logfields.LeaseFailed, logfields.IdempotencyDoc, l.Doc, "attempt", l.Attempt, "poison", poison)
	if poison {
		t, code := Classify(cause)
		_, err = e.RecordPoison(ctx, ev, PoisonRecord{Handler: l.handler, Reason: msg,
			ErrorType: t, ErrorCode: code, Attempts: l.Attempt, Source: l.Doc})
	}
	return poison, err
}
