// Package keys builds the identifiers the idempotency engine stores under:
// canonical JSON, payload fingerprints, logical event keys and normalised,
// environment-qualified document ids that are always valid Firestore ids.
package keys

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
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
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var b bytes.Buffer
	if err := canonValue(dec, &b, 0); err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("canonical JSON: trailing data after the first value")
	}
	return b.Bytes(), nil
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

func canonValue(dec *json.Decoder, b *bytes.Buffer, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if _, ok := tok.(json.Delim); ok && depth >= MaxDepth {
		return fmt.Errorf("nested deeper than %d levels", MaxDepth)
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return canonObject(dec, b, depth+1)
		case '[':
			b.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					b.WriteByte(',')
				}
				if err := canonValue(dec, b, depth+1); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return err
			}
			b.WriteByte(']')
			return nil
		}
		return fmt.Errorf("unexpected %v", t)
	case string:
		writeString(b, t)
	case json.Number:
		s, err := canonNumber(t.String())
		if err != nil {
			return err
		}
		b.WriteString(s)
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case nil:
		b.WriteString("null")
	}
	return nil
}

func canonObject(dec *json.Decoder, b *bytes.Buffer, depth int) error {
	type member struct {
		key string
		val []byte
	}
	var members []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		k, ok := tok.(string)
		if !ok {
			return fmt.Errorf("object key %v is not a string", tok)
		}
		if seen[k] {
			return fmt.Errorf("duplicate object key %q", k)
		}
		seen[k] = true
		var vb bytes.Buffer
		if err := canonValue(dec, &vb, depth); err != nil {
			return err
		}
		members = append(members, member{k, vb.Bytes()})
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	sort.Slice(members, func(i, j int) bool { return members[i].key < members[j].key })
	b.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(b, m.key)
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return nil
}

// canonNumber rejects numbers beyond float64's range, writes integers (no
// fraction, no exponent) exactly, whatever their size, and every other number as the shortest float64 form; a number
// with an integral float64 value below 2^53 is written as an integer, so 1.0,
// 1e0 and 1 are equal.
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

func writeString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			b.WriteString(`\"`)
		case c == '\\':
			b.WriteString(`\\`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\b':
			b.WriteString(`\b`)
		case c == '\f':
			b.WriteString(`\f`)
		case c < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0xf])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}
