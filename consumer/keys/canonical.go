// Package keys builds the identifiers the idempotency engine stores under:
// canonical JSON, payload fingerprints, logical event keys and normalised,
// environment-qualified document ids that are always valid Firestore ids.
package keys

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// CanonicalJSON returns the canonical form of the JSON text data: object keys
// sorted by their UTF-8 bytes, no insignificant whitespace, strings escaped
// minimally (only '"', '\\' and control characters), integers written as
// decimal integers and other numbers in their shortest round-trip form. Equal
// JSON values give equal bytes, so the result can be hashed. Duplicate object
// keys and invalid UTF-8 are errors: either would make two different payloads
// hash alike.
func CanonicalJSON(data []byte) ([]byte, error) {
	p := getParser(data)
	defer putParser(p)
	out, err := p.canonical()
	if err != nil {
		return nil, err
	}
	return append(make([]byte, 0, len(out)), out...), nil
}

// canonical parses p.in and returns its canonical form, which aliases p's
// buffer: use it before the parser goes back to the pool.
func (p *parser) canonical() ([]byte, error) {
	if !utf8.Valid(p.in) {
		return nil, errors.New("canonical JSON: input is not valid UTF-8")
	}
	p.ws()
	if err := p.value(0); err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	p.ws()
	if p.pos != len(p.in) {
		return nil, fmt.Errorf("canonical JSON: trailing data at offset %d", p.pos)
	}
	return p.out, nil
}

// CanonicalValue returns the canonical JSON of a Go value: the same bytes as
// CanonicalJSON of its encoding/json encoding. Values of the shape
// encoding/json decodes to (nil, bool, string, json.Number, int64, int,
// []any, map[string]any) are written directly; anything else is encoded
// with encoding/json first.
func CanonicalValue(v any) ([]byte, error) {
	if out, ok := appendCanonicalValue(nil, v, 0); ok {
		return out, nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	return CanonicalJSON(data)
}

// appendCanonicalValue appends the canonical JSON of v when v is made only
// of values whose encoding/json form it knows exactly; ok is false for
// anything else (including values encoding/json would reject or alter, such
// as invalid UTF-8), and the caller falls back to encoding/json.
func appendCanonicalValue(b []byte, v any, depth int) (out []byte, ok bool) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), true
	case bool:
		return strconv.AppendBool(b, x), true
	case string:
		if !utf8.ValidString(x) {
			return b, false
		}
		return appendString(b, x), true
	case json.Number:
		end, frac, problem := scanNumber(string(x), 0)
		if problem != "" || end != len(x) {
			return b, false
		}
		out, err := appendCanonNumber(b, string(x), frac)
		return out, err == nil
	case int64:
		return strconv.AppendInt(b, x, 10), true
	case int:
		return strconv.AppendInt(b, int64(x), 10), true
	case []any:
		if x == nil {
			return append(b, "null"...), true
		}
		if depth >= MaxDepth {
			return b, false
		}
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendCanonicalValue(b, e, depth+1); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case map[string]any:
		if x == nil {
			return append(b, "null"...), true
		}
		if depth >= MaxDepth {
			return b, false
		}
		names := make([]string, 0, len(x))
		for k := range x {
			if !utf8.ValidString(k) {
				return b, false
			}
			names = append(names, k)
		}
		slices.Sort(names)
		b = append(b, '{')
		for i, k := range names {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			if b, ok = appendCanonicalValue(b, x[k], depth+1); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	}
	return b, false
}

// MaxDepth bounds how deeply objects and arrays may nest in canonical JSON
// (Firestore itself allows 20 levels of maps and arrays).
const MaxDepth = 128

// parser is a recursive-descent JSON parser (RFC 8259 grammar) that writes
// the canonical form to out as it goes. Parsers are pooled: members and
// scratch are working space that nested objects share.
type parser struct {
	in      []byte
	pos     int
	out     []byte
	members []member // the members of every object being parsed, innermost last
	scratch []byte   // an object's values while they are reordered
}

// member is one object member: its key (unescaped) and where its canonical
// value is in out.
type member struct {
	key        []byte
	start, end int
}

// parserPool keeps parsers' buffers between calls.
var parserPool = sync.Pool{New: func() any { return new(parser) }}

// maxPooledBuffer bounds the buffers a pooled parser keeps, so one huge
// payload does not pin its memory.
const maxPooledBuffer = 64 << 10

