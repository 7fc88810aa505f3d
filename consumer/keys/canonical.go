// Package keys builds the identifiers the idempotency engine stores under:
// canonical JSON, payload fingerprints, logical event keys and normalised,
// environment-qualified document ids that are always valid Firestore ids.
package keys

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

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
	out, _, err := canonical(nil, data)
	return out, err
}

// canonical appends the RFC 8785 form of data to dst, as jsontext writes
// it (Value.Canonicalize's options; data is left as it is), and returns it
// with what scanning it found. A payload of up to smallCanonicalBytes (most
// events) is formatted by jsontext.AppendFormat, whose encoder and scratch
// are the library's own, kept between calls, and appended to dst: given
// room there (Fingerprint's buffer on its stack) it allocates nothing.
// A larger one is written by an encoder of its own into one buffer
// allocated once (dst is not used): the encoder appends straight into a
// bytes.Buffer's free space and, at its final flush, grows the buffer
// (copying it) unless a quarter of what it holds is still free, so the
// buffer is sized for that. The form is no longer than data but for
// numbers it rewrites (1e9 is 1000000000), which may grow the buffer once.
// Both ways give the same bytes (FuzzCanonicalJSON).
// Duplicate keys are found by scanning the form: its members are sorted, so
// a duplicate follows its twin (the encoder's own check keeps a copy of
// every key, and the growing slices for it, which took a poison payload of
// megabyte keys to 8 times its size).
func canonical(dst, data []byte) ([]byte, canonicalScan, error) {
	var out []byte
	var err error
	if len(data) <= smallCanonicalBytes {
		out, err = canonicalSmall(dst, data)
	} else {
		out, err = canonicalLarge(data)
	}
	if err != nil {
		return nil, canonicalScan{}, fmt.Errorf("canonical JSON: %w", err)
	}
	scan, err := checkCanonical(out, data, 0)
	if err != nil {
		return nil, scan, fmt.Errorf("canonical JSON: %w", err)
	}
	return out, scan, nil
}

// checkCanonical scans out, the canonical form of data, a value nested in
// depth objects and arrays, for what the encoder lets through: a duplicate
// key, a number beyond float64's range, nesting deeper than MaxDepth.
func checkCanonical(out, data []byte, depth int) (canonicalScan, error) {
	scan := scanCanonical(out)
	if scan.duplicate != "" {
		return scan, duplicateKeyError(scan.duplicate)
	}
	if scan.atLimit {
		// jsontext writes a number beyond float64's range as the largest float64, so
		// two different ones would hash alike: refuse them, as encoding/json does.
		if err := json.Unmarshal(data, new(any)); err != nil {
			return scan, err
		}
	}
	if depth += scan.depth; depth > MaxDepth {
		return scan, fmt.Errorf("nested deeper than %d levels (%d)", MaxDepth, depth)
	}
	return scan, nil
}

// duplicateKeyError is the error of an object with the key quoted twice
// (duplicateText).
func duplicateKeyError(quoted string) error {
	return fmt.Errorf("duplicate object key %s: each key may appear once in an object", quoted)
}

// smallCanonicalBytes is the largest payload canonical formats with
// jsontext.AppendFormat: jsontext keeps the buffers of such small values
// for the next call; a larger payload gets a buffer of its own, sized once
// (AppendFormat's would grow by doubling, to up to twice the form).
// Fingerprint holds neither for a payload past streamChunkBytes: it
// hashes the form as writeCanonical writes it.
const smallCanonicalBytes = 4 << 10

// canonicalSmall appends the canonical form of a small payload to dst.
func canonicalSmall(dst, data []byte) ([]byte, error) {
	out, err := jsontext.AppendFormat(dst, data, jsontext.CanonicalizeRawInts(true), jsontext.CanonicalizeRawFloats(true),
		jsontext.ReorderRawObjects(true), jsontext.AllowDuplicateNames(true))
	if err != nil {
		return nil, err // out is dst and data as it was
	}
	return out, nil
}

// canonicalLarge is canonical's form of a large payload.
func canonicalLarge(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(len(data) + len(data)/4 + 64)
	enc := jsontext.NewEncoder(&buf, jsontext.CanonicalizeRawInts(true), jsontext.CanonicalizeRawFloats(true),
		jsontext.ReorderRawObjects(true), jsontext.AllowDuplicateNames(true))
	if err := enc.WriteValue(data); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil // the encoder ends a top-level value with one
}

