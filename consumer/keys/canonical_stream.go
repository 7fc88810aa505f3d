package keys

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"slices"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// streamChunkBytes is the largest value writeCanonical formats whole (with
// canonical, in a scratch buffer it reuses); a larger object, array or
// string is written piece by piece.
const streamChunkBytes = 64 << 10

// canonicalWriter writes the RFC 8785 form (or the v1 form) of a JSON value
// to w without holding it: Fingerprint hashes a large payload through it,
// so the memory it takes is its scratch buffer and one span per member of
// the objects being written, not the form (1.25 times the payload) and
// jsontext's sorted copy of an object. It writes the bytes the form's whole
// formatter would return: an object's members in the order of their names
// (RFC 8785: by UTF-16 code units; v1: by UTF-8 bytes), each value that fits
// chunk formatted whole, and a longer string cut into pieces at character
// boundaries, which format as the string does because both forms escape
// each character on its own (FuzzCanonicalJSON and
// TestCanonicalWriterMatchesCanonical hold it to the same bytes and errors).
type canonicalWriter struct {
	w io.Writer
	// v1 writes the v1 form (canonicalV1) instead of RFC 8785's.
	v1 bool
	// chunk is streamChunkBytes (tests lower it to reach every path).
	chunk   int
	scratch []byte
	// piece frames one piece of a long string for the formatter.
	piece []byte
	// scan gathers what canonical's scans of the pieces found that
	// Fingerprint reads: whether the v1 form may differ.
	scan canonicalScan
	err  error
}

// writeCanonical writes the canonical form of the JSON text data to w,
// value by value, and returns what scanning it found. It refuses what
// canonical refuses (invalid JSON or UTF-8, text after the value, duplicate
// keys, nesting beyond MaxDepth, numbers beyond float64's range), and then
// has written part of the form at most.
func writeCanonical(w io.Writer, data []byte, chunk int) (canonicalScan, error) {
	return writeForm(&canonicalWriter{w: w, chunk: chunk}, data)
}

// writeCanonicalV1 writes the v1 form of data, which writeCanonical has
// accepted, to w: the bytes canonicalV1 returns, or its refusal.
func writeCanonicalV1(w io.Writer, data []byte, chunk int) error {
	_, err := writeForm(&canonicalWriter{w: w, v1: true, chunk: chunk}, data)
	return err
}

// writeForm checks data and writes it with c.
func writeForm(c *canonicalWriter, data []byte) (canonicalScan, error) {
	// One pass checks the whole text first (syntax, UTF-8, one value), so
	// the spans below are valid JSON; duplicate names are found in order.
	if err := validJSON(data); err != nil {
		return canonicalScan{}, fmt.Errorf("canonical JSON: %w", err)
	}
	c.value(data, 0)
	return c.scan, c.err
}

// validJSON reports why data is not one valid JSON value (RFC 8259, valid
// UTF-8; duplicate names are left to the form's check), without a copy of
// it: a decoder reads a bytes.Buffer in place.
func validJSON(data []byte) error {
	d := jsontext.NewDecoder(bytes.NewBuffer(data), jsontext.AllowDuplicateNames(true))
	if err := d.SkipValue(); err != nil {
		return err
	}
	if _, err := d.ReadToken(); err != io.EOF {
		return fmt.Errorf("text after the top-level value (%v)", err)
	}
	return nil
}

// write writes p to w, keeping the first error.
func (c *canonicalWriter) write(p []byte) {
	if c.err == nil {
		_, c.err = c.w.Write(p)
	}
}

// fail records err (the first one wins) and reports false.
func (c *canonicalWriter) fail(err error) bool {
	if c.err == nil {
		c.err = err
	}
	return false
}

