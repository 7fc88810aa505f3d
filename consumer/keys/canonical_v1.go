package keys

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The canonical JSON eventpipe wrote before RFC 8785 ("v1"), frozen: object
// keys sorted by their UTF-8 bytes, strings escaped minimally, integers kept
// exactly as written and other numbers in Go's shortest 'g' form. It stays
// for two things only:
//   - identity keys (LogicalKey): they are document ids, so another form
//     would re-key every stored record; and RFC 8785 rounds integers above
//     2^53, which would merge identities that differ there;
//   - recognising fingerprints written before the upgrade, for the payloads
//     whose v1 form is not their RFC 8785 form (see Fingerprint).

// canonicalV1 is the v1 canonical form of the JSON text data, which
// CanonicalJSON has accepted (valid UTF-8, no duplicate keys).
func canonicalV1(data []byte) ([]byte, error) {
	return appendCanonicalV1(nil, data, 0)
}

// appendCanonicalV1 appends to dst the v1 form of data, a value nested in
// depth objects and arrays.
func appendCanonicalV1(dst, data []byte, depth int) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("v1 canonical JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("v1 canonical JSON: text after the value")
	}
	out, ok := appendCanonicalValue(dst, v, depth)
	if !ok {
		return nil, fmt.Errorf("v1 canonical JSON: a number beyond float64's range or nesting deeper than %d levels", MaxDepth)
	}
	return out, nil
}

// identityJSON is the v1 canonical JSON of a Go value: the values
// encoding/json decodes to (nil, bool, string, json.Number, int64, int,
// []any, map[string]any) are written directly; anything else is encoded
// with encoding/json first.
func identityJSON(v any) ([]byte, error) {
	if out, ok := appendCanonicalValue(nil, v, 0); ok {
		return out, nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	if _, err := CanonicalJSON(data); err != nil { // duplicate keys, invalid UTF-8, depth
		return nil, err
	}
	return canonicalV1(data)
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
		if !validNumber(string(x)) {
			return b, false
		}
		n, err := canonNumber(string(x))
		return append(b, n...), err == nil
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

// validNumber reports whether s is a JSON number (RFC 8259 grammar).
func validNumber(s string) bool {
	i := 0
	digits := func() int {
		n := 0
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
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
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
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
// control characters: the runs between them are appended whole.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	run := 0 // where the run of bytes written as they are starts
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			b = appendEscaped(append(b, s[run:i]...), c)
			run = i + 1
		}
	}
	b = append(b, s[run:]...)
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
