package logging

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"testing"
	"time"
)

// lineOf writes attrs field by field with a Line, as a caller would.
func lineOf(ln *Line, attrs []slog.Attr) {
	for _, a := range attrs {
		k := NewKey(a.Key)
		switch v := a.Value; v.Kind() {
		case slog.KindString:
			ln.String(k, v.String())
		case slog.KindInt64:
			ln.Int64(k, v.Int64())
		case slog.KindFloat64:
			ln.Float64(k, v.Float64())
		case slog.KindBool:
			ln.Bool(k, v.Bool())
		case slog.KindTime:
			ln.Time(k, v.Time())
		default:
			ln.Attr(a)
		}
	}
}

// TestLineWritesWhatSlogWrites compares Line's lines with the lines slog
// writes for records of the same time, level, message and attributes, on
// plain and derived loggers, and checks when a Line declines or fails.
func TestLineWritesWhatSlogWrites(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6007, time.FixedZone("CET", 3600))
	attrSets := []struct {
		attrs []slog.Attr
		fails bool // End reports false: slog must write this line
	}{
		{nil, false},
		{[]slog.Attr{slog.String("s", `q " \ <&> é`+"\u2028\xff"), slog.Int64("i", -3), slog.Float64("f", 1.5e-7), slog.Bool("b", true),
			slog.Time("at", at), slog.Duration("d", time.Second), slog.Uint64("u", 7)}, false},
		{[]slog.Attr{slog.String("a", "x"), slog.Any("error", errors.New("boom"))}, true},
		{[]slog.Attr{slog.Float64("nan", math.NaN())}, true},
		{[]slog.Attr{slog.Time("y10k", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))}, true},
		{[]slog.Attr{slog.String("msg", "special key")}, true},
	}
	ctx := context.Background()
	for _, d := range derivations(map[string]bool{"with any": true, "group": true}) {
		for _, lvl := range []slog.Level{slog.LevelDebug, slog.LevelInfo, LevelCritical} {
			for i, set := range attrSets {
				var want, got bytes.Buffer
				r := slog.NewRecord(at, lvl, "m", 0)
				r.AddAttrs(set.attrs...)
				wl := d.fn(New(&want, slog.LevelInfo))
				if wl.Enabled(ctx, lvl) {
					if err := wl.Handler().Handle(ctx, r); err != nil {
						t.Fatal(err)
					}
				}
				ln, ok := StartLine(ctx, d.fn(New(&got, slog.LevelInfo)), at, lvl, "m")
				if ok == d.declined {
					t.Fatalf("%s, level %v: StartLine ok = %v, want %v", d.name, lvl, ok, !d.declined)
				}
				if !ok {
					continue
				}
				lineOf(&ln, set.attrs)
				wrote := ln.End()
				disabled := lvl < slog.LevelInfo
				switch {
				case disabled && (!wrote || got.Len() != 0):
					t.Errorf("%s, attrs %d: a disabled line: End %v, wrote %q", d.name, i, wrote, got.String())
				case !disabled && wrote == set.fails:
					t.Errorf("%s, level %v, attrs %d: End = %v, want %v", d.name, lvl, i, wrote, !set.fails)
				case !disabled && !wrote && got.Len() != 0:
					t.Errorf("%s, attrs %d: a failed line wrote %q", d.name, i, got.String())
				case !disabled && wrote && got.String() != want.String():
					t.Errorf("%s, level %v, attrs %d:\n got %s\nwant %s", d.name, lvl, i, got.String(), want.String())
				}
			}
		}
	}
	if _, ok := StartLine(ctx, slog.New(slog.NewJSONHandler(new(bytes.Buffer), nil)), at, slog.LevelInfo, "m"); ok {
		t.Error("StartLine accepted a logger whose handler is not New's")
	}
}
