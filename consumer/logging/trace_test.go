package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/eventpipe/eventpipe/consumer/logfields"
)

// TestTraceFieldsOnEveryPath checks that a line logged with a span in its
// context carries Cloud Logging's trace fields whichever way it is
// written (Handle, LogAttrs, Log with any values, a logger derived with
// With), Handle's byte for byte as slog's JSON handler writes the same
// fields added last; and that lines without a span, or of a logger
// without WithTrace, carry none.
func TestTraceFieldsOnEveryPath(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:  trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7}, TraceFlags: trace.FlagsSampled})
	unsampled := sc.WithTraceFlags(0)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	writers := map[string]func(ctx context.Context, l *slog.Logger){
		"Handle": func(ctx context.Context, l *slog.Logger) {
			r := slog.NewRecord(at, slog.LevelInfo, "m", 0)
			r.AddAttrs(slog.String("route", "r"))
			_ = l.Handler().Handle(ctx, r)
		},
		"LogAttrs": func(ctx context.Context, l *slog.Logger) {
			l.LogAttrs(ctx, slog.LevelInfo, "m", slog.String("route", "r"))
		},
		"slog any": func(ctx context.Context, l *slog.Logger) { l.Log(ctx, slog.LevelInfo, "m", "route", []string{"r"}) },
		"with any": func(ctx context.Context, l *slog.Logger) { l.With("x", []int{1}).InfoContext(ctx, "m", "route", "r") },
	}
	for name, write := range writers {
		t.Run(name, func(t *testing.T) {
			for _, tc := range []struct {
				name string
				opts []Option
				sc   trace.SpanContext
				want map[string]any
			}{
				{"sampled", []Option{WithTrace("p1")}, sc, map[string]any{
					logfields.Trace: "projects/p1/traces/4bf92f3577b34da6a3ce929d0e0e4736", logfields.SpanID: "00f067aa0ba902b7", logfields.TraceSampled: true}},
				{"unsampled", []Option{WithTrace("p1")}, unsampled, map[string]any{
					logfields.Trace: "projects/p1/traces/4bf92f3577b34da6a3ce929d0e0e4736", logfields.SpanID: "00f067aa0ba902b7", logfields.TraceSampled: false}},
				{"no project", []Option{WithTrace("")}, sc, map[string]any{logfields.SpanID: "00f067aa0ba902b7", logfields.TraceSampled: true}},
				{"project to escape", []Option{WithTrace(`p"1`)}, sc, map[string]any{
					logfields.Trace: `projects/p"1/traces/4bf92f3577b34da6a3ce929d0e0e4736`, logfields.SpanID: "00f067aa0ba902b7", logfields.TraceSampled: true}},
				{"no span", []Option{WithTrace("p1")}, trace.SpanContext{}, map[string]any{}},
				{"tracing off", nil, sc, map[string]any{}},
			} {
				var fast, ref bytes.Buffer
				ctx := trace.ContextWithSpanContext(context.Background(), tc.sc)
				write(ctx, New(&fast, slog.LevelInfo, tc.opts...))
				var line map[string]any
				if err := json.Unmarshal(fast.Bytes(), &line); err != nil {
					t.Fatalf("%s: %v: %q", tc.name, err, fast.String())
				}
				for _, k := range []string{logfields.Trace, logfields.SpanID, logfields.TraceSampled} {
					if want, ok := tc.want[k]; line[k] != want || (!ok && line[k] != nil) {
						t.Errorf("%s: %s = %v, want %v (line %s)", tc.name, k, line[k], want, fast.String())
					}
				}
				// slog's JSON handler with the same fields added last writes the same bytes.
				std := slog.New(slog.NewJSONHandler(&ref, &slog.HandlerOptions{ReplaceAttr: replaceAttr}))
				var extra []any
				for _, k := range []string{logfields.Trace, logfields.SpanID, logfields.TraceSampled} {
					if v, ok := tc.want[k]; ok {
						extra = append(extra, k, v)
					}
				}
				if name == "Handle" {
					r := slog.NewRecord(at, slog.LevelInfo, "m", 0)
					r.Add("route", "r")
					r.Add(extra...)
					_ = std.Handler().Handle(ctx, r)
					if fast.String() != ref.String() {
						t.Errorf("%s:\n got %s\nwant %s", tc.name, fast.String(), ref.String())
					}
				}
			}
		})
	}
}
