package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/eventpipe/eventpipe/consumer/limits"
)

// Payload is message data that is a JSON object. Decoding it checks the
// whole text and indexes the top-level members (where each name and value
// lies in the text); a value is decoded only when it is asked for (Get),
// so a large payload is held once, as the message data, however few of
// its fields the routes read.
type Payload struct {
	// data is the object's text, valid JSON.
	data []byte
	// members are its top-level members in the order of the text.
	members []member
}

// member is where one member's name (its JSON string, quotes included)
// and value lie in the payload's text: data[name:colon] and
// data[value:end]. Offsets rather than slices: a payload's index takes
// 16 bytes a member, and the data is at most limits.MaxMessageBytes.
type member struct{ name, nameEnd, value, end int32 }

// rawValue is one JSON value as a slice of the text it was decoded from.
// json.Unmarshal hands an Unmarshaler a slice of its own input, which the
// consumer never modifies, so keeping the slice copies nothing.
type rawValue []byte

// UnmarshalJSON keeps the value's text.
func (r *rawValue) UnmarshalJSON(b []byte) error {
	*r = b
	return nil
}

// indexedMembers is how many members DecodePayload indexes on its stack
// before it copies the index to the heap, once, at its length.
const indexedMembers = 32

// DecodePayload checks that data is one JSON object and indexes its
// members. Numbers keep their text (Get returns json.Number), so ids and
// sequences survive unchanged. As encoding/json decoding into a map, a
// name given twice is its last value. Every error is a *FieldError.
func DecodePayload(data []byte) (Payload, error) {
	if !validJSON(data) || !isObject(data) {
		return Payload{}, payloadError(data)
	}
	if len(data) > math.MaxInt32 { // Pub/Sub's messages are at most 10 MB
		return Payload{}, fieldError("message.data", fmt.Sprintf("decoded data is %d bytes long", len(data)),
			fmt.Sprintf("publish at most %d bytes, Pub/Sub's limit", limits.MaxMessageBytes))
	}
	var stack [indexedMembers]member
	index := stack[:0]
	eachMember(data, skipSpace(data, 0), func(name, nameEnd, value, end int) {
		index = append(index, member{int32(name), int32(nameEnd), int32(value), int32(end)})
	})
	return Payload{data: data, members: slices.Clone(index)}, nil
}

// payloadError is the error of data that is not one valid JSON object.
func payloadError(data []byte) *FieldError {
	var members map[string]rawValue
	err := json.Unmarshal(data, &members)
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax) && strings.Contains(syntax.Error(), "after top-level value"):
		return fieldError("message.data", "decoded data has content after the JSON value",
			"publish exactly one JSON object per message")
	case errors.As(err, &syntax):
		return fieldError("message.data", "decoded data is not valid JSON: "+err.Error(),
			"publish a UTF-8 JSON object as the message data")
	}
	return fieldError("message.data", fmt.Sprintf("decoded data is a JSON %s, not an object", kindOf(data)),
		`publish a JSON object such as {"service":"api","status":"ok"}`)
}

