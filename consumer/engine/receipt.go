package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/eventpipe/eventpipe/consumer/keys"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/opcount"
)

// Receipt statuses besides the final status a callback's processing
// records (Finish).
const (
	// ReceiptProcessing: a delivery reserved the receipt and is processing
	// the callback; retries are answered "in progress" until it finishes
	// or its reservation lapses.
	ReceiptProcessing = "processing"
	// ReceiptReleased: the processing failed and gave the receipt back
	// (Release): the next delivery processes the callback. The record stays,
	// so the fencing token keeps growing.
	ReceiptReleased = "released"
)

// ReceiptRequest identifies one callback.
type ReceiptRequest struct {
	// Route is the callback route, e.g. "validation-finished".
	Route string
	// CallbackID is the id the callback echoes back; required. It is kept
	// exactly (keys.EscapeID): ids differing only in case are different.
	CallbackID string
	// Payload is the raw body; its fingerprint detects a reused callback id.
	Payload []byte
	// Fingerprint, when set, is the payload's fingerprint computed by the
	// caller (a body that is not JSON); Payload is then not fingerprinted.
	Fingerprint string
	// Fields are stored on the receipt (e.g. run id, result URI).
	Fields map[string]any
	// Lease is how long this delivery's reservation holds before a retry
	// may take it over (its holder died); 0 is the engine's LeaseDuration.
	Lease time.Duration
	// TTL is how long the receipt is kept (its expireAt); 0 is the
	// engine's ReceiptTTL.
	TTL time.Duration
}

// Receipt is a callback receipt.
type Receipt struct {
	// Doc is the receipt record, "collection/id".
	Doc string
	// ReceivedAt is when the callback was first received.
	ReceivedAt time.Time
	// Status is ReceiptProcessing until Finish records the final status.
	Status string
	// Replayed is true when the callback was processed before: this call is
	// a duplicate and must answer with the original ReceivedAt and Status.
	Replayed bool
	// HeldUntil is, with an in_progress error from Reserve, when the
	// reservation of the delivery processing the callback lapses: retry
	// then at the latest.
	HeldUntil time.Time
	// Ops counts the store operations of the call that returned it.
	Ops opcount.Counts
	// Result is what a replay answers with: set it before Finish to store
	// it on the receipt; Reserve returns the stored one when Replayed.
	Result map[string]any

	key   store.Key
	token int64
	ttl   time.Duration
}

// Reserve reserves the receipt before any processing (reserve-first: of
// concurrent deliveries of a callback exactly one gets a reservation and
// processes; the others get an in_progress *Error, with HeldUntil, until
// it finishes). A finished receipt is Replayed. A reservation that lapsed
// (its holder died) or was released is taken over with a new fencing
// token, so the former holder can no longer finish it. A receipt another
// transaction holds at that moment (a store that locks documents, such as
// PostgreSQL: another delivery is reserving, finishing or releasing it) is
// in_progress at once, without waiting for that transaction and without
// HeldUntil or ReceivedAt. Costs 1 read + 1 write when reserved, 1 read + 0 writes
// otherwise.
func (e *Engine) Reserve(ctx context.Context, r ReceiptRequest) (Receipt, error) {
	const op = "reserve receipt"
	route, err := keys.NormalizeID(r.Route)
	if err != nil {
		return Receipt{}, newError(TypeConfiguration, op, "ReceiptRequest.Route: %v", err)
	}
	cb, err := keys.EscapeID(r.CallbackID)
	if err != nil {
		return Receipt{}, newError(TypePoison, op, "callback id: %v (the callback must echo the callback_id it was given)", err)
	}
	fp := r.Fingerprint
	if fp == "" && len(r.Payload) > 0 {
		if fp, err = keys.Fingerprint(r.Payload); err != nil {
			return Receipt{}, newError(TypePoison, op, "payload: %v; fix: %s", err, payloadFix())
		}
	}
	extra, err := store.CopyFields(r.Fields)
	if err != nil {
		return Receipt{}, newError(TypeConfiguration, op, "ReceiptRequest.Fields: %v", err)
	}
	lease := r.Lease
	if lease <= 0 {
		lease = e.cfg.LeaseDuration
	}
	ttl := r.TTL
	if ttl <= 0 {
		ttl = e.cfg.ReceiptTTL
	}
	key := store.Key{Collection: e.receipts, ID: keys.JoinID(e.envID, route, cb)}
	var rc Receipt
	err = e.runTx(ctx, &rc.Ops, func(ctx context.Context, tx store.Tx) error {
		now := e.now()
		rc = Receipt{Doc: key.String(), key: key, Ops: rc.Ops, ReceivedAt: now, ttl: ttl}
		// Read the receipt even when expired: its token keeps fencing
		// monotonic. Without waiting: a receipt another transaction holds
		// is being reserved, finished or released by another delivery of
		// the callback right now, so this one is told at once to come back.
		cur, err := tx.Get(store.NoWait(ctx), key)
		if errors.Is(err, store.ErrLocked) {
			rc.ReceivedAt = time.Time{} // unknown: the receipt was not read
			code, _, _ := store.Code(err)
			return &Error{Type: TypeInProgress, Code: code, Op: op, Err: fmt.Errorf("%s is in use by another delivery of the callback: %w", key, err)}
		}
		if err != nil && !isNotFound(err) {
			return err
		}
		if err == nil && !cur.Expired(now) {
			f := cur.Fields
			status := str(f, "status")
			if status != ReceiptReleased {
				if _, err := e.fingerprintConflict(ctx, op, key, str(f, metaFingerprint), fp); err != nil {
					return err
				}
			}
			rc.ReceivedAt, rc.Status = tm(f, "receivedAt"), status
			switch until := receiptLeaseUntil(f, e.cfg.LeaseDuration); {
			case status == ReceiptProcessing && until.After(now):
				rc.HeldUntil = until
				return newError(TypeInProgress, op, "%s is being processed by another delivery until %s", key, until.Format(time.RFC3339))
			case status != ReceiptProcessing && status != ReceiptReleased:
				rc.Replayed = true
				rc.Result, _ = store.CloneValue(f["result"]).(map[string]any) // the caller's, not the store's
				return nil
			}
		}
		rc.Status, rc.token = ReceiptProcessing, i64(cur.Fields, "token")+1
		f := map[string]any{"route": r.Route, "callbackId": r.CallbackID, "status": ReceiptProcessing,
			"receivedAt": rc.ReceivedAt, "reservedAt": now, "leaseUntil": now.Add(lease), "token": rc.token,
			metaFingerprint: fp, "fields": extra}
		return tx.Set(ctx, key, store.Document{Fields: f, ExpireAt: now.Add(ttl)})
	})
	if err != nil {
		return rc, wrap(op, err)
	}
	if !rc.Replayed {
		if err := e.Hit(ctx, CallbackAfterReserve); err != nil {
			return Receipt{}, err
		}
	}
	return rc, nil
}

