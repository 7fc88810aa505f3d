package logging

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"
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
