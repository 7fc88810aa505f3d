package logging

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/eventpipe/eventpipe/consumer/logfields"
)

// handler writes exactly the lines slog.JSONHandler (with replaceAttr)
// writes, but encodes the common records itself: those without groups
// whose attributes are strings, integers, booleans, floats, durations and
// times. It skips slog's per-attribute ReplaceAttr call and generic value
// handling, which are most of a line's cost. Any other record, and any
// handler derived with WithGroup, goes to the wrapped slog.JSONHandler.
type handler struct {
	std   slog.Handler // slog.JSONHandler writing through out: the reference and fallback
	out   *lockedWriter
	level slog.Leveler
	// attrs are the WithAttrs attributes, encoded, each with a leading
	// comma; encodable says whether every one of them could be.
	attrs     []byte
	encodable bool
	bufs      *sync.Pool // of *[]byte
}

// lockedWriter serialises the writes of the fast path and of the wrapped
// handler, which both write one whole line per Write.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// maxPooledLine bounds the line buffers kept for reuse.
const maxPooledLine = 16 << 10

func newHandler(w io.Writer, opts *slog.HandlerOptions) *handler {
	out := &lockedWriter{w: w}
	level := opts.Level
	if level == nil {
		level = slog.LevelInfo
	}
	return &handler{
		std: slog.NewJSONHandler(out, opts), out: out, level: level, encodable: true,
		bufs: &sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }},
	}
}

// Enabled implements slog.Handler.
func (h *handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

// WithAttrs implements slog.Handler.
func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	h2 := *h
	h2.std = h.std.WithAttrs(as)
	if h.encodable {
		b := append([]byte(nil), h.attrs...)
		for _, a := range as {
			var ok bool
			if b, ok = appendAttr(b, a); !ok {
				h2.encodable = false
				break
			}
		}
		h2.attrs = b
	}
	return &h2
}

// WithGroup implements slog.Handler: groups are left to slog.JSONHandler.
func (h *handler) WithGroup(name string) slog.Handler { return h.std.WithGroup(name) }

// Handle implements slog.Handler.
func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	return h.write(ctx, func(b []byte) ([]byte, bool) { return h.appendRecord(b, r) }, func() slog.Record { return r })
}

// write writes one line: the one encode appends when it can, else the
// wrapped handler's for the record that record builds.
func (h *handler) write(ctx context.Context, encode func(b []byte) ([]byte, bool), record func() slog.Record) error {
	if !h.encodable {
		return h.std.Handle(ctx, record())
	}
	bp := h.bufs.Get().(*[]byte)
	b, ok := encode((*bp)[:0])
	var err error
	if ok {
		_, err = h.out.Write(b)
	} else {
		err = h.std.Handle(ctx, record())
	}
	if cap(b) <= maxPooledLine {
		*bp = b[:0]
		h.bufs.Put(bp)
	}
	return err
}

// appendRecord encodes r as slog.JSONHandler with replaceAttr would, or
// reports that it cannot.
func (h *handler) appendRecord(b []byte, r slog.Record) ([]byte, bool) {
	b, ok := h.appendHead(b, r.Time, r.Level, r.Message)
	if !ok {
		return b, false
	}
	r.Attrs(func(a slog.Attr) bool {
		b, ok = appendAttr(b, a)
		return ok
	})
	return append(b, "}\n"...), ok
}

// appendLine is appendRecord for the record of t, level, msg and attrs.
func (h *handler) appendLine(b []byte, t time.Time, level slog.Level, msg string, attrs []slog.Attr) ([]byte, bool) {
	b, ok := h.appendHead(b, t, level, msg)
	for i := 0; ok && i < len(attrs); i++ {
		b, ok = appendAttr(b, attrs[i])
	}
	return append(b, "}\n"...), ok
}

// appendHead opens a line: time, severity, message and the WithAttrs
// attributes.
func (h *handler) appendHead(b []byte, t time.Time, level slog.Level, msg string) ([]byte, bool) {
	b = append(b, '{')
	if !t.IsZero() {
		var ok bool
		b = append(b, `"`+slog.TimeKey+`":`...)
		if b, ok = appendTime(b, t.Round(0)); !ok {
			return b, false
		}
		b = append(b, ',')
	}
	b = append(b, `"`+logfields.Severity+`":"`...)
	b = append(b, SeverityName(level)...)
	b = append(b, `","`+logfields.Message+`":`...)
	b = appendString(b, msg)
	return append(b, h.attrs...), true
}

