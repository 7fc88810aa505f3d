package plan

import (
	"encoding/binary"
	"strconv"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"
)

// valueDecoder reads JSON straight into OPA values (ast terms), without the
// map[string]any step: the form the rules are evaluated on. It accepts only strict
// RFC 8259 JSON and gives up (ok == false) on anything the plain decoders might read
// differently — invalid UTF-8, lone surrogates, duplicate object keys, numbers beyond
// float64 — so the caller can decode the document the slow way and report what
// encoding/json reports. Numbers become what OPA makes of the float64 encoding/json
// decodes them to, so values equal ast.InterfaceToValue's of the decoded document.
//
// One decoder serves one goroutine: it interns object keys and short strings (a plan
// repeats "name", "project", "10s", … thousands of times; the terms are shared, as OPA
// shares its own interned terms) and reuses its stacks between values.
type valueDecoder struct {
	data []byte
	pos  int

	keys map[string]*ast.Term
	// recentKeys and recentValues remember the last term made for strings with each
	// hash: most lookups end there, without hashing the whole string for a map.
	recentKeys   [512]internSlot
	recentValues [1024]internSlot
	items        [][2]*ast.Term
	elems        []*ast.Term
	depth        int
	scratch      []byte
	// text, when set, is the start of data as a string: strings without escapes that lie
	// in it are cut from it rather than copied one by one.
	text string
	// slab hands out terms in blocks rather than one allocation each.
	slab []ast.Term
	// shared holds the small objects decoded so far by their text (with and without
	// secret normalisation), see sharedObject.
	shared [2]map[string]*ast.Term
	// resourceKeys are the keys of a resource's input object (see inputKeys).
	resourceKeys [7]*ast.Term
	// renamed caches the pulumi-gcp name of each Terraform attribute key.
	renamed map[*ast.Term]*ast.Term
}

// maxDepth bounds nesting within one decoded value, well under encoding/json's limit
// (10000): a deeper document is left to the general path, whatever the depth it starts at.
const maxDepth = 1000

// maxInternedLen is the longest string value the decoder interns.
const maxInternedLen = 24

func newValueDecoder() *valueDecoder {
	return &valueDecoder{keys: make(map[string]*ast.Term, 64)}
}

// reset points the decoder at a new document range.
func (d *valueDecoder) reset(data []byte) {
	d.text = ""
	d.data = data
	d.pos = 0
	d.depth = 0
	d.items = d.items[:0]
	d.elems = d.elems[:0]
}

// term returns a term for v, from the decoder's slab; a nil decoder allocates it alone.
func (d *valueDecoder) term(v ast.Value) *ast.Term {
	if d == nil {
		return ast.NewTerm(v)
	}
	if len(d.slab) == 0 {
		d.slab = make([]ast.Term, 256)
	}
	t := &d.slab[0]
	d.slab = d.slab[1:]
	t.Value = v
	return t
}

// key returns the interned term of an object key; a nil decoder allocates it.
func (d *valueDecoder) key(k string) *ast.Term {
	if d == nil {
		return ast.StringTerm(k)
	}
	if t, ok := d.keys[k]; ok {
		return t
	}
	t := ast.StringTerm(k)
	d.keys[k] = t
	return t
}

// isSpace reports JSON whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

func (d *valueDecoder) skipSpace() {
	for d.pos < len(d.data) && isSpace(d.data[d.pos]) {
		if d.pos+8 <= len(d.data) && spaces8(d.data, d.pos) {
			d.pos += 8
			continue
		}
		d.pos++
	}
}

// atEnd reports whether only whitespace is left.
func (d *valueDecoder) atEnd() bool {
	d.skipSpace()
	return d.pos == len(d.data)
}

// value decodes the value at the current position. With secrets set, an object holding
// Pulumi's secret signature key becomes the Secret string (normaliseSecrets' rule).
func (d *valueDecoder) value(secrets bool) (*ast.Term, bool) {
	d.skipSpace()
	if d.pos >= len(d.data) {
		return nil, false
	}
	switch c := d.data[d.pos]; c {
	case '{':
		return d.sharedObject(secrets)
	case '[':
		return d.array(secrets)
	case '"':
		return d.str()
	case 't':
		return d.literal("true", ast.InternedBooleanTrue)
	case 'f':
		return d.literal("false", ast.InternedBooleanFalse)
	case 'n':
		return d.literal("null", ast.InternedNullTerm)
	default:
		return d.number()
	}
}

