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
	"sort"
	"strconv"
	"strings"
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
	if !utf8.Valid(data) {
		return nil, errors.New("canonical JSON: input is not valid UTF-8")
	}
	p := parser{in: data, out: make([]byte, 0, len(data))}
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

// CanonicalValue returns the canonical JSON of a Go value (encoded with
// encoding/json first).
func CanonicalValue(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	return CanonicalJSON(data)
}

// MaxDepth bounds how deeply objects and arrays may nest in canonical JSON
// (Firestore itself allows 20 levels of maps and arrays).
const MaxDepth = 128

// parser is a recursive-descent JSON parser (RFC 8259 grammar) that writes
// the canonical form to out as it goes.
type parser struct {
	in  []byte
	pos int
	out []byte
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
		for _, lit := range []string{"true", "false", "null"} {
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
	type member struct {
		key        string
		start, end int
	}
	p.pos++ // '{'
	p.ws()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		p.out = append(p.out, "{}"...)
		return nil
	}
	base := len(p.out)
	var members []member
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
		members = append(members, member{key, start, len(p.out)})
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
	sort.Slice(members, func(i, j int) bool { return members[i].key < members[j].key })
	for i := 1; i < len(members); i++ {
		if members[i].key == members[i-1].key {
			return fmt.Errorf("duplicate object key %q", members[i].key)
		}
	}
	values := append([]byte(nil), p.out[base:]...)
	p.out = append(p.out[:base], '{')
	for i, m := range members {
		if i > 0 {
			p.out = append(p.out, ',')
		}
		p.out = appendString(p.out, m.key)
		p.out = append(p.out, ':')
		p.out = append(p.out, values[m.start-base:m.end-base]...)
	}
	p.out = append(p.out, '}')
	return nil
}

// str parses a string literal and returns its value, decoding escapes as
// encoding/json does (an unpaired surrogate becomes U+FFFD).
func (p *parser) str() (string, error) {
	p.pos++ // opening quote
	start := p.pos
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		if c == '"' {
			s := string(p.in[start:p.pos])
			p.pos++
			return s, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		p.pos++
	}
	buf := append([]byte(nil), p.in[start:p.pos]...)
	for p.pos < len(p.in) {
		c := p.in[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(buf), nil
		case c < 0x20:
			return "", p.errorf("control character in string")
		case c != '\\':
			buf = append(buf, c)
			p.pos++
			continue
		}
		if p.pos+1 >= len(p.in) {
			return "", p.errorf("unterminated escape")
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
				return "", p.errorf("bad \\u escape")
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
			return "", p.errorf("bad escape \\%c", e)
		}
	}
	return "", p.errorf("unterminated string")
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
	if p.in[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.in) && p.in[p.pos] >= '0' && p.in[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.pos < len(p.in) && p.in[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return p.errorf("bad number")
	}
	if p.pos < len(p.in) && p.in[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return p.errorf("bad number: no digits after '.'")
		}
	}
	if p.pos < len(p.in) && (p.in[p.pos] == 'e' || p.in[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.in) && (p.in[p.pos] == '+' || p.in[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return p.errorf("bad number: no exponent digits")
		}
	}
	s, err := canonNumber(string(p.in[start:p.pos]))
	if err != nil {
		return err
	}
	p.out = append(p.out, s...)
	return nil
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
func appendString(b []byte, s string) []byte {
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