// LogAttrs writes the line that l.LogAttrs(ctx, level, msg, attrs...)
// writes, when l's handler is New's (or derived from it with With): it
// encodes attrs from the slice, sparing slog.Logger's copy of them into a
// Record and its caller lookup (New's lines have no source). It reports
// false, having written nothing, for any other handler: the caller then
// logs through l itself.
func LogAttrs(ctx context.Context, l *slog.Logger, level slog.Level, msg string, attrs []slog.Attr) bool {
	h, ok := l.Handler().(*handler)
	if !ok {
		return false
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if !h.Enabled(ctx, level) {
		return true
	}
	h.logAt(ctx, time.Now(), level, msg, attrs)
	return true
}

// LogAttrsAt is LogAttrs for a line whose time is t, for a caller that
// has read the clock already (slog.Logger would stamp the line with
// time.Now).
func LogAttrsAt(ctx context.Context, l *slog.Logger, t time.Time, level slog.Level, msg string, attrs []slog.Attr) bool {
	h, ok := l.Handler().(*handler)
	if !ok {
		return false
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if h.Enabled(ctx, level) {
		h.logAt(ctx, t, level, msg, attrs)
	}
	return true
}

// logAt writes the line of t, level, msg and attrs.
func (h *handler) logAt(ctx context.Context, t time.Time, level slog.Level, msg string, attrs []slog.Attr) {
	encode := func(b []byte) ([]byte, bool) { return h.appendLine(b, t, level, msg, attrs) }
	record := func() slog.Record {
		r := slog.NewRecord(t, level, msg, 0)
		r.AddAttrs(attrs...)
		return r
	}
	_ = h.write(ctx, encode, record) // slog.Logger ignores Handle's error too
}

// appendAttr appends a comma and a as "key":value, or reports that a
// needs slog's own handling (groups, LogValuers, other values, empty keys).
func appendAttr(b []byte, a slog.Attr) ([]byte, bool) {
	if a.Key == "" || a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey {
		return b, false // elided or renamed by slog: leave it to slog
	}
	b = append(b, ',')
	b = appendString(b, a.Key)
	b = append(b, ':')
	v := a.Value
	switch v.Kind() {
	case slog.KindString:
		return appendString(b, v.String()), true
	case slog.KindInt64:
		return strconv.AppendInt(b, v.Int64(), 10), true
	case slog.KindUint64:
		return strconv.AppendUint(b, v.Uint64(), 10), true
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool()), true
	case slog.KindDuration:
		return strconv.AppendInt(b, int64(v.Duration()), 10), true
	case slog.KindFloat64:
		return appendFloat(b, v.Float64())
	case slog.KindTime:
		return appendTime(b, v.Time())
	}
	return b, false
}

// appendTime writes t as slog's JSON handler does: quoted RFC 3339 with
// nanoseconds; slog reports years outside 0-9999 as errors, so those are
// left to it.
func appendTime(b []byte, t time.Time) ([]byte, bool) {
	if y := t.Year(); y < 0 || y >= 10000 {
		return b, false
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), true
}

// appendFloat writes f as encoding/json does (slog's JSON handler uses
// it): decimal notation, exponent notation below 1e-6 and from 1e21, with
// a one-digit negative exponent written without its leading zero.
// NaN and infinities are errors in JSON: left to slog.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1] // e-07 -> e-7
		b = b[:n-1]
	}
	return b, true
}

const hexDigits = "0123456789abcdef"

// appendString writes s, bounded (Bound), as a quoted JSON string the way
// slog's JSON handler (with replaceAttr) escapes it: '"', '\\' and control characters escaped (\n, \r, \t or
// \u00XX), invalid UTF-8 bytes as \ufffd, U+2028 and U+2029 escaped, and
// everything else (HTML characters included) as is.
func appendString(b []byte, s string) []byte {
	s = Bound(s)
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++ // printable ASCII: as is
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
