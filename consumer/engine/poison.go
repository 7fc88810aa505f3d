package engine

import (
	"context"

	"github.com/eventpipe/eventpipe/consumer/keys"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/opcount"
)

// PoisonRecord is the audit record of a message given up on, written to
// {prefix}poison so an operator can see and replay it after the DLQ.
type PoisonRecord struct {
	// Route or Handler say where it failed (either may be empty).
	Route   string
	Handler string
	// Reason is the error text.
	Reason    string
	ErrorType ErrorType
	ErrorCode string
	// Attempts is the delivery or lease attempt count, when known.
	Attempts int64
	// Source is the subscription, lease record or callback it came from.
	Source string
}

// RecordPoison writes the audit record of a poison message (one per event
// key: a second call overwrites it with the latest reason) and returns its
// path. The payload is kept as text when it is at most 256 KiB.
func (e *Engine) RecordPoison(ctx context.Context, ev Event, p PoisonRecord) (string, error) {
	const op = "record poison"
	eventKey, fp, err := ev.eventKey()
	if err != nil {
		// Poison because it has no usable key: key the record by a hash of
		// the payload so it is still recorded.
		eventKey, err = keys.LogicalKey("", map[string]any{"payload": string(ev.Payload), "messageId": ev.MessageID})
		if err != nil {
			return "", newError(TypeConfiguration, op, "event has no key and no payload: %v", err)
		}
	}
	key := store.Key{Collection: e.poison, ID: keys.JoinID(e.envID, eventKey)}
	now := e.now()
	fields := map[string]any{
		"route": p.Route, "handler": p.Handler, "reason": p.Reason, "error_type": string(p.ErrorType),
		"error_code": p.ErrorCode, "attempts": p.Attempts, "source": p.Source, "eventKey": eventKey,
		metaMessageID: ev.MessageID, "eventId": ev.EventID, metaFingerprint: fp, "recordedAt": now,
	}
	if !ev.PublishTime.IsZero() {
		fields[metaPublishTime] = ev.PublishTime.UTC()
	}
	if len(ev.Payload) <= 256<<10 {
		fields["payload"] = string(ev.Payload)
	}
	var ops opcount.Counts
	err = e.runTx(ctx, &ops, func(ctx context.Context, tx store.Tx) error {
		return tx.Set(ctx, key, store.Document{Fields: fields, ExpireAt: now.Add(e.cfg.PoisonTTL)})
	})
	if err != nil {
		return "", wrap(op, err)
	}
	return key.String(), nil
}