func getParser(in []byte) *parser {
	p := parserPool.Get().(*parser)
	p.in, p.pos = in, 0
	p.out, p.members, p.scratch = p.out[:0], p.members[:0], p.scratch[:0]
	return p
}

func putParser(p *parser) {
	if cap(p.out) > maxPooledBuffer || cap(p.scratch) > maxPooledBuffer {
		return
	}
	p.in = nil
	clear(p.members[:cap(p.members)]) // drop references to escaped keys
	parserPool.Put(p)
}

func (p *parser) ws() {
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *parser) value(depth int) error {
	if p.pos >= len(p.in) {
		return p.errorf("unexpected end of input")
	}
	switch c := p.in[p.pos]; {
	case c == '{' || c == '[':
		if depth >= MaxDepth {
			return p.errorf("nested deeper than %d levels", MaxDepth)
		}
		if c == '{' {
			return p.object(depth + 1)
		}
		return p.array(depth + 1)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return err
		}
		p.out = appendString(p.out, s)
		return nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if bytes.HasPrefix(p.in[p.pos:], []byte(lit)) {
				p.pos += len(lit)
				p.out = append(p.out, lit...)
				return nil
			}
		}
		return p.errorf("unexpected character %q", c)
	}
}

func (p *parser) array(depth int) error {
	p.pos++ // '['
	p.out = append(p.out, '[')
	p.ws()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		p.out = append(p.out, ']')
		return nil
	}
	for {
		p.ws()
		if err := p.value(depth); err != nil {
			return err
		}
		p.ws()
		if p.pos >= len(p.in) {
			return p.errorf("unterminated array")
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
			p.out = append(p.out, ',')
		case ']':
			p.pos++
			p.out = append(p.out, ']')
			return nil
		default:
			return p.errorf("expected ',' or ']' in array")
		}
	}
}

// object writes each member's canonical value to out as it is parsed, then
// reorders the members by key.
func (p *parser) object(depth int) error {
	p.pos++ // '{'
	p.ws()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		p.out = append(p.out, "{}"...)
		return nil
	}
	base := len(p.out)
	mbase := len(p.members)
	for {
		p.ws()
		if p.pos >= len(p.in) || p.in[p.pos] != '"' {
			return p.errorf("expected a string object key")
		}
		key, err := p.str()
		if err != nil {
			return err
		}
		p.ws()
		if p.pos >= len(p.in) || p.in[p.pos] != ':' {
			return p.errorf("expected ':' after object key")
		}
		p.pos++
		p.ws()
		start := len(p.out)
		if err := p.value(depth); err != nil {
			return err
		}
		p.members = append(p.members, member{key, start, len(p.out)})
		p.ws()
		if p.pos >= len(p.in) {
			return p.errorf("unterminated object")
		}
		if p.in[p.pos] == '}' {
			p.pos++
			break
		}
		if p.in[p.pos] != ',' {
			return p.errorf("expected ',' or '}' in object")
		}
		p.pos++
	}
	members := p.members[mbase:]
	sortMembers(members)
	for i := 1; i < len(members); i++ {
		if bytes.Equal(members[i].key, members[i-1].key) {
			return fmt.Errorf("duplicate object key %q", members[i].key)
		}
	}
	// Nested objects are reordered already, so scratch is free.
	p.scratch = append(p.scratch[:0], p.out[base:]...)
	p.out = append(p.out[:base], '{')
	for i, m := range members {
		if i > 0 {
			p.out = append(p.out, ',')
		}
		p.out = appendString(p.out, m.key)
		p.out = append(p.out, ':')
		p.out = append(p.out, p.scratch[m.start-base:m.end-base]...)
	}
	p.out = append(p.out, '}')
	p.members = p.members[:mbase]
	return nil
}

// sortMembers sorts members by key: by insertion for the few members of a
// typical object (no comparison function to call), else slices.SortFunc.
func sortMembers(members []member) {
	if len(members) > 12 {
		slices.SortFunc(members, func(a, b member) int { return bytes.Compare(a.key, b.key) })
		return
	}
	for i := 1; i < len(members); i++ {
		for j := i; j > 0 && bytes.Compare(members[j].key, members[j-1].key) < 0; j-- {
			members[j], members[j-1] = members[j-1], members[j]
		}
	}
}

