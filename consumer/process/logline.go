package process

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/eventpipe/eventpipe/consumer/logfields"
)

// Log writes the result's one JSON line. extra carries what only the
// ingress knows: http_status for push, ack_action for both.
func (p *Processor) Log(ctx context.Context, r *Result, extra ...slog.Attr) {
	h := p.cfg.Logger.Handler()
	if !h.Enabled(ctx, r.Level) {
		return
	}
	// The record is made here rather than by Logger.LogAttrs, which finds
	// its caller's program counter for a source field the consumer's
	// logger never writes (logging.New sets no AddSource): pc 0 is none.
	now := time.Now() // the line's time, and where its latency_ms ends
	rec := slog.NewRecord(now, r.Level, lineMessage(r.Outcome), 0)
	// The fields go on the stack: the record copies them, so a heap slice
	// of them would be a second copy of every line's fields.
	var fields [lineFields + 4]slog.Attr
	rec.AddAttrs(r.appendAttrs(fields[:0], now, extra...)...)
	_ = h.Handle(ctx, rec) // as Logger.LogAttrs, which drops the handler's error
}

// lineMessage is the line's message: "pubsub message " and the outcome
// (constants for the outcomes there are, so a line builds none).
func lineMessage(outcome string) string {
	const prefix = "pubsub message "
	switch outcome {
	case logfields.OutcomeApplied:
		return prefix + logfields.OutcomeApplied
	case logfields.OutcomeDuplicate:
		return prefix + logfields.OutcomeDuplicate
	case logfields.OutcomeStale:
		return prefix + logfields.OutcomeStale
	case logfields.OutcomePoison:
		return prefix + logfields.OutcomePoison
	case logfields.OutcomeRetry:
		return prefix + logfields.OutcomeRetry
	}
	return prefix + outcome
}

// lineFields is how many fields a line has at most, extra ones aside.
const lineFields = 20

// appendAttrs appends the log fields of r (see package logfields), plus
// extra, to a; latency_ms runs to now.
func (r *Result) appendAttrs(a []slog.Attr, now time.Time, extra ...slog.Attr) []slog.Attr {
	if m := r.Msg; m != nil {
		a = append(a, slog.String(logfields.Subscription, m.Subscription), slog.String(logfields.MessageID, m.ID))
		if !m.PublishTime.IsZero() {
			a = append(a, slog.Time(logfields.PublishTime, m.PublishTime.UTC()))
		}
		if m.DeliveryAttempt > 0 {
			a = append(a, slog.Int(logfields.DeliveryAttempt, m.DeliveryAttempt))
		}
	}
	a = append(a,
		slog.String(logfields.Topic, r.Topic),
		slog.String(logfields.Route, r.Route),
		slog.String(logfields.EventType, r.EventType),
		slog.String(logfields.SchemaVersion, r.SchemaVersion),
		slog.String(logfields.Outcome, r.Outcome),
		slog.String(logfields.WriteKind, cmp.Or(r.WriteKind, logfields.WriteKindNone)),
		slog.String(logfields.DocPath, r.DocPath),
		slog.String(logfields.IdempotencyDoc, r.IdemDoc),
		slog.Int64(logfields.StoreReads, r.Reads),
		slog.Int64(logfields.StoreWrites, r.Writes),
		slog.Float64(logfields.LatencyMS, float64(now.Sub(r.Started).Microseconds())/1000),
	)
	if r.Err != nil {
		a = append(a,
			slog.String(logfields.ErrorType, r.Class.Type),
			slog.String(logfields.ErrorCode, r.Class.Code),
			slog.String(logfields.Error, r.Err.Error()),
			slog.Bool(logfields.Retryable, r.Class.Retryable))
	} else {
		a = append(a, slog.Bool(logfields.Retryable, false))
		switch r.Outcome {
		case logfields.OutcomeDuplicate:
			a = append(a, slog.String(logfields.ErrorType, logfields.ErrorTypeDuplicate))
		case logfields.OutcomeStale:
			a = append(a, slog.String(logfields.ErrorType, logfields.ErrorTypeStale))
		}
	}
	return append(a, extra...)
}
