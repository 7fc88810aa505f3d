// Package logging builds the consumer's slog JSON logger in Cloud Logging's
// shape: the level is written as "severity" with Cloud Logging's names and
// the text as "message", so Cloud Run's log agent parses every line.
package logging

import (
	"io"
	"log/slog"
	"unicode/utf8"

	"github.com/eventpipe/eventpipe/consumer/logfields"
)

// LevelCritical is Cloud Logging's CRITICAL severity: configuration errors
// (permission denied, missing config) that will not heal by retrying.
const LevelCritical = slog.Level(12)

// MaxFieldLen bounds every string a line holds (field values, the
// message, names), so that no input can make a huge log entry: a line has
// a few dozen fields, far below Cloud Logging's 256 KB per entry. Longer
// strings are cut on a rune boundary and end with "…".
const MaxFieldLen = 1024

// New returns a JSON logger writing to w: slog's JSONHandler with Cloud
// Logging's severity and message keys, every string bounded to MaxFieldLen
// bytes (replaceAttr). Attributes added with With are kept on every line.
func New(w io.Writer, level slog.Leveler, opts ...Option) *slog.Logger {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	var h slog.Handler = slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: replaceAttr})
	if o.trace {
		t := &traceHandler{Handler: h}
		if o.project != "" {
			t.prefix = "projects/" + o.project + "/traces/"
		}
		h = t
	}
	return slog.New(h)
}

// Option configures New.
type Option func(*options)

type options struct {
	trace   bool
	project string
}

// WithTrace makes every line logged with a context holding a valid span
// carry the span for Cloud Logging, which nests the lines under their
// trace: logging.googleapis.com/trace (projects/PROJECT/traces/TRACE_ID),
// logging.googleapis.com/spanId and logging.googleapis.com/trace_sampled.
// project is the Google Cloud project of the trace; when it is empty the
// trace field is left out (Cloud Logging needs the project) and the other
// two are written.
func WithTrace(project string) Option {
	return func(o *options) { o.trace, o.project = true, project }
}

// replaceAttr renames slog's level and msg keys to Cloud Logging's and
// bounds every string (and error) to MaxFieldLen bytes.
func replaceAttr(groups []string, a slog.Attr) slog.Attr {
	a.Key = Bound(a.Key)
	switch v := a.Value; v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(Bound(v.String()))
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			a.Value = slog.StringValue(Bound(err.Error()))
		}
	}
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.LevelKey:
		lvl, _ := a.Value.Any().(slog.Level)
		return slog.String(logfields.Severity, SeverityName(lvl))
	case slog.MessageKey:
		a.Key = logfields.Message
	}
	return a
}

// SeverityName maps a slog level to Cloud Logging's severity name.
func SeverityName(l slog.Level) string {
	switch {
	case l >= LevelCritical:
		return "CRITICAL"
	case l >= slog.LevelError:
		return "ERROR"
	case l >= slog.LevelWarn:
		return "WARNING"
	case l >= slog.LevelInfo:
		return "INFO"
	default:
		return "DEBUG"
	}
}

// Bound truncates s to at most MaxFieldLen bytes on a rune boundary, marking
// the cut with an ellipsis.
func Bound(s string) string { return Truncate(s, MaxFieldLen) }

// Truncate cuts s to at most max bytes on a rune boundary, marking the cut
// with an ellipsis.
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s // inlined where it is called: most strings are short
	}
	return cut(s, max)
}

// cut is Truncate of a string longer than max.
func cut(s string, max int) string {
	cut := max - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
