package logging

import (
	"context"
	"encoding/hex"
	"log/slog"
	"strconv"

	"go.opentelemetry.io/otel/trace"

	"github.com/eventpipe/eventpipe/consumer/logfields"
)

// traceFields writes the span of a line's context in Cloud Logging's
// special fields. A nil *traceFields writes none.
type traceFields struct {
	// prefix is "projects/PROJECT/traces/", "" when no project is known;
	// prefixJSON is it escaped as in a JSON string.
	prefix, prefixJSON string
}

func newTraceFields(project string) *traceFields {
	f := &traceFields{}
	if project != "" {
		f.prefix = "projects/" + project + "/traces/"
		quoted := appendString(nil, f.prefix)
		f.prefixJSON = string(quoted[1 : len(quoted)-1])
	}
	return f
}

// appendTo appends the trace fields of ctx's span, when it has a valid one.
func (f *traceFields) appendTo(ctx context.Context, b []byte) []byte {
	if f == nil || ctx == nil {
		return b
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return b
	}
	if f.prefix != "" {
		b = append(b, `,"`+logfields.Trace+`":"`...)
		b = append(b, f.prefixJSON...)
		id := sc.TraceID()
		b = hex.AppendEncode(b, id[:])
		b = append(b, '"')
	}
	b = append(b, `,"`+logfields.SpanID+`":"`...)
	id := sc.SpanID()
	b = hex.AppendEncode(b, id[:])
	b = append(b, `","`+logfields.TraceSampled+`":`...)
	return strconv.AppendBool(b, sc.IsSampled())
}

// addTo adds the fields appendTo writes to r, as its last attributes (where
// appendTo writes them), for lines slog's own handler writes.
func (f *traceFields) addTo(ctx context.Context, r slog.Record) slog.Record {
	if f == nil || ctx == nil {
		return r
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return r
	}
	r = r.Clone()
	if f.prefix != "" {
		r.AddAttrs(slog.String(logfields.Trace, f.prefix+sc.TraceID().String()))
	}
	r.AddAttrs(slog.String(logfields.SpanID, sc.SpanID().String()), slog.Bool(logfields.TraceSampled, sc.IsSampled()))
	return r
}
