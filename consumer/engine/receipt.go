package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/eventpipe/eventpipe/consumer/keys"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/opcount"
)

// ReceiptProcessing is the status of a reserved receipt whose callback is
// being processed.
const ReceiptProcessing = "processing"

// ReceiptRequest identifies one callback (seed 004).
type ReceiptRequest struct {
	// Route is the callback route, e.g. "validation-finished".
	Route string
	// CallbackID is the id the callback echoes back; required.
	CallbackID string
	// Payload is the raw body; its fingerprint detects a reused callback id.
	Payload []byte
	// Fields are stored on the receipt (e.g. run id, result URI).
	Fields map[string]any
}

// Receipt is a callback receipt.
type Receipt struct {
	// Doc is the receipt record, "collection/id".
	Doc string
	// ReceivedAt is when the callback was first received.
	ReceivedAt time.Time
	// Status is ReceiptProcessing until Finish records the final status.
	Status string
	// Replayed is true when the receipt existed: this call is a duplicate and
	// must answer with the original ReceivedAt and Status, not process.
	Replayed bool
	// Ops counts the store operations of the call that returned it.
	Ops opcount.Counts

	key   store.Key
	token int64
}

// Reserve reserves the receipt before any processing (reserve-first: of two
// concurrent callbacks exactly one gets Replayed == false and processes; the
// other gets the original receipt to replay). A receipt left in
// ReceiptProcessing longer than LeaseDuration (its holder crashed) is taken
// over. Costs 1 read + 1 write when reserved, 1 read + 0 writes replayed.
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
	fp := ""
	if len(r.Payload) > 0 {
		if fp, err = keys.Fingerprint(r.Payload); err != nil {
			return Receipt{}, newError(TypePoison, op, "payload: %v", err)
		}
	}
	extra, err := store.CopyFields(r.Fields)
	if err != nil {
		return Receipt{}, newError(TypeConfiguration, op, "ReceiptRequest.Fields: %v", err)
	}
	key := store.Key{Collection: e.receipts, ID: keys.JoinID(e.envID, route, cb)}
	var rc Receipt
	err = e.runTx(ctx, &rc.Ops, func(ctx context.Context, tx store.Tx) error {
		now := e.now()
		rc = Receipt{Doc: key.String(), key: key, Ops: rc.Ops}
		// Read the receipt even when expired: its token keeps fencing monotonic.
		cur, err := tx.Get(ctx, key)
		if err != nil && !isNotFound(err) {
			return err
		}
		token := i64(cur.Fields, "token") + 1
		if err == nil && !cur.Expired(now) {
			f := cur.Fields
			if _, err := e.fingerprintConflict(op, key, str(f, metaFingerprint), fp); err != nil {
				return err
			}
			rc.ReceivedAt, rc.Status = tm(f, "receivedAt"), str(f, "status")
			stuck := rc.Status == ReceiptProcessing && !tm(f, "reservedAt").Add(e.cfg.LeaseDuration).After(now)
			if !stuck {
				rc.Replayed = true
				return nil
			}
		} else {
			rc.ReceivedAt = now
		}
		rc.Status, rc.token = ReceiptProcessing, token
		f := map[string]any{"route": r.Route, "callbackId": r.CallbackID, "status": ReceiptProcessing,
			"receivedAt": rc.ReceivedAt, "reservedAt": now, "token": token, metaFingerprint: fp, "fields": extra}
		return tx.Set(ctx, key, store.Document{Fields: f, ExpireAt: now.Add(e.cfg.ReceiptTTL)})
	})
	if err != nil {
		return Receipt{}, wrap(op, err)
	}
	return rc, nil
}

// Finish records the final status of a receipt this call reserved; replays
// of the callback answer with it from now on. A receipt taken over by
// another delivery gives a stale *Error (code FENCED).
func (e *Engine) Finish(ctx context.Context, rc Receipt, status string) (Receipt, error) {
	return e.settleReceipt(ctx, "finish receipt", rc, status)
}

// Release deletes a receipt this call reserved, after processing failed, so
// that the callback's retry processes it again.
func (e *Engine) Release(ctx context.Context, rc Receipt) error {
	_, err := e.settleReceipt(ctx, "release receipt", rc, "")
	return err
}

func (e *Engine) settleReceipt(ctx context.Context, op string, rc Receipt, status string) (Receipt, error) {
	if rc.Replayed || rc.token == 0 {
		return rc, newError(TypeConfiguration, op, "%s was not reserved by this call (replayed receipts are read-only)", rc.Doc)
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
		if status == "" {
			return tx.Delete(ctx, rc.key)
		}
		cur.Fields["status"], cur.Fields["finishedAt"] = status, now
		rc.Status = status
		return tx.Set(ctx, rc.key, store.Document{Fields: cur.Fields, ExpireAt: now.Add(e.cfg.ReceiptTTL)})
	})
	return rc, wrap(op, err)
}
