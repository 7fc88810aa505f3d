// Package keys builds the identifiers the idempotency engine stores under:
// canonical JSON, payload fingerprints, logical event keys and normalised,
// environment-qualified document ids that are always valid Firestore ids.
package keys

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
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
// the canonical form to out as it goes, handing out to sink in pieces when
// there is one, so that hashing a large payload takes little memory.
//
// An object is read twice: once to check it and find where each member's
// value is (skip), then once more member by member in key order, writing
// each value. Nothing is buffered for the reordering, so the memory used
// is bounded by the number of members, not by the size of the text.
// Parsers are pooled.
type parser struct {
	in   []byte
	pos  int
	out  []byte
	sink io.Writer // nil: out keeps the whole canonical form
	// members are the members of every object being written, innermost
	// last: a key and where its value is in the input.
	members []member
	hash    hash.Hash         // Fingerprint's, kept across uses
	sum     [sha256.Size]byte // the hash's sum
}

// member is one object member: its key (unescaped) and where its value
// is in the input.
type member struct {
	key        []byte
	start, end int
}

// parserPool keeps parsers' buffers between calls.
var parserPool = sync.Pool{New: func() any { return new(parser) }}

// maxPooledBuffer bounds the buffers a pooled parser keeps, so one huge
// payload does not pin its memory; flushAt is the size at which the
// output goes to the sink.
const (
	maxPooledBuffer = 64 << 10
	flushAt         = 32 << 10
)

func getParser(in []byte) *parser {
	p := parserPool.Get().(*parser)
	p.in, p.pos, p.sink = in, 0, nil
	p.out, p.members = p.out[:0], p.members[:0]
	return p
}

func putParser(p *parser) {
	if cap(p.out) > maxPooledBuffer || cap(p.members) > maxPooledBuffer/32 {
		return
	}
	p.in, p.sink = nil, nil
	clear(p.members[:cap(p.members)]) // drop references to escaped keys
	parserPool.Put(p)
}

// canonical parses p.in and writes its canonical form: to p.sink when
// set (what is returned is then nil), else to the returned slice, which
// aliases p's buffer: use it before the parser goes back to the pool.
func (p *parser) canonical() ([]byte, error) {
	if !utf8.Valid(p.in) {
		return nil, errors.New("canonical JSON: input is not valid UTF-8")
	}
	p.ws()
	if err := p.value(0, true); err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	p.ws()
	if p.pos != len(p.in) {
		return nil, fmt.Errorf("canonical JSON: trailing data at offset %d", p.pos)
	}
	if p.sink != nil {
		_, err := p.sink.Write(p.out)
		p.out = p.out[:0]
		return nil, err
	}
	return p.out, nil
}

// flush hands the output to the sink once there is enough of it.
func (p *parser) flush() {
	if p.sink != nil && len(p.out) >= flushAt {
		_, _ = p.sink.Write(p.out) // hashes do not fail
		p.out = p.out[:0]
	}
}

// write appends b to the output, flushing as it goes.
func (p *parser) write(b []byte) {
	for len(b) > 0 {
		n := min(len(b), flushAt)
		p.out = append(p.out, b[:n]...)
		b = b[n:]
		p.flush()
	}
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

// value reads the value at p.pos and, with write, writes its canonical
// form; without, it only checks it (an object's first reading).
func (p *parser) value(depth int, write bool) error {
	if p.pos >= len(p.in) {
		return p.errorf("unexpected end of input")
	}
	switch c := p.in[p.pos]; {
	case c == '{' || c == '[':
		if depth >= MaxDepth {
			return p.errorf("nested deeper than %d levels", MaxDepth)
		}
		switch {
		case write && c == '{':
			return p.object(depth + 1)
		case write:
			return p.array(depth + 1)
		case c == '{':
			return p.objectMembers(func([]byte, int) error { return p.value(depth+1, false) })
		}
		return p.arrayElements(func(int) error { return p.value(depth+1, false) })
	case c == '"' && write:
		return p.stringValue()
	case c == '"':
		return p.skipString()
	case c == '-' || (c >= '0' && c <= '9'):
		if write {
			return p.number()
		}
		end, _, problem := scanNumber(p.in, p.pos)
		p.pos = end
		if problem != "" {
			return p.errorf("%s", problem)
		}
		return nil
	default:
		lit, err := p.literal()
		if write {
			p.out = append(p.out, lit...)
		}
		return err
	}
}

// skipString moves past the string literal at p.pos, checking it.
func (p *parser) skipString() error {
	p.pos++ // opening quote
	for p.pos < len(p.in) {
		switch c := p.in[p.pos]; {
		case c == '"':
			p.pos++
			return nil
		case c < 0x20:
			return p.errorf("control character in string")
		case c == '\\':
			if _, err := p.escape(); err != nil {
				return err
			}
		default:
			p.pos++
		}
	}
	return p.errorf("unterminated string")
}

// literal reads true, false or null.
func (p *parser) literal() (string, error) {
	for _, lit := range [...]string{"true", "false", "null"} {
		if bytes.HasPrefix(p.in[p.pos:], []byte(lit)) {
			p.pos += len(lit)
			return lit, nil
		}
	}
	return "", p.errorf("unexpected character %q", p.in[p.pos])
}

func (p *parser) array(depth int) error {
	p.out = append(p.out, '[')
	err := p.arrayElements(func(i int) error {
		if i > 0 {
			p.out = append(p.out, ',')
		}
		err := p.value(depth, true)
		p.flush()
		return err
	})
	p.out = append(p.out, ']')
	return err
}

// arrayElements reads the array at p.pos (its '['), calling elem for each
// element, which elem must read.
func (p *parser) arrayElements(elem func(i int) error) error {
	p.pos++ // '['
	p.ws()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		return nil
	}
	for i := 0; ; i++ {
		p.ws()
		if err := elem(i); err != nil {
			return err
		}
		p.ws()
		if p.pos >= len(p.in) {
			return p.errorf("unterminated array")
		}
		switch p.in[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return nil
		default:
			return p.errorf("expected ',' or ']' in array")
		}
	}
}

