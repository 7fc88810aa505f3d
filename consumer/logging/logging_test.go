package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/eventpipe/eventpipe/consumer/logfields"
)

func TestNewWritesCloudLoggingKeys(t *testing.T) {
	tests := []struct {
		level slog.Level
		want  string
	}{
		{slog.LevelDebug, "DEBUG"},
		{slog.LevelInfo, "INFO"},
		{slog.LevelWarn, "WARNING"},
		{slog.LevelError, "ERROR"},
		{LevelCritical, "CRITICAL"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			var buf bytes.Buffer
			New(&buf, slog.LevelDebug).Log(t.Context(), tt.level, "hello", "k", "v")
			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatalf("not one JSON line: %v: %q", err, buf.String())
			}
			if line["severity"] != tt.want || line["message"] != "hello" || line["k"] != "v" {
				t.Fatalf("line = %v", line)
			}
			if _, ok := line["level"]; ok {
				t.Fatalf("slog's level key leaked: %v", line)
			}
			if _, ok := line["msg"]; ok {
				t.Fatalf("slog's msg key leaked: %v", line)
			}
		})
	}
}

func TestBound(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"short", "boom"},
		{"exact", strings.Repeat("a", MaxFieldLen)},
		{"long ascii", strings.Repeat("a", 5000)},
		{"long multibyte", strings.Repeat("é", 5000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Bound(tt.in)
			if len(got) > MaxFieldLen {
				t.Fatalf("len %d > %d", len(got), MaxFieldLen)
			}
			if !utf8.ValidString(got) {
				t.Fatalf("cut inside a rune")
			}
			if len(tt.in) <= MaxFieldLen && got != tt.in {
				t.Fatalf("short input changed: %q", got)
			}
			if len(tt.in) > MaxFieldLen && !strings.HasSuffix(got, "…") {
				t.Fatalf("cut not marked: %q", got[len(got)-8:])
			}
		})
	}
}

// FuzzNewBoundsEveryString: whatever the message, a field's name and its
// value (a string, an error, a string inside a group, an attribute added
// with With), the logger writes one JSON line in which each of them reads
// back as Bound of it: at most MaxFieldLen bytes as written (each invalid
// UTF-8 byte reads back as U+FFFD, as slog's JSON handler escapes it).
func FuzzNewBoundsEveryString(f *testing.F) {
	long := strings.Repeat("a", MaxFieldLen)
	for _, seed := range [][2]string{
		{"", ""}, {"route", "orders"}, {long, long + "b"}, {strings.Repeat("é", MaxFieldLen), strings.Repeat("😀", 600)},
		{"q\"\\\n\x00", "bad \xff utf-8 \xc3"}, {strings.Repeat("\xff", 2*MaxFieldLen), "line\u2028para\u2029<&>"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		var buf bytes.Buffer
		New(&buf, slog.LevelInfo).With("w_"+name, value).LogAttrs(t.Context(), slog.LevelWarn, value,
			slog.String("k_"+name, value), slog.Any("error", errors.New(value)), slog.Group("g", slog.String(name, value)))
		if n := strings.Count(buf.String(), "\n"); n != 1 || !strings.HasSuffix(buf.String(), "\n") {
			t.Fatalf("%d lines: %q", n, buf.String())
		}
		var line map[string]any
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatalf("not JSON: %v: %q", err, buf.String())
		}
		readBack := func(s string) string { return string([]rune(Bound(s))) }
		want := readBack(value)
		group, _ := line["g"].(map[string]any)
		for field, got := range map[string]any{
			logfields.Message: line[logfields.Message], "k_": line[readBack("k_"+name)], "w_": line[readBack("w_"+name)],
			"error": line["error"], "group": group[readBack(name)],
		} {
			if got != want {
				t.Errorf("%s reads back %q, want %q (line %s)", field, got, want, buf.String())
			}
		}
		if line[logfields.Severity] != "WARNING" {
			t.Errorf("severity %v, want WARNING", line[logfields.Severity])
		}
	})
}

// TestNewLevelAndConcurrentLines: lines below the level are not written,
// and lines logged at once from many goroutines come out whole, one per
// line.
func TestNewLevelAndConcurrentLines(t *testing.T) {
	var buf bytes.Buffer
	var lv slog.LevelVar
	lv.Set(slog.LevelWarn)
	l := New(&buf, &lv, WithTrace("p"))
	l.Info("dropped")
	if buf.Len() != 0 {
		t.Fatalf("INFO written below a WARN level: %q", buf.String())
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				l.Warn("line", "i", i, "err", errors.New("e"))
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 400 {
		t.Fatalf("%d lines, want 400", len(lines))
	}
	for _, line := range lines {
		if !json.Valid([]byte(line)) {
			t.Fatalf("interleaved or broken line %q", line)
		}
	}
}