func (d *valueDecoder) literal(word string, t *ast.Term) (*ast.Term, bool) {
	if len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		return nil, false
	}
	d.pos += len(word)
	return t, true
}

// maxSharedLen is the longest object text sharedObject looks up, and maxShared the most
// objects one decoder remembers.
const (
	maxSharedLen = 256
	maxShared    = 8192
)

// sharedObject decodes the object at the current position, or returns the term already
// made for an object of the same text. Plans repeat small objects thousands of times (a
// retry policy, labels, an OIDC token), and the same text always decodes to the same
// value, so one immutable term serves them all, as OPA shares its interned terms.
func (d *valueDecoder) sharedObject(secrets bool) (*ast.Term, bool) {
	end := smallObjectEnd(d.data, d.pos, maxSharedLen)
	if end < 0 {
		return d.object(secrets)
	}
	mode := 0
	if secrets {
		mode = 1
	}
	text := d.data[d.pos:end]
	if t, ok := d.shared[mode][string(text)]; ok {
		d.pos = end
		return t, true
	}
	t, ok := d.object(secrets)
	if ok && d.pos == end {
		if d.shared[mode] == nil {
			d.shared[mode] = make(map[string]*ast.Term, 256)
		}
		if len(d.shared[mode]) < maxShared {
			d.shared[mode][string(text)] = t
		}
	}
	return t, ok
}

// smallObjectEnd returns the offset just past the object starting at data[pos] ('{') if
// it ends within limit bytes, else -1. It tracks strings and nesting only: the object is
// decoded (and checked) when its text is first seen.
func smallObjectEnd(data []byte, pos, limit int) int {
	depth := 0
	stop := min(len(data), pos+limit)
	for i := pos; i < stop; i++ {
		switch data[i] {
		case '"':
			i = skipString(data, i) - 1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return -1
}

func (d *valueDecoder) object(secrets bool) (*ast.Term, bool) {
	base := len(d.items)
	defer func() { d.items = d.items[:base] }()
	secret := false
	ok := d.members(func(raw []byte, off int) bool {
		k := d.internKey(raw, off)
		v, ok := d.value(secrets)
		if !ok {
			return false
		}
		if secrets && string(k.Value.(ast.String)) == secretSig {
			secret = true
		}
		d.items = append(d.items, [2]*ast.Term{k, v})
		return true
	})
	items := d.items[base:]
	if !ok || duplicateKeys(items) {
		return nil, false
	}
	if secret {
		return d.term(ast.String(Secret)), true
	}
	return d.term(ast.NewObject(items...)), true
}

// members walks the object at the current position, calling fn for each member with its
// key (valid until fn decodes something; off as stringBytes gives it) and the decoder at
// its value, which fn consumes.
func (d *valueDecoder) members(fn func(key []byte, off int) bool) bool {
	d.skipSpace()
	if d.pos >= len(d.data) || d.data[d.pos] != '{' {
		return false
	}
	return d.container('}', func() bool {
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return false
		}
		key, off, ok := d.stringBytes()
		if !ok {
			return false
		}
		d.skipSpace()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return false
		}
		d.pos++
		d.skipSpace()
		return fn(key, off)
	})
}

// elements walks the array at the current position, calling fn with the decoder at each
// element, which fn consumes.
func (d *valueDecoder) elements(fn func() bool) bool {
	d.skipSpace()
	if d.pos >= len(d.data) || d.data[d.pos] != '[' {
		return false
	}
	return d.container(']', fn)
}

// container walks the entries of the object or array whose opening byte is at the
// current position, calling entry with the decoder at each (after whitespace); entries
// are separated by commas and end with closer.
func (d *valueDecoder) container(closer byte, entry func() bool) bool {
	d.pos++
	if d.depth++; d.depth > maxDepth {
		return false
	}
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == closer {
		d.pos++
		d.depth--
		return true
	}
	for {
		d.skipSpace()
		if !entry() {
			return false
		}
		d.skipSpace()
		if d.pos >= len(d.data) {
			return false
		}
		c := d.data[d.pos]
		d.pos++
		if c == closer {
			d.depth--
			return true
		}
		if c != ',' {
			return false
		}
	}
}

