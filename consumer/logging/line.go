package logging

import (
	"context"
	"log/slog"
	"strconv"
	"time"
)

// Key is a log field name encoded once for Line: a comma, the quoted name
// and a colon.
type Key struct{ enc string }

// NewKey encodes name for Line. A name slog treats specially (empty, time,
// level, msg) makes the fields written with it fail, and the line with
// them (End reports false).
func NewKey(name string) Key {
	if name == "" || name == slog.TimeKey || name == slog.LevelKey || name == slog.MessageKey {
		return Key{}
	}
	return Key{enc: string(append(appendString([]byte{','}, name), ':'))}
}

// Line writes one line of New's logger field by field, for callers that
// log the same fields on every line: no slog.Attr is built and every name
// is encoded once (NewKey). The bytes are those slog's JSON handler writes
// for a record of the same time, level, message and attributes. Start one
// with StartLine; End writes it.
type Line struct {
	h   *handler // nil: the level is disabled, nothing is written
	bp  *[]byte  // the pooled buffer b came from
	b   []byte
	ok  bool
	ctx context.Context // its span's trace fields end the line
}

// StartLine starts the line of t, level and msg on l. ok is false when l's
// handler is not New's, or when it has attributes (With) only slog can
// encode: log through slog then. When the level is disabled, ok is true
// and the line writes nothing.
func StartLine(ctx context.Context, l *slog.Logger, t time.Time, level slog.Level, msg string) (ln Line, ok bool) {
	h, isNew := l.Handler().(*handler)
	if !isNew || !h.encodable {
		return Line{}, false
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if !h.Enabled(ctx, level) {
		return Line{}, true
	}
	bp := h.bufs.Get().(*[]byte)
	b, ok := h.appendHead((*bp)[:0], t, level, msg)
	return Line{h: h, bp: bp, b: b, ok: ok, ctx: ctx}, true
}

func (ln *Line) key(k Key) {
	if k.enc == "" {
		ln.ok = false
	}
	ln.b = append(ln.b, k.enc...)
}

// String adds a string field.
func (ln *Line) String(k Key, s string) {
	if ln.h != nil {
		ln.key(k)
		ln.b = appendString(ln.b, s)
	}
}

// Int64 adds an integer field.
func (ln *Line) Int64(k Key, n int64) {
	if ln.h != nil {
		ln.key(k)
		ln.b = strconv.AppendInt(ln.b, n, 10)
	}
}

// Float64 adds a number field (NaN and infinities fail the line).
func (ln *Line) Float64(k Key, f float64) {
	if ln.h != nil {
		ln.key(k)
		var ok bool
		ln.b, ok = appendFloat(ln.b, f)
		ln.ok = ln.ok && ok
	}
}

// Bool adds a boolean field.
func (ln *Line) Bool(k Key, v bool) {
	if ln.h != nil {
		ln.key(k)
		ln.b = strconv.AppendBool(ln.b, v)
	}
}

// Time adds a time field (a year outside 0-9999 fails the line).
func (ln *Line) Time(k Key, t time.Time) {
	if ln.h != nil {
		ln.key(k)
		var ok bool
		ln.b, ok = appendTime(ln.b, t)
		ln.ok = ln.ok && ok
	}
}

// Attr adds an attribute (one slog would encode in its own way fails the
// line).
func (ln *Line) Attr(a slog.Attr) {
	if ln.h != nil {
		var ok bool
		ln.b, ok = appendAttr(ln.b, a)
		ln.ok = ln.ok && ok
	}
}

// End writes the line and reports true, or, when a field failed, writes
// nothing and reports false: the caller then logs the line through slog.
// The line cannot be used after End.
func (ln *Line) End() bool {
	h := ln.h
	if h == nil {
		return true
	}
	ok := ln.ok
	if ok {
		ln.b = h.trace.appendTo(ln.ctx, ln.b)
		ln.b = append(ln.b, "}\n"...)
		_, _ = h.out.Write(ln.b) // slog.Logger ignores Handle's error too
	}
	if cap(ln.b) <= maxPooledLine {
		*ln.bp = ln.b[:0]
		h.bufs.Put(ln.bp)
	}
	*ln = Line{}
	return ok
}
