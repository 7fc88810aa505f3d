package logging

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/eventpipe/eventpipe/consumer/logfields"
)

// traceHandler adds the span of a line's context to the line, last, in
// Cloud Logging's trace fields.
type traceHandler struct {
	slog.Handler
	// prefix is "projects/PROJECT/traces/", "" when no project is known
	// (the trace field is then left out).
	prefix string
}

// Handle implements slog.Handler.
func (h *traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r = r.Clone() // the caller's record stays as it was
		if h.prefix != "" {
			r.AddAttrs(slog.String(logfields.Trace, h.prefix+sc.TraceID().String()))
		}
		r.AddAttrs(slog.String(logfields.SpanID, sc.SpanID().String()), slog.Bool(logfields.TraceSampled, sc.IsSampled()))
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h *traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &traceHandler{Handler: h.Handler.WithAttrs(as), prefix: h.prefix}
}

// WithGroup implements slog.Handler: the trace fields would land inside
// the group, where Cloud Logging does not read them, so lines of a group
// carry none.
func (h *traceHandler) WithGroup(name string) slog.Handler { return h.Handler.WithGroup(name) }
