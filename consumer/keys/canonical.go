// Package keys builds the identifiers the idempotency engine stores under:
// canonical JSON, payload fingerprints, logical event keys and normalised,
// environment-qualified document ids that are always valid Firestore ids.
package keys

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"
)

// MaxDepth bounds how deeply objects and arrays may nest in canonical JSON
// (Firestore itself allows 20 levels of maps and arrays).
const MaxDepth = 128

// CanonicalJSON returns the RFC 8785 (JSON Canonicalization Scheme) form of
// the JSON text data: object keys sorted by their UTF-16 code units, no
// insignificant whitespace, strings escaped minimally and numbers written as
// ECMAScript writes an IEEE 754 double. Any language with an RFC 8785
// library computes the same bytes. Duplicate object keys, invalid UTF-8 and
// nesting deeper than MaxDepth are errors: the first two would make two
// different payloads hash alike.
func CanonicalJSON(data []byte) ([]byte, error) {
	var out bytes.Buffer
	if _, err := writeCanonical(&out, data); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// writeCanonical writes the RFC 8785 form of data to w, as jsontext writes
// it (Value.Canonicalize's options, data left as it is), and reports what
// scanning it found.
func writeCanonical(w io.Writer, data []byte) (canonicalScan, error) {
	sink := &canonicalSink{w: w, scan: canonicalScan{exp: -1}}
	enc := jsontext.NewEncoder(sink, jsontext.CanonicalizeRawInts(true), jsontext.CanonicalizeRawFloats(true), jsontext.ReorderRawObjects(true))
	if err := enc.WriteValue(data); err != nil {
		return sink.scan, fmt.Errorf("canonical JSON: %w", err)
	}
	sink.scan.endNumber()
	if sink.scan.atLimit {
		// jsontext writes a number beyond float64's range as the largest float64, so
		// two different ones would hash alike: refuse them, as encoding/json does.
		if err := json.Unmarshal(data, new(any)); err != nil {
			return sink.scan, fmt.Errorf("canonical JSON: %w", err)
		}
	}
	if sink.scan.depth > MaxDepth {
		return sink.scan, fmt.Errorf("canonical JSON: nested deeper than %d levels (%d)", MaxDepth, sink.scan.depth)
	}
	return sink.scan, nil
}

// canonicalSink passes an Encoder's output on to w without the newline the
// Encoder ends a top-level value with (it holds each write's last byte back
// until the next), scanning what it passes on.
type canonicalSink struct {
	w       io.Writer
	held    []byte // 0 or 1 byte
	scan    canonicalScan
	heldBuf [1]byte
}

func (s *canonicalSink) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if len(s.held) > 0 {
		if err := s.pass(s.held); err != nil {
			return 0, err
		}
	}
	if err := s.pass(p[:len(p)-1]); err != nil {
		return 0, err
	}
	s.heldBuf[0] = p[len(p)-1]
	s.held = s.heldBuf[:]
	return len(p), nil
}

func (s *canonicalSink) pass(p []byte) error {
	s.scan.read(p)
	_, err := s.w.Write(p)
	return err
}

// canonicalScan reads canonical JSON, in pieces, for how deeply it nests and
// whether its v1 form (canonicalV1) may differ from it: only a number with a
// fraction or an exponent, an integer of 16 or more digits (2^53 has 16) or
// a character beyond U+FFFF (keys sort by code point in v1, by UTF-16 code
// unit here) can make them differ.
type canonicalScan struct {
	depth, level, digits int
	inString, escaped    bool
	mayDiffer            bool
	// exp is the exponent of the number being read (-1: none, or a negative one);
	// atLimit: some number has an exponent of 308 or more, where the encoder writes
	// a number beyond float64's range as the largest float64.
	exp     int
	atLimit bool
}

func (c *canonicalScan) read(p []byte) {
	for _, ch := range p {
		switch {
		case c.inString:
			switch {
			case c.escaped:
				c.escaped = false
			case ch == '\\':
				c.escaped = true
			case ch == '"':
				c.inString = false
			case ch >= 0xF0:
				c.mayDiffer = true
			}
		case ch == '"':
			c.inString = true
		case ch == '[' || ch == '{':
			c.level++
			c.depth = max(c.depth, c.level)
		case ch == ']' || ch == '}':
			c.level--
		case ch == '.':
			c.mayDiffer = true
		case ch == 'e' && c.digits > 0: // not the e of true or false
			c.mayDiffer = true
			c.exp = 0
			continue
		case ch == '-' && c.exp == 0:
			c.exp = -1
			continue
		case ch == '+':
			continue
		case ch >= '0' && ch <= '9':
			if c.exp >= 0 && c.exp < 1000 {
				c.exp = c.exp*10 + int(ch-'0')
			}
			if c.digits++; c.digits >= 16 {
				c.mayDiffer = true
			}
			continue
		}
		c.endNumber()
	}
}

// endNumber ends the number being read, if any.
func (c *canonicalScan) endNumber() {
	if c.exp >= 308 {
		c.atLimit = true
	}
	c.digits, c.exp = 0, -1
}