// validJSON reports whether data is one JSON text, exactly as
// encoding/json's Valid does (TestValidJSONIsEncodingJSONValid,
// FuzzValidJSON): RFC 8259's grammar, white space around the value, strings
// that may hold invalid UTF-8 and unpaired \u surrogates, a name given twice,
// at most 10,000 levels of nesting. jsontext's decoder, told to allow what
// encoding/json allows, checks a push body about three times as fast as
// encoding/json's scanner, which steps through a state machine byte by
// byte (1.7 µs against 0.5 µs for a 400-byte body), and every push is
// checked twice: the body, then its data.
func validJSON(data []byte) bool {
	return jsontext.Value(data).IsValid(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
}

// isObject reports whether the valid JSON text data is an object.
func isObject(data []byte) bool {
	i := skipSpace(data, 0)
	return i < len(data) && data[i] == '{'
}

// The scanners below walk text already checked to be valid JSON (RFC 8259:
// validJSON), so they only find where values end; they check nothing.

// skipSpace returns the offset of the first byte at or after i that is not
// JSON white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the offset just past the string starting at i.
func skipString(data []byte, i int) int {
	for i++; ; i++ {
		switch data[i] {
		case '\\':
			i++ // the escaped byte; \uXXXX's hex digits are plain
		case '"':
			return i + 1
		}
	}
}

// skipValue returns the offset just past the value starting at i.
func skipValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch data[i] {
			case '"':
				i = skipString(data, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(data) && !strings.ContainsRune(",}] \t\n\r", rune(data[i])) {
		i++
	}
	return i
}

// eachMember calls fn with where each member of the object starting at i
// lies: its name at data[name:nameEnd], its value at data[value:end].
func eachMember(data []byte, i int, fn func(name, nameEnd, value, end int)) {
	i = skipSpace(data, i+1)
	for data[i] != '}' {
		name := i
		nameEnd := skipString(data, i)
		value := skipSpace(data, skipSpace(data, nameEnd)+1) // past the colon
		end := skipValue(data, value)
		fn(name, nameEnd, value, end)
		if i = skipSpace(data, end); data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
}

// nameIs reports whether raw, a member's name as a JSON string, decodes to
// want. A name without escapes decodes to its own bytes, except that
// encoding/json reads each byte of invalid UTF-8 as U+FFFD: so it decodes
// to want when its bytes are want's and valid UTF-8, and a name of other
// bytes can only decode to want when want holds U+FFFD. wantFFFD is whether
// it does (hasFFFD), found once for a want compared with every name: the
// UTF-8 check of every name it spares was 2% of a push's CPU
// (BenchmarkPushPath, handler/idempotent).
func nameIs(raw []byte, want string, wantFFFD bool) bool {
	name := raw[1 : len(raw)-1]
	switch {
	case bytes.IndexByte(name, '\\') >= 0:
		return unquote(raw) == want
	case string(name) == want:
		return utf8.Valid(name)
	}
	return wantFFFD && unquote(raw) == want
}

// hasFFFD reports whether s holds U+FFFD, the rune encoding/json reads
// invalid UTF-8 as (nameIs).
func hasFFFD(s string) bool { return strings.ContainsRune(s, utf8.RuneError) }

// nameFolds reports whether raw, a member's name as a JSON string, names
// the struct field field as encoding/json matches them: decoded, equal
// under Unicode case folding (bytes.EqualFold; encoding/json's foldName is
// documented to be identical to it). Only when two fields fold alike does
// encoding/json prefer an exact match, and no two of the envelope's do.
func nameFolds(raw []byte, field string) bool {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return bytes.EqualFold(raw[1:len(raw)-1], []byte(field))
	}
	return strings.EqualFold(unquote(raw), field)
}

// kindOf names the kind of the valid JSON value data holds.
func kindOf(data []byte) string {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return "nothing"
	}
	switch data[0] {
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	case '{':
		return "object"
	}
	return "number"
}

// lookupRaw follows a dotted path through nested objects to a value's text.
func (p Payload) lookupRaw(path string) (rawValue, bool) {
	if p.data == nil {
		return nil, false
	}
	head, rest, nested := strings.Cut(path, ".")
	var raw rawValue
	headFFFD := hasFFFD(head)
	for _, m := range p.members { // the last of a name given twice
		if nameIs(p.data[m.name:m.nameEnd], head, headFFFD) {
			raw = p.data[m.value:m.end]
		}
	}
	for raw != nil && nested {
		if raw[0] != '{' {
			return nil, false
		}
		obj := raw
		head, rest, nested = strings.Cut(rest, ".")
		headFFFD = hasFFFD(head)
		raw = nil
		eachMember(obj, 0, func(name, nameEnd, value, end int) {
			if nameIs(obj[name:nameEnd], head, headFFFD) {
				raw = obj[value:end]
			}
		})
	}
	return raw, raw != nil
}

// Get returns the value at path (dotted names reach into nested objects)
// as encoding/json decodes it with UseNumber: nil, bool, string,
// json.Number, []any or map[string]any. ok is false when it is absent.
func (p Payload) Get(path string) (v any, ok bool) {
	raw, ok := p.lookupRaw(path)
	if !ok {
		return nil, false
	}
	return decodeValue(raw), true
}

// Present reports whether path holds a value other than null.
func (p Payload) Present(path string) bool {
	raw, ok := p.lookupRaw(path)
	return ok && string(raw) != "null"
}

// Keys returns the top-level member names, sorted, each once.
func (p Payload) Keys() []string {
	keys := make([]string, len(p.members))
	for i, m := range p.members {
		keys[i] = unquote(p.data[m.name:m.nameEnd])
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// unquote returns the string raw, a valid JSON string (checked when the
// text it is part of was decoded), holds, as encoding/json decodes it.
// Strings without escapes in valid UTF-8 (most of them) are read directly,
// the rest through encoding/json (which also replaces invalid UTF-8).
func unquote(raw rawValue) string {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// decodeValue decodes one valid JSON value. Strings without escapes (most
// of them) and scalars are read directly; the rest through encoding/json.
func decodeValue(raw rawValue) any {
	switch raw[0] {
	case 'n':
		return nil
	case 't':
		return true
	case 'f':
		return false
	case '"':
		return unquote(raw)
	case '{', '[':
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		_ = dec.Decode(&v)
		return v
	}
	return json.Number(raw)
}
