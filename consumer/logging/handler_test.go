package logging

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// stdLogger is the reference: slog's own JSON handler with replaceAttr.
func stdLogger(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: replaceAttr}))
}

type loggable struct{}

func (loggable) LogValue() slog.Value { return slog.StringValue("resolved") }

// TestHandlerWritesWhatSlogWrites compares New's lines with slog's JSON
// handler's, byte for byte, for records the fast path encodes and records
// it leaves to slog.
func TestHandlerWritesWhatSlogWrites(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6007, time.FixedZone("CET", 3600))
	strs := []string{"", "plain", `quote " backslash \ slash /`, "nl\ncr\rtab\tnul\x00bell\x07del\x7f", "<html>&amp;",
		"é ✓ 😀", "bad \xff utf-8 \xc3", "line\u2028para\u2029", strings.Repeat("long ", 200), strings.Repeat("é", MaxFieldLen)}
	floats := []float64{0, math.Copysign(0, -1), 1, -1.5, 0.001, 123.456, 1e-6, 9.99e-7, 1e-7, 1.5e-300, 1e20, 1e21, 123456789e15,
		math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1)}
	var attrs [][]slog.Attr
	for _, s := range strs {
		attrs = append(attrs, []slog.Attr{slog.String(s, s)})
	}
	for _, f := range floats {
		attrs = append(attrs, []slog.Attr{slog.Float64("latency_ms", f)})
	}
	attrs = append(attrs,
		[]slog.Attr{slog.Int64("i", math.MinInt64), slog.Int("n", 42), slog.Uint64("u", math.MaxUint64), slog.Bool("t", true), slog.Bool("f", false)},
		[]slog.Attr{slog.Duration("d", 1500*time.Millisecond), slog.Time("at", at), slog.Time("utc", at.UTC()), slog.Time("y10k", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))},
		[]slog.Attr{slog.Any("error", errors.New("boom")), slog.Any("list", []int{1, 2})},
		[]slog.Attr{slog.Group("g", slog.String("a", "b")), slog.Any("lv", loggable{})},
		[]slog.Attr{{}, slog.String("", "empty key"), slog.String("level", "x"), slog.String("msg", "y"), slog.String("time", "z")},
		nil,
	)
	levels := []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError, LevelCritical, slog.Level(2)}
	derive := []struct {
		name string
		fn   func(*slog.Logger) *slog.Logger
	}{
		{"plain", func(l *slog.Logger) *slog.Logger { return l }},
		{"with", func(l *slog.Logger) *slog.Logger {
			return l.With("service", "api \"x\"", "env", "prod", "n", 3).With("version", "1.2")
		}},
		{"with any", func(l *slog.Logger) *slog.Logger { return l.With("err", errors.New("e"), "s", "x") }},
		{"group", func(l *slog.Logger) *slog.Logger { return l.With("a", 1).WithGroup("req").With("b", 2) }},
	}
	ctx := context.Background()
	for _, d := range derive {
		for _, lvl := range levels {
			for _, when := range []time.Time{at, {}, time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)} {
				for i, as := range attrs {
					var want, got bytes.Buffer
					msg := strs[i%len(strs)]
					for _, out := range []struct {
						buf *bytes.Buffer
						l   *slog.Logger
					}{{&want, stdLogger(&want)}, {&got, New(&got, slog.LevelDebug)}} {
						r := slog.NewRecord(when, lvl, msg, 0)
						r.AddAttrs(as...)
						if err := d.fn(out.l).Handler().Handle(ctx, r); err != nil {
							t.Fatal(err)
						}
					}
					if got.String() != want.String() {
						t.Errorf("%s, level %v, time %v, attrs %d:\n got %s\nwant %s", d.name, lvl, when, i, got.String(), want.String())
					}
				}
			}
		}
	}
}

func TestHandlerFastPathIsUsed(t *testing.T) {
	h := New(new(bytes.Buffer), slog.LevelInfo).With("service", "api").Handler().(*handler)
	r := slog.NewRecord(time.Now(), slog.LevelInfo, "m", 0)
	r.AddAttrs(slog.String("s", "x"), slog.Int("i", 1), slog.Float64("f", 1.5), slog.Bool("b", true))
	if _, ok := h.appendRecord(nil, r); !ok || !h.encodable {
		t.Fatal("a record of strings, numbers and booleans went to slog's generic path")
	}
}

