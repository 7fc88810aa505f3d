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
	now := time.Now() // the line's time and the end of latency_ms
	msg := lineMessage(r.Outcome)
	w := lineWriter{keys: p.keys}
	if w.line, w.direct = logging.StartLine(ctx, p.cfg.Logger, now, r.Level, msg); w.direct {
		r.fields(&w, now, extra)
		if w.line.End() {
			return
		}
	}
	// slog writes the line: the logger is not logging.New's, or a field
	// needs slog's own encoding.
	buf := p.attrs.Get().(*[]slog.Attr)
	w = lineWriter{keys: p.keys, attrs: (*buf)[:0]}
	r.fields(&w, now, extra)
	// Both write the line before returning: the slice can be reused at once.
	if !logging.LogAttrsAt(ctx, p.cfg.Logger, now, r.Level, msg, w.attrs) {
		p.cfg.Logger.LogAttrs(ctx, r.Level, msg, w.attrs...)
	}
	clear(w.attrs)
	*buf = w.attrs[:0]
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
const maxAttrs = int(numLineFields)

// lineField is a field of a result's line: an index into lineKeys.
type lineField int

// The fields of a result's line (Result.fields writes them).
const (
	lfSubscription lineField = iota
	lfMessageID
	lfPublishTime
	lfDeliveryAttempt
	lfTopic
	lfRoute
	lfEventType
	lfSchemaVersion
	lfOutcome
	lfWriteKind
	lfDocPath
	lfIdempotencyDoc
	lfStoreReads
	lfStoreWrites
	lfLatency
	lfErrorType
	lfErrorCode
	lfError
	lfRetryable
	numLineFields
)

// lineKeys are the names of a result's fields (see package logfields),
// as they are and encoded for logging.Line.
type lineKeys struct {
	names [numLineFields]string
	keys  [numLineFields]logging.Key
}

func newLineKeys() *lineKeys {
	k := &lineKeys{names: [numLineFields]string{
		lfSubscription: logfields.Subscription, lfMessageID: logfields.MessageID, lfPublishTime: logfields.PublishTime,
		lfDeliveryAttempt: logfields.DeliveryAttempt, lfTopic: logfields.Topic, lfRoute: logfields.Route,
		lfEventType: logfields.EventType, lfSchemaVersion: logfields.SchemaVersion, lfOutcome: logfields.Outcome,
		lfWriteKind: logfields.WriteKind, lfDocPath: logfields.DocPath, lfIdempotencyDoc: logfields.IdempotencyDoc,
		lfStoreReads: logfields.StoreReads, lfStoreWrites: logfields.StoreWrites, lfLatency: logfields.LatencyMS,
		lfErrorType: logfields.ErrorType, lfErrorCode: logfields.ErrorCode, lfError: logfields.Error,
		lfRetryable: logfields.Retryable,
	}}
	for i, name := range k.names {
		k.keys[i] = logging.NewKey(name)
	}
	return k
}

// lineWriter takes a result's fields into line when direct is set, else
// as attributes appended to attrs.
type lineWriter struct {
	keys   *lineKeys
	direct bool
	line   logging.Line
	attrs  []slog.Attr
}

func (w *lineWriter) str(f lineField, v string) {
	if w.direct {
		w.line.String(w.keys.keys[f], v)
		return
	}
	w.attrs = append(w.attrs, slog.String(w.keys.names[f], v))
}

func (w *lineWriter) integer(f lineField, v int64) {
	if w.direct {
		w.line.Int64(w.keys.keys[f], v)
		return
	}
	w.attrs = append(w.attrs, slog.Int64(w.keys.names[f], v))
}

func (w *lineWriter) number(f lineField, v float64) {
	if w.direct {
		w.line.Float64(w.keys.keys[f], v)
		return
	}
	w.attrs = append(w.attrs, slog.Float64(w.keys.names[f], v))
}

func (w *lineWriter) boolean(f lineField, v bool) {
	if w.direct {
		w.line.Bool(w.keys.keys[f], v)
		return
	}
	w.attrs = append(w.attrs, slog.Bool(w.keys.names[f], v))
}

func (w *lineWriter) timestamp(f lineField, v time.Time) {
	if w.direct {
		w.line.Time(w.keys.keys[f], v)
		return
	}
	w.attrs = append(w.attrs, slog.Time(w.keys.names[f], v))
}

func (w *lineWriter) extra(a slog.Attr) {
	if w.direct {
		w.line.Attr(a)
		return
	}
	w.attrs = append(w.attrs, a)
}

// Attrs returns the log fields of r (see package logfields), plus extra.
func (r *Result) Attrs(extra ...slog.Attr) []slog.Attr {
	w := lineWriter{keys: newLineKeys(), attrs: make([]slog.Attr, 0, maxAttrs+len(extra))}
	r.fields(&w, time.Now(), extra)
	return w.attrs
}

// fields writes the log fields of r as of now, then extra, to w.
func (r *Result) fields(w *lineWriter, now time.Time, extra []slog.Attr) {
	if m := r.Msg; m != nil {
		w.str(lfSubscription, m.Subscription)
		w.str(lfMessageID, m.ID)
		if !m.PublishTime.IsZero() {
			// A time, not its text: the JSON line is the same (RFC 3339 with
			// nanoseconds, quoted), without formatting into a new string.
			w.timestamp(lfPublishTime, m.PublishTime.UTC())
		}
		if m.DeliveryAttempt > 0 {
			w.integer(lfDeliveryAttempt, int64(m.DeliveryAttempt))
		}
	}
	w.str(lfTopic, r.Topic)
	w.str(lfRoute, r.Route)
	w.str(lfEventType, r.EventType)
	w.str(lfSchemaVersion, r.SchemaVersion)
	w.str(lfOutcome, r.Outcome)
	w.str(lfWriteKind, writeKind(r.WriteKind))
	w.str(lfDocPath, r.DocPath)
	w.str(lfIdempotencyDoc, r.IdemDoc)
	w.integer(lfStoreReads, r.Reads)
	w.integer(lfStoreWrites, r.Writes)
	w.number(lfLatency, float64(now.Sub(r.Started).Microseconds())/1000)
	if r.Err != nil {
		w.str(lfErrorType, r.Class.Type)
		w.str(lfErrorCode, r.Class.Code)
		w.str(lfError, r.Err.Error())
		w.boolean(lfRetryable, r.Class.Retryable)
	} else {
		w.boolean(lfRetryable, false)
		switch r.Outcome {
		case logfields.OutcomeDuplicate:
			w.str(lfErrorType, logfields.ErrorTypeDuplicate)
		case logfields.OutcomeStale:
			w.str(lfErrorType, logfields.ErrorTypeStale)
		}
	}
	for _, a := range extra {
		w.extra(a)
	}
}

func writeKind(k string) string {
	if k == "" {
		return logfields.WriteKindNone
	}
	return k
}