// receiptLeaseUntil is when a processing receipt's reservation lapses
// (records written before leaseUntil was stored: reservedAt plus lease).
func receiptLeaseUntil(f map[string]any, lease time.Duration) time.Time {
	if until := tm(f, "leaseUntil"); !until.IsZero() {
		return until
	}
	return tm(f, "reservedAt").Add(lease)
}

// Effect is a callback's effect on the store, run inside the transaction
// that finishes its receipt (reads first, as in any transaction).
type Effect func(ctx context.Context, tx store.Tx) error

// Finish applies effect (nil for none) and records the receipt's final
// status in one transaction, if this call's reservation still holds: the
// effect happens exactly when the receipt says it did, and a holder whose
// reservation was taken over gets a stale *Error (code FENCED) with its
// effect not applied. Replays of the callback answer with status from now
// on.
func (e *Engine) Finish(ctx context.Context, rc Receipt, status string, effect Effect) (Receipt, error) {
	if status == "" || status == ReceiptProcessing || status == ReceiptReleased {
		return rc, newError(TypeConfiguration, "finish receipt", "status %q: use the callback's own final status", status)
	}
	return e.settleReceipt(ctx, "finish receipt", rc, status, effect)
}

// Release gives back a receipt this call reserved, after processing failed
// (nothing was applied), so that the callback's retry processes it.
func (e *Engine) Release(ctx context.Context, rc Receipt) error {
	_, err := e.settleReceipt(ctx, "release receipt", rc, ReceiptReleased, nil)
	return err
}

func (e *Engine) settleReceipt(ctx context.Context, op string, rc Receipt, status string, effect Effect) (Receipt, error) {
	if rc.Replayed || rc.token == 0 {
		return rc, newError(TypeConfiguration, op, "%s was not reserved by this call (replayed receipts are read-only)", rc.Doc)
	}
	var result map[string]any
	if rc.Result != nil && status != ReceiptReleased {
		var err error
		if result, err = store.CopyFields(rc.Result); err != nil {
			return rc, newError(TypeConfiguration, op, "Receipt.Result: %v", err)
		}
	}
	ttl := rc.ttl
	if ttl <= 0 {
		ttl = e.cfg.ReceiptTTL
	}
	rc.Ops = opcount.Counts{}
	err := e.runTx(ctx, &rc.Ops, func(ctx context.Context, tx store.Tx) error {
		now := e.now()
		cur, exists, err := getLive(ctx, tx, rc.key, now)
		if err != nil {
			return err
		}
		if !exists || i64(cur.Fields, "token") != rc.token || str(cur.Fields, "status") != ReceiptProcessing {
			return &Error{Type: TypeStale, Code: "FENCED", Op: op, Err: fmt.Errorf("%s is no longer reserved by this call (taken over or settled)", rc.Doc)}
		}
		if effect != nil {
			if err := effect(ctx, tx); err != nil {
				return err
			}
		}
		f := maps.Clone(cur.Fields) // what Get returns is read-only
		f["status"] = status
		delete(f, "leaseUntil")
		if result != nil {
			f["result"] = result
		}
		if status == ReceiptReleased {
			f["releasedAt"] = now
		} else {
			f["finishedAt"] = now
		}
		return tx.Set(ctx, rc.key, store.Document{Fields: f, ExpireAt: now.Add(ttl)})
	})
	if err == nil {
		rc.Status = status
	}
	return rc, wrap(op, err)
}