// value writes the valid JSON value v, which is nested in depth objects
// and arrays, and reports whether it could.
func (c *canonicalWriter) value(v []byte, depth int) bool {
	v = bytes.TrimLeft(v, " \t\r\n")
	if len(v) > c.chunk {
		switch v[0] {
		case '{', '[':
			return c.container(v, depth+1)
		case '"':
			return c.str(v)
		}
	}
	return c.whole(v, depth)
}

// whole writes v, nested in depth objects and arrays, formatted whole:
// by canonicalSmall and checked as canonical checks, or in the v1 form.
func (c *canonicalWriter) whole(v []byte, depth int) bool {
	var out []byte
	var err error
	if c.v1 {
		out, err = appendCanonicalV1(c.scratch[:0], v, depth)
	} else if out, err = canonicalSmall(c.scratch[:0], v); err == nil {
		var scan canonicalScan
		scan, err = checkCanonical(out, v, depth)
		c.scan.mayDiffer = c.scan.mayDiffer || scan.mayDiffer
	}
	if err != nil {
		return c.fail(fmt.Errorf("canonical JSON: %w", err))
	}
	c.scratch = out[:0]
	c.write(out)
	return c.err == nil
}

// member is an object member: its name as written, the name's value (for
// ordering; the text between the quotes when it has no escape) and its
// value as written.
type member struct {
	raw, name, value []byte
}

// container writes an object or array at nesting level depth: an array's
// elements in order, an object's members in the order of their names.
func (c *canonicalWriter) container(v []byte, depth int) bool {
	if depth > MaxDepth {
		return c.fail(fmt.Errorf("canonical JSON: nested deeper than %d levels (%d)", MaxDepth, depth))
	}
	d := jsontext.NewDecoder(bytes.NewBuffer(v), jsontext.AllowDuplicateNames(true))
	open, err := d.ReadToken()
	if err != nil {
		return c.fail(fmt.Errorf("canonical JSON: %w", err))
	}
	// span is the next value of d, read whole; without a copy: the decoder
	// reads a bytes.Buffer in place, and the span is cut from v by offset.
	span := func() ([]byte, bool) {
		start := d.InputOffset()
		if err := d.SkipValue(); err != nil {
			return nil, c.fail(fmt.Errorf("canonical JSON: %w", err))
		}
		return bytes.TrimLeft(v[start:d.InputOffset()], ",: \t\r\n"), true
	}
	if open.Kind() == '[' {
		c.write([]byte{'['})
		for i := 0; d.PeekKind() != ']'; i++ {
			e, ok := span()
			if !ok {
				return false
			}
			if i > 0 {
				c.write([]byte{','})
			}
			if !c.value(e, depth) {
				return false
			}
		}
		c.write([]byte{']'})
		return c.err == nil
	}
	var members []member
	for d.PeekKind() != '}' {
		raw, ok := span()
		if !ok {
			return false
		}
		value, ok := span()
		if !ok {
			return false
		}
		name := raw[1 : len(raw)-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			if name, err = jsontext.AppendUnquote(nil, raw); err != nil {
				return c.fail(fmt.Errorf("canonical JSON: %w", err))
			}
		}
		members = append(members, member{raw: raw, name: name, value: value})
	}
	order := compareUTF16
	if c.v1 {
		order = bytes.Compare // v1 sorts names by their UTF-8 bytes
	}
	slices.SortFunc(members, func(a, b member) int { return order(a.name, b.name) })
	c.write([]byte{'{'})
	for i, m := range members {
		if i > 0 {
			if bytes.Equal(members[i-1].name, m.name) {
				quoted, _ := canonicalSmall(nil, m.raw) // quoted as in the form
				return c.fail(fmt.Errorf("canonical JSON: %w", duplicateKeyError(duplicateText(quoted))))
			}
			c.write([]byte{','})
		}
		if !c.str(m.raw) {
			return false
		}
		c.write([]byte{':'})
		if !c.value(m.value, depth) {
			return false
		}
	}
	c.write([]byte{'}'})
	return c.err == nil
}