// str parses a string literal and returns its value, decoding escapes as
// encoding/json does (an unpaired surrogate becomes U+FFFD). A string
// without escapes is returned as a slice of the input: do not modify it.
func (p *parser) str() ([]byte, error) {
	p.pos++ // opening quote
	start := p.pos
	in, i := p.in, p.pos
	for ; i < len(in); i++ {
		c := in[i]
		if c == '"' {
			p.pos = i + 1
			return in[start:i:i], nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
	}
	p.pos = i
	buf := append([]byte(nil), p.in[start:p.pos]...)
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		switch {
		case c == '"':
			p.pos++
			return buf, nil
		case c < 0x20:
			return nil, p.errorf("control character in string")
		case c != '\\':
			buf = append(buf, c)
			p.pos++
			continue
		}
		if p.pos+1 >= len(p.in) {
			return nil, p.errorf("unterminated escape")
		}
		e := p.in[p.pos+1]
		p.pos += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return nil, p.errorf("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				if p.pos+1 < len(p.in) && p.in[p.pos] == '\\' && p.in[p.pos+1] == 'u' {
					save := p.pos
					p.pos += 2
					if r2, ok := p.hex4(); ok {
						if d := utf16.DecodeRune(r, r2); d != unicode.ReplacementChar {
							buf = utf8.AppendRune(buf, d)
							continue
						}
					}
					p.pos = save
				}
				r = unicode.ReplacementChar
			}
			buf = utf8.AppendRune(buf, r)
		default:
			return nil, p.errorf("bad escape \\%c", e)
		}
	}
	return nil, p.errorf("unterminated string")
}

func (p *parser) hex4() (rune, bool) {
	if p.pos+4 > len(p.in) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.in[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.pos += 4
	return rune(v), true
}

// number checks the JSON number grammar and writes the canonical form.
func (p *parser) number() error {
	start := p.pos
	end, frac, problem := scanNumber(p.in, p.pos)
	p.pos = end
	if problem != "" {
		return p.errorf("%s", problem)
	}
	out, err := appendCanonNumber(p.out, p.in[start:end], frac)
	if err != nil {
		return err
	}
	p.out = out
	return nil
}

// scanNumber scans the JSON number that starts at s[i] and returns where it
// ends (or where it breaks the grammar), whether it has a fraction or an
// exponent, and what breaks the grammar ("" when nothing does).
func scanNumber[T string | []byte](s T, i int) (end int, frac bool, problem string) {
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	if i < len(s) && s[i] == '0' {
		i++
	} else if digits() == 0 {
		return i, false, "bad number"
	}
	if i < len(s) && s[i] == '.' {
		i++
		frac = true
		if digits() == 0 {
			return i, frac, "bad number: no digits after '.'"
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		frac = true
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return i, frac, "bad number: no exponent digits"
		}
	}
	return i, frac, ""
}

// maxPlainInteger is the most characters an integer may have to be copied
// without parsing: any such integer is within float64's range (about
// 1.8e308), which is all canonNumber checks of an integer.
const maxPlainInteger = 300

// appendCanonNumber appends the canonical form of the valid JSON number num
// (frac: it has a fraction or an exponent); see canonNumber.
func appendCanonNumber[T string | []byte](b []byte, num T, frac bool) ([]byte, error) {
	if !frac && len(num) <= maxPlainInteger {
		if string(num) == "-0" {
			return append(b, '0'), nil
		}
		return append(b, num...), nil
	}
	s, err := canonNumber(string(num))
	if err != nil {
		return b, err
	}
	return append(b, s...), nil
}

// canonNumber rejects numbers beyond float64's range, writes integers (no
// fraction, no exponent) exactly, whatever their size, and every other number
// as the shortest float64 form; a number with an integral float64 value below
// 2^53 is written as an integer, so 1.0, 1e0 and 1 are equal.
func canonNumber(s string) (string, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		// Out of float64 range: no JSON reader could use the value.
		return "", fmt.Errorf("number %.40q: %w", s, err)
	}
	if !strings.ContainsAny(s, ".eE") {
		if s == "-0" {
			return "0", nil
		}
		return s, nil
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.FormatInt(int64(f), 10), nil
	}
	return strconv.FormatFloat(f, 'g', -1, 64), nil
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string, escaping only '"', '\\' and
// control characters.
func appendString[T string | []byte](b []byte, s T) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			b = append(b, '\\', '"')
		case c == '\\':
			b = append(b, '\\', '\\')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\f':
			b = append(b, '\\', 'f')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