// object checks the object and finds its members (skipping their
// values), then writes them in key order, reading each value again.
func (p *parser) object(depth int) error {
	mbase := len(p.members)
	defer func() { p.members = p.members[:mbase] }()
	if err := p.objectMembers(func(key []byte, start int) error {
		if err := p.value(depth, false); err != nil {
			return err
		}
		p.members = append(p.members, member{key, start, p.pos})
		return nil
	}); err != nil {
		return err
	}
	end := p.pos
	members := p.members[mbase:]
	sortMembers(members)
	for i := 1; i < len(members); i++ {
		if bytes.Equal(members[i].key, members[i-1].key) {
			return fmt.Errorf("duplicate object key %q", members[i].key)
		}
	}
	p.out = append(p.out, '{')
	for i, m := range members {
		if i > 0 {
			p.out = append(p.out, ',')
		}
		p.out = appendString(p.out, m.key)
		p.out = append(p.out, ':')
		p.pos = m.start
		if err := p.value(depth, true); err != nil {
			return err
		}
		p.flush()
	}
	p.out = append(p.out, '}')
	p.pos = end
	return nil
}

// objectMembers reads the object at p.pos (its '{'), calling member with
// each key and the position of its value, which member must read.
func (p *parser) objectMembers(member func(key []byte, start int) error) error {
	p.pos++ // '{'
	p.ws()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		return nil
	}
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
		if err := member(key, p.pos); err != nil {
			return err
		}
		p.ws()
		if p.pos >= len(p.in) {
			return p.errorf("unterminated object")
		}
		if p.in[p.pos] == '}' {
			p.pos++
			return nil
		}
		if p.in[p.pos] != ',' {
			return p.errorf("expected ',' or '}' in object")
		}
		p.pos++
	}
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
		r, err := p.escape()
		if err != nil {
			return nil, err
		}
		buf = utf8.AppendRune(buf, r)
	}
	return nil, p.errorf("unterminated string")
}

// stringValue writes the canonical form of the string literal at p.pos
// as it reads it: runs of bytes that need no escape are copied, escapes
// decoded (as str does) and written again in canonical form.
func (p *parser) stringValue() error {
	p.pos++ // opening quote
	p.out = append(p.out, '"')
	for {
		start := p.pos
		for p.pos < len(p.in) {
			if c := p.in[p.pos]; c == '"' || c == '\\' || c < 0x20 {
				break
			}
			p.pos++
		}
		p.write(p.in[start:p.pos])
		if p.pos >= len(p.in) {
			return p.errorf("unterminated string")
		}
		switch c := p.in[p.pos]; {
		case c == '"':
			p.pos++
			p.out = append(p.out, '"')
			return nil
		case c < 0x20:
			return p.errorf("control character in string")
		}
		r, err := p.escape()
		if err != nil {
			return err
		}
		if r < utf8.RuneSelf {
			p.out = appendEscaped(p.out, byte(r))
		} else {
			p.out = utf8.AppendRune(p.out, r)
		}
	}
}

// escape reads the escape sequence at p.pos (its backslash) and returns
// the character it stands for. A \u escape of an unpaired surrogate is
// U+FFFD, as encoding/json reads it.
func (p *parser) escape() (rune, error) {
	if p.pos+1 >= len(p.in) {
		return 0, p.errorf("unterminated escape")
	}
	e := p.in[p.pos+1]
	p.pos += 2
	switch e {
	case '"', '\\', '/':
		return rune(e), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
		r, ok := p.hex4()
		if !ok {
			return 0, p.errorf("bad \\u escape")
		}
		if !utf16.IsSurrogate(r) {
			return r, nil
		}
		if p.pos+1 < len(p.in) && p.in[p.pos] == '\\' && p.in[p.pos+1] == 'u' {
			save := p.pos
			p.pos += 2
			if r2, ok := p.hex4(); ok {
				if d := utf16.DecodeRune(r, r2); d != unicode.ReplacementChar {
					return d, nil
				}
			}
			p.pos = save
		}
		return unicode.ReplacementChar, nil
	}
	return 0, p.errorf("bad escape \\%c", e)
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
		b = appendEscaped(b, s[i])
	}
	return append(b, '"')
}

// appendEscaped appends byte c of a string as canonical JSON writes it:
// '"', '\\' and control characters escaped (\b, \f, \n, \r, \t or
// \u00XX), every other byte as it is.
func appendEscaped(b []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(b, '\\', c)
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	}
	if c < 0x20 {
		return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
	}
	return append(b, c)
}