// duplicateKeys reports whether an object repeats a key. Keys are interned per decoder,
// so equal keys are the same term.
func duplicateKeys(items [][2]*ast.Term) bool {
	if len(items) <= 16 {
		for i := 1; i < len(items); i++ {
			for j := 0; j < i; j++ {
				if items[i][0] == items[j][0] {
					return true
				}
			}
		}
		return false
	}
	seen := make(map[*ast.Term]struct{}, len(items))
	for _, it := range items {
		if _, dup := seen[it[0]]; dup {
			return true
		}
		seen[it[0]] = struct{}{}
	}
	return false
}

func (d *valueDecoder) array(secrets bool) (*ast.Term, bool) {
	base := len(d.elems)
	defer func() { d.elems = d.elems[:base] }()
	ok := d.elements(func() bool {
		v, ok := d.value(secrets)
		d.elems = append(d.elems, v)
		return ok
	})
	if !ok {
		return nil, false
	}
	// ast.NewArray keeps the slice it is given: each array gets its own.
	elems := make([]*ast.Term, len(d.elems)-base)
	copy(elems, d.elems[base:])
	return d.term(ast.NewArray(elems...)), true
}

// rawString scans the string at the current position ('"') and returns its raw bytes
// (between the quotes) and whether it has escapes or non-ASCII bytes. ok is false for an
// unterminated string or a control character.
func (d *valueDecoder) rawString() (raw []byte, escaped, nonASCII, ok bool) {
	start := d.pos + 1
	i := start
	for i < len(d.data) {
		if i+8 <= len(d.data) && plainString8(d.data, i) {
			i += 8
			continue
		}
		switch c := d.data[i]; {
		case c == '"':
			d.pos = i + 1
			return d.data[start:i], escaped, nonASCII, true
		case c == '\\':
			escaped = true
			i += 2
		case c < 0x20:
			return nil, false, false, false
		case c >= 0x80:
			nonASCII = true
			i++
		default:
			i++
		}
	}
	return nil, false, false, false
}

// str decodes a string value; short ones are interned.
func (d *valueDecoder) str() (*ast.Term, bool) {
	raw, off, ok := d.stringBytes()
	if !ok {
		return nil, false
	}
	if len(raw) == 0 {
		return ast.InternedEmptyString, true
	}
	if len(raw) > maxInternedLen {
		return d.term(ast.String(d.makeString(raw, off))), true
	}
	slot := &d.recentValues[internHash(raw)%uint64(len(d.recentValues))]
	if slot.t != nil && slot.s == string(raw) {
		return slot.t, true
	}
	t := d.term(ast.String(d.makeString(raw, off)))
	*slot = internSlot{string(t.Value.(ast.String)), t}
	return t, true
}

// internKey returns the decoder's one term for an object key (decoded string bytes, off
// as stringBytes gives it): equal keys are the same term.
func (d *valueDecoder) internKey(raw []byte, off int) *ast.Term {
	slot := &d.recentKeys[internHash(raw)%uint64(len(d.recentKeys))]
	if slot.t != nil && slot.s == string(raw) {
		return slot.t
	}
	t, ok := d.keys[string(raw)]
	if !ok {
		t = ast.StringTerm(d.makeString(raw, off))
		d.keys[string(t.Value.(ast.String))] = t
	}
	*slot = internSlot{string(t.Value.(ast.String)), t}
	return t
}

// internSlot is an entry of a decoder's recent-string tables.
type internSlot struct {
	s string
	t *ast.Term
}

// internHash is a cheap hash of a short string: its length and its first and last eight
// bytes.
func internHash(b []byte) uint64 {
	h := uint64(len(b))
	if len(b) >= 8 {
		h ^= binary.LittleEndian.Uint64(b) ^ binary.LittleEndian.Uint64(b[len(b)-8:])*31
	} else {
		for _, c := range b {
			h = h*31 + uint64(c)
		}
	}
	return (h * 0x9e3779b97f4a7c15) >> 32
}

// makeString turns decoded string bytes into a string: cut from text when they are a
// part of data (off >= 0) that text covers, copied otherwise.
func (d *valueDecoder) makeString(raw []byte, off int) string {
	if off >= 0 && off+len(raw) <= len(d.text) {
		return d.text[off : off+len(raw)]
	}
	return string(raw)
}

// goString decodes a string value into a Go string (not interned).
func (d *valueDecoder) goString() (string, bool) {
	raw, off, ok := d.stringBytes()
	if !ok {
		return "", false
	}
	return d.makeString(raw, off), true
}

