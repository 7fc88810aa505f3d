package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// Payload is message data that is a JSON object. Decoding it checks the
// whole text and indexes the top-level members; a value is decoded only
// when it is asked for (Get), so a large payload is held once, as the
// message data, however few of its fields the routes read.
type Payload struct {
	members map[string]rawValue
}

// rawValue is one JSON value as a slice of the text it was decoded from.
// json.Unmarshal hands an Unmarshaler a slice of its own input, which the
// consumer never modifies, so keeping the slice copies nothing.
type rawValue []byte

// UnmarshalJSON keeps the value's text.
func (r *rawValue) UnmarshalJSON(b []byte) error {
	*r = b
	return nil
}

// DecodePayload checks that data is one JSON object and indexes its
// members. Numbers keep their text (Get returns json.Number), so ids and
// sequences survive unchanged. Every error is a *FieldError.
func DecodePayload(data []byte) (Payload, error) {
	var members map[string]rawValue
	err := json.Unmarshal(data, &members)
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax) && strings.Contains(syntax.Error(), "after top-level value"):
		return Payload{}, fieldError("message.data", "decoded data has content after the JSON value",
			"publish exactly one JSON object per message")
	case errors.As(err, &syntax):
		return Payload{}, fieldError("message.data", "decoded data is not valid JSON: "+err.Error(),
			"publish a UTF-8 JSON object as the message data")
	case err != nil || members == nil:
		return Payload{}, fieldError("message.data", fmt.Sprintf("decoded data is a JSON %s, not an object", kindOf(data)),
			`publish a JSON object such as {"service":"api","status":"ok"}`)
	}
	return Payload{members: members}, nil
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
	members := p.members
	for {
		head, rest, nested := strings.Cut(path, ".")
		raw, ok := members[head]
		if !ok || !nested {
			return raw, ok
		}
		if len(raw) == 0 || raw[0] != '{' {
			return nil, false
		}
		// Its own variable: decoding into members itself would move members
		// to the heap on every lookup, nested or not.
		var inner map[string]rawValue
		if json.Unmarshal(raw, &inner) != nil {
			return nil, false
		}
		members, path = inner, rest
	}
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

// Keys returns the top-level member names, sorted.
func (p Payload) Keys() []string {
	return slices.Sorted(maps.Keys(p.members))
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
		if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
			return string(raw[1 : len(raw)-1])
		}
		var s string
		_ = json.Unmarshal(raw, &s) // valid: checked when the payload was decoded
		return s
	case '{', '[':
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		_ = dec.Decode(&v)
		return v
	}
	return json.Number(raw)
}