// scanCanonical reads the canonical JSON form out.
func scanCanonical(out []byte) canonicalScan {
	c := canonicalScan{exp: -1}
	c.read(out)
	c.endNumber()
	return c
}

// canonicalScan reads canonical JSON for how deeply it nests, whether an
// object has a key twice, and whether its v1 form (canonicalV1) may differ from it: only a number with a
// fraction or an exponent, an integer of 16 or more digits (2^53 has 16) or
// a character beyond U+FFFF (keys sort by code point in v1, by UTF-16 code
// unit here) can make them differ.
type canonicalScan struct {
	depth, level, digits int
	// key is where the key being read started (-1: the string being read
	// is not a key); duplicate is the first key met twice in one object,
	// quoted and cut to duplicateShown bytes.
	key               int
	duplicate         string
	inString, escaped bool
	mayDiffer         bool
	// exp is the exponent of the number being read (-1: none, or a negative one);
	// atLimit: some number has an exponent of 308 or more, where the encoder writes
	// a number beyond float64's range as the largest float64.
	exp     int
	atLimit bool
}

// keySpan is where an object's last key is in the form (start -1: none
// yet), and whether the next string in it is a key.
type keySpan struct {
	start, end int
	expectKey  bool
}

// duplicateShown is how much of a duplicate key an error quotes.
const duplicateShown = 64

// scanStackDepth is the nesting read's stacks hold on the stack before
// they grow.
const scanStackDepth = 16

// read scans the whole form p. objects holds, for each object being read
// (innermost last), where its last key started and ended in the form;
// levels has an entry for every open object or array, true for an object.
// They are read's own, so they start on its stack.
func (c *canonicalScan) read(p []byte) {
	var objectsOnStack [scanStackDepth]keySpan
	var levelsOnStack [scanStackDepth]bool
	objects, levels := objectsOnStack[:0], levelsOnStack[:0]
	c.key = -1
	for i := 0; i < len(p); i++ {
		ch := p[i]
		switch {
		case c.inString:
			switch {
			case c.escaped:
				c.escaped = false
			case ch == '\\':
				c.escaped = true
			case ch == '"':
				c.inString = false
				if c.key >= 0 {
					c.endKey(p, &objects[len(objects)-1], i+1)
				}
			case ch >= 0xF0:
				c.mayDiffer = true
			default:
				// The bytes up to the next that matters here are skipped
				// at once (no number is being read inside a string).
				for i+1 < len(p) && p[i+1] != '"' && p[i+1] != '\\' && p[i+1] < 0xF0 {
					i++
				}
			}
		case ch == '"':
			c.inString = true
			if n := len(objects); n > 0 && levels[len(levels)-1] && objects[n-1].expectKey {
				objects[n-1].expectKey = false
				c.key = i
			}
		case ch == '{':
			objects = append(objects, keySpan{start: -1, expectKey: true})
			levels = append(levels, true)
			c.open()
		case ch == '[':
			levels = append(levels, false)
			c.open()
		case ch == '}':
			objects, levels = objects[:len(objects)-1], levels[:len(levels)-1]
			c.level--
		case ch == ']':
			levels = levels[:len(levels)-1]
			c.level--
		case ch == ',':
			if n := len(objects); n > 0 && levels[len(levels)-1] {
				objects[n-1].expectKey = true
			}
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

// open enters an object or array.
func (c *canonicalScan) open() {
	c.level++
	c.depth = max(c.depth, c.level)
}

// endKey ends the key being read at end: the members of a canonical object
// are sorted, and canonical strings are equal exactly when their values
// are, so a key equal to the one before it (last, in the same object) is a
// duplicate.
func (c *canonicalScan) endKey(p []byte, last *keySpan, end int) {
	if last.start >= 0 && c.duplicate == "" && bytes.Equal(p[last.start:last.end], p[c.key:end]) {
		c.duplicate = duplicateText(p[c.key:end])
	}
	last.start, last.end = c.key, end
	c.key = -1
}

// duplicateText is the quoted canonical key an error names, cut to
// duplicateShown bytes (at a character) and marked "…" when longer.
func duplicateText(quoted []byte) string {
	if len(quoted) <= duplicateShown {
		return string(quoted)
	}
	cut := duplicateShown
	for !utf8.RuneStart(quoted[cut]) {
		cut--
	}
	return string(quoted[:cut]) + "…"
}

// endNumber ends the number being read, if any.
func (c *canonicalScan) endNumber() {
	if c.exp >= 308 {
		c.atLimit = true
	}
	c.digits, c.exp = 0, -1
}