// unescape resolves the escapes of a raw string into the decoder's scratch buffer.
// Lone or malformed surrogates give up (encoding/json would substitute U+FFFD).
func (d *valueDecoder) unescape(raw []byte) ([]byte, bool) {
	out := d.scratch[:0]
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(raw) {
			return nil, false
		}
		switch raw[i] {
		case '"', '\\', '/':
			out = append(out, raw[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(raw[i+1:])
			if !ok {
				return nil, false
			}
			i += 4
			if r >= 0xd800 && r < 0xdc00 {
				if i+2 >= len(raw) || raw[i+1] != '\\' || raw[i+2] != 'u' {
					return nil, false
				}
				lo, ok := hex4(raw[i+3:])
				if !ok || lo < 0xdc00 || lo >= 0xe000 {
					return nil, false
				}
				i += 6
				r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
			} else if r >= 0xdc00 && r < 0xe000 {
				return nil, false
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, false
		}
	}
	d.scratch = out
	return out, true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// numberEnd returns the end of the JSON number at the current position, or -1.
func (d *valueDecoder) numberEnd() int {
	i := d.pos
	n := len(d.data)
	if i < n && d.data[i] == '-' {
		i++
	}
	switch {
	case i < n && d.data[i] == '0':
		i++
	case i < n && d.data[i] >= '1' && d.data[i] <= '9':
		for i < n && d.data[i] >= '0' && d.data[i] <= '9' {
			i++
		}
	default:
		return -1
	}
	if i < n && d.data[i] == '.' {
		i++
		if i >= n || d.data[i] < '0' || d.data[i] > '9' {
			return -1
		}
		for i < n && d.data[i] >= '0' && d.data[i] <= '9' {
			i++
		}
	}
	if i < n && (d.data[i] == 'e' || d.data[i] == 'E') {
		i++
		if i < n && (d.data[i] == '+' || d.data[i] == '-') {
			i++
		}
		if i >= n || d.data[i] < '0' || d.data[i] > '9' {
			return -1
		}
		for i < n && d.data[i] >= '0' && d.data[i] <= '9' {
			i++
		}
	}
	return i
}

// number decodes a number as OPA converts the float64 encoding/json makes of it.
func (d *valueDecoder) number() (*ast.Term, bool) {
	end := d.numberEnd()
	if end < 0 {
		return nil, false
	}
	lit := d.data[d.pos:end]
	d.pos = end
	// Up to six digits, a plain integer prints as itself in float64's shortest form.
	if len(lit) <= 6 && (lit[0] != '0' || len(lit) == 1) && allDigits(lit) {
		n := 0
		for _, c := range lit {
			n = n*10 + int(c-'0')
		}
		return ast.InternedTerm(n), true
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return nil, false
	}
	return d.term(ast.Number(strconv.FormatFloat(f, 'g', -1, 64))), true
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// skip passes over the value at the current position, checking it is valid JSON without
// building anything.
func (d *valueDecoder) skip() bool {
	d.skipSpace()
	if d.pos >= len(d.data) {
		return false
	}
	switch d.data[d.pos] {
	case '{':
		return d.members(func([]byte, int) bool { return d.skip() })
	case '[':
		return d.elements(d.skip)
	case '"':
		_, _, ok := d.stringBytes()
		return ok
	case 't':
		_, ok := d.literal("true", nil)
		return ok
	case 'f':
		_, ok := d.literal("false", nil)
		return ok
	case 'n':
		_, ok := d.literal("null", nil)
		return ok
	default:
		end := d.numberEnd()
		if end < 0 {
			return false
		}
		if _, err := strconv.ParseFloat(string(d.data[d.pos:end]), 64); err != nil {
			return false
		}
		d.pos = end
		return true
	}
}

// stringBytes decodes the string at the current position; the bytes are valid until the
// next string with escapes. off is their offset in data, or -1 when they were unescaped
// into the scratch buffer.
func (d *valueDecoder) stringBytes() (raw []byte, off int, ok bool) {
	off = d.pos + 1
	raw, escaped, nonASCII, ok := d.rawString()
	if !ok {
		return nil, 0, false
	}
	if escaped {
		off = -1
		if raw, ok = d.unescape(raw); !ok {
			return nil, 0, false
		}
	}
	if nonASCII && !utf8.Valid(raw) {
		return nil, 0, false
	}
	return raw, off, true
}