// str writes the JSON string raw (quoted, valid). A string without
// escapes is its own canonical form; a longer one with escapes is cut at
// characters that start no escape sequence or start one that does not end
// a surrogate pair, and each piece formatted as a string of its own.
func (c *canonicalWriter) str(raw []byte) bool {
	text := raw[1 : len(raw)-1]
	if bytes.IndexByte(text, '\\') < 0 {
		// Valid UTF-8 without escapes: only a character beyond U+FFFF
		// (a 4-byte sequence) can make the v1 form differ.
		if !c.scan.mayDiffer && slices.ContainsFunc(text, func(b byte) bool { return b >= 0xF0 }) {
			c.scan.mayDiffer = true
		}
		c.write(raw)
		return c.err == nil
	}
	if len(raw) <= c.chunk {
		return c.whole(raw, 0)
	}
	c.write([]byte{'"'})
	for len(text) > 0 {
		n := stringCut(text, c.chunk)
		c.piece = append(append(append(c.piece[:0], '"'), text[:n]...), '"')
		var out []byte
		var err error
		if c.v1 {
			out, err = appendCanonicalV1(c.scratch[:0], c.piece, 0)
		} else {
			out, err = canonicalSmall(c.scratch[:0], c.piece)
		}
		if err != nil {
			return c.fail(fmt.Errorf("canonical JSON: %w", err))
		}
		if !c.scan.mayDiffer && slices.ContainsFunc(out, func(b byte) bool { return b >= 0xF0 }) {
			c.scan.mayDiffer = true
		}
		c.scratch = out[:0]
		c.write(out[1 : len(out)-1])
		text = text[n:]
	}
	c.write([]byte{'"'})
	return c.err == nil
}

// stringCut is where to cut the text of a JSON string (valid, between its
// quotes) into a first piece of about size bytes: before a character
// (never inside a UTF-8 sequence or an escape) and never between the two
// escapes of a surrogate pair, so each piece is a valid string whose form
// is the form of that part. It returns len(text) when text is short.
func stringCut(text []byte, size int) int {
	if len(text) <= size {
		return len(text)
	}
	highBefore := false // the escape just read is a high surrogate's
	for i := 0; i < len(text); {
		if i >= size && !highBefore {
			return i
		}
		if text[i] != '\\' {
			_, n := utf8.DecodeRune(text[i:])
			i, highBefore = i+n, false
			continue
		}
		if text[i+1] != 'u' {
			i, highBefore = i+2, false
			continue
		}
		var r rune
		for _, h := range text[i+2 : i+6] {
			r = r<<4 | rune(hexValue(h))
		}
		i, highBefore = i+6, utf16.IsSurrogate(r) && r < 0xDC00
	}
	return len(text)
}

// hexValue is the value of the hexadecimal digit h.
func hexValue(h byte) byte {
	switch {
	case h >= 'a':
		return h - 'a' + 10
	case h >= 'A':
		return h - 'A' + 10
	}
	return h - '0'
}

// compareUTF16 compares two valid UTF-8 names by their UTF-16 code units,
// the order RFC 8785 sorts object members in (section 3.2.3): as by code
// point, except that a character beyond U+FFFF (a surrogate pair, from
// 0xD800) sorts before U+E000 to U+FFFF.
func compareUTF16(a, b []byte) int {
	for len(a) > 0 && len(b) > 0 {
		ra, na := utf8.DecodeRune(a)
		rb, nb := utf8.DecodeRune(b)
		if ra != rb {
			return cmp.Compare(utf16Unit(ra), utf16Unit(rb))
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// utf16Unit is the first UTF-16 code unit of r with the second folded in
// below it, so units compare as RFC 8785 orders them.
func utf16Unit(r rune) int64 {
	if hi, lo := utf16.EncodeRune(r); hi != utf8.RuneError || lo != utf8.RuneError {
		return int64(hi)<<16 | int64(lo)
	}
	return int64(r) << 16
}
