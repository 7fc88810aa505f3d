package process

import (
	"context"
	"log/slog"
	"time"

	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/logging"
)

// Log writes the result's one JSON line. extra carries what only the
// ingress knows: http_status for push, ack_action for both.
func (p *Processor) Log(ctx context.Context, r *Result, extra ...slog.Attr) {
	buf := p.attrs.Get().(*[]slog.Attr)
	now := time.Now() // the line's time and the end of latency_ms
	attrs := r.appendAttrs((*buf)[:0], now, extra...)
	// Both write the line before returning: the slice can be reused at once.
	if msg := lineMessage(r.Outcome); !logging.LogAttrsAt(ctx, p.cfg.Logger, now, r.Level, msg, attrs) {
		p.cfg.Logger.LogAttrs(ctx, r.Level, msg, attrs...)
	}
	clear(attrs)
	*buf = attrs[:0]
	p.attrs.Put(buf)
}

// lineMessage is the message of a result's line: "pubsub message " and the
// outcome (constants for the known outcomes, to spare an allocation).
func lineMessage(outcome string) string {
	switch outcome {
	case logfields.OutcomeApplied:
		return "pubsub message " + logfields.OutcomeApplied
	case logfields.OutcomeDuplicate:
		return "pubsub message " + logfields.OutcomeDuplicate
	case logfields.OutcomeStale:
		return "pubsub message " + logfields.OutcomeStale
	case logfields.OutcomePoison:
		return "pubsub message " + logfields.OutcomePoison
	case logfields.OutcomeRetry:
		return "pubsub message " + logfields.OutcomeRetry
	}
	return "pubsub message " + outcome
}

// maxAttrs is the most attributes a result's line has before extra.
const maxAttrs = 24

// Attrs returns the log fields of r (see package logfields), plus extra.
func (r *Result) Attrs(extra ...slog.Attr) []slog.Attr {
	return r.appendAttrs(make([]slog.Attr, 0, maxAttrs+len(extra)), time.Now(), extra...)
}

// appendAttrs appends the log fields of r as of now, then extra, to a.
func (r *Result) appendAttrs(a []slog.Attr, now time.Time, extra ...slog.Attr) []slog.Attr {
	if m := r.Msg; m != nil {
		a = append(a,
			slog.String(logfields.Subscription, m.Subscription),
			slog.String(logfields.MessageID, m.ID),
		)
		if !m.PublishTime.IsZero() {
			// A time, not its text: the JSON line is the same (RFC 3339 with
			// nanoseconds, quoted), without formatting into a new string.
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
		slog.String(logfields.WriteKind, writeKind(r.WriteKind)),
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
			slog.String(logfields.Error, logging.Bound(r.Err.Error())),
			slog.Bool(logfields.Retryable, r.Class.Retryable),
		)
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

func writeKind(k string) string {
	if k == "" {
		return logfields.WriteKindNone
	}
	return k
}