func TestHandlerLevelAndConcurrentLines(t *testing.T) {
	var buf bytes.Buffer
	var lv slog.LevelVar
	lv.Set(slog.LevelWarn)
	l := New(&buf, &lv)
	l.Info("dropped")
	if buf.Len() != 0 {
		t.Fatalf("INFO written below a WARN level: %q", buf.String())
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				if i%2 == 0 {
					l.Warn("fast", "i", i)
				} else {
					l.Warn("slow", "err", errors.New("e")) // slog's own path, same writer
				}
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 400 {
		t.Fatalf("%d lines, want 400", len(lines))
	}
	for _, line := range lines {
		if !strings.HasPrefix(line, `{"time":`) || !strings.HasSuffix(line, "}") {
			t.Fatalf("interleaved or broken line %q", line)
		}
	}
}

// timeField matches the time value that two lines written at different
// moments differ in.
var timeField = regexp.MustCompile(`^\{"time":"[^"]*",`)

// derivation derives a logger from New's, as callers do; declined says
// whether the fast path under test leaves its lines to slog.
type derivation struct {
	name     string
	fn       func(*slog.Logger) *slog.Logger
	declined bool
}

// derivations are the ways loggers are derived, with the names in
// declined marked declined.
func derivations(declined map[string]bool) []derivation {
	ds := []derivation{
		{name: "plain", fn: func(l *slog.Logger) *slog.Logger { return l }},
		{name: "with", fn: func(l *slog.Logger) *slog.Logger { return l.With("service", "api", "n", 3) }},
		{name: "with any", fn: func(l *slog.Logger) *slog.Logger { return l.With("err", errors.New("e")) }},
		{name: "group", fn: func(l *slog.Logger) *slog.Logger { return l.WithGroup("req") }},
	}
	for i := range ds {
		ds[i].declined = declined[ds[i].name]
	}
	return ds
}

// TestLogAttrsWritesWhatLoggerWrites compares LogAttrs's lines with those
// of slog.Logger.LogAttrs on the same logger (time values aside), for
// attributes the fast path encodes and attributes it leaves to slog, and
// checks that it declines handlers that are not New's.
func TestLogAttrsWritesWhatLoggerWrites(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6007, time.UTC)
	attrSets := [][]slog.Attr{
		nil,
		{slog.String("s", `q " \ <&> é`), slog.Int64("i", -3), slog.Float64("f", 1.5), slog.Bool("b", true), slog.Time("at", at), slog.Duration("d", time.Second)},
		{slog.String("a", "x"), slog.Any("error", errors.New("boom"))},
		{slog.Group("g", slog.String("a", "b")), slog.Any("lv", loggable{}), {}, slog.Group("empty")},
	}
	ctx := context.Background()
	for _, d := range derivations(map[string]bool{"group": true}) {
		for _, lvl := range []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelError, LevelCritical} {
			for i, as := range attrSets {
				var want, got bytes.Buffer
				d.fn(New(&want, slog.LevelInfo)).LogAttrs(ctx, lvl, "m", as...)
				handled := LogAttrs(ctx, d.fn(New(&got, slog.LevelInfo)), lvl, "m", as)
				if handled == d.declined {
					t.Fatalf("%s, level %v, attrs %d: LogAttrs reported %v, want %v", d.name, lvl, i, handled, !d.declined)
				}
				if d.declined {
					if got.Len() != 0 {
						t.Errorf("%s: declined but wrote %q", d.name, got.String())
					}
					continue
				}
				if lvl < slog.LevelInfo && (got.Len() != 0 || want.Len() != 0) {
					t.Errorf("%s: a DEBUG line below INFO was written: %q", d.name, got.String())
				}
				g, w := timeField.ReplaceAllString(got.String(), `{"time":"T",`), timeField.ReplaceAllString(want.String(), `{"time":"T",`)
				if g != w || (lvl >= slog.LevelInfo && !strings.HasPrefix(g, `{"time":"T",`)) {
					t.Errorf("%s, level %v, attrs %d:\n got %s\nwant %s", d.name, lvl, i, got.String(), want.String())
				}
			}
		}
	}
	if LogAttrs(ctx, slog.New(slog.NewJSONHandler(new(bytes.Buffer), nil)), slog.LevelInfo, "m", nil) {
		t.Error("LogAttrs handled a logger whose handler is not New's")
	}
	// LogAttrsAt: the line slog writes for a record stamped at, byte for byte.
	at = time.Date(2026, 1, 2, 3, 4, 5, 6007, time.FixedZone("CET", 3600))
	for i, as := range attrSets[:3] {
		var want, got bytes.Buffer
		r := slog.NewRecord(at, slog.LevelWarn, "m", 0)
		r.AddAttrs(as...)
		if err := New(&want, slog.LevelInfo).Handler().Handle(ctx, r); err != nil {
			t.Fatal(err)
		}
		if !LogAttrsAt(ctx, New(&got, slog.LevelInfo), at, slog.LevelWarn, "m", as) || got.String() != want.String() {
			t.Errorf("LogAttrsAt, attrs %d:\n got %s\nwant %s", i, got.String(), want.String())
		}
		got.Reset()
		if !LogAttrsAt(ctx, New(&got, slog.LevelInfo), at, slog.LevelDebug, "m", as) || got.Len() != 0 {
			t.Errorf("LogAttrsAt below the level wrote %q", got.String())
		}
	}
	if LogAttrsAt(ctx, slog.New(slog.NewJSONHandler(new(bytes.Buffer), nil)), at, slog.LevelInfo, "m", nil) {
		t.Error("LogAttrsAt handled a logger whose handler is not New's")
	}
}
