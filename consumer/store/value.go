package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// timeTag marks a timestamp in the JSON encoding, so that drivers storing JSON
// (bbolt, PostgreSQL) give back time.Time as Firestore does.
const timeTag = "$eventpipe_time"

// CopyFields returns a deep copy of fields with every value converted to the
// value model of Document (int kinds become int64, float32 float64, typed
// slices and maps []any and map[string]any, times UTC). It fails, naming the
// field, on values a document cannot hold.
func CopyFields(fields map[string]any) (map[string]any, error) {
	if fields == nil {
		return map[string]any{}, nil
	}
	if c, ok := cloneInModel(fields); ok {
		return c.(map[string]any), nil
	}
	out := make(map[string]any, len(fields))
	for k, v := range fields {
		nv, err := normalize(v)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
		out[k] = nv
	}
	return out, nil
}

// ValueModelFields returns fields itself when every value is in the value
// model already (the caller must then not modify what it shares), and
// otherwise CopyFields(fields), errors included.
func ValueModelFields(fields map[string]any) (map[string]any, error) {
	if fields != nil && InValueModel(fields) {
		return fields, nil
	}
	return CopyFields(fields)
}

// CloneValue returns v with its maps and slices deep-copied (maps and slices
// in the value model; anything else, scalars included, is returned as is).
func CloneValue(v any) any {
	if c, ok := cloneContainer(v); ok {
		return c
	}
	return v
}

// cloneContainer deep-copies v when it is a map or slice in the value
// model (ok false for anything else): maps.Clone copies a map's table
// wholesale, which is cheaper than inserting anew, and scalars need no copy.
func cloneContainer(v any) (c any, ok bool) {
	switch x := v.(type) {
	case map[string]any:
		out := maps.Clone(x)
		for k, e := range out {
			if c, ok := cloneContainer(e); ok {
				out[k] = c
			}
		}
		return out, true
	case []any:
		out := slices.Clone(x)
		for i, e := range out {
			if c, ok := cloneContainer(e); ok {
				out[i] = c
			}
		}
		return out, true
	}
	return nil, false
}

// cloneInModel deep-copies v, as cloneContainer does, when v is in the
// value model (ok false otherwise): one walk both checks and copies it.
func cloneInModel(v any) (c any, ok bool) {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return nil, false // normalize makes it an empty map
		}
		out := maps.Clone(x)
		for k, e := range out {
			switch e.(type) {
			case map[string]any, []any:
				if out[k], ok = cloneInModel(e); !ok {
					return nil, false
				}
			default:
				if !InValueModel(e) {
					return nil, false
				}
			}
		}
		return out, true
	case []any:
		if x == nil {
			return nil, false // normalize makes it an empty slice
		}
		out := slices.Clone(x)
		for i, e := range out {
			if out[i], ok = cloneInModel(e); !ok {
				return nil, false
			}
		}
		return out, true
	}
	return v, InValueModel(v)
}

// InValueModel reports whether v is in the value model of Document already:
// a document holding it needs no conversion (see CopyFields), as normalize
// would accept v and give back an equal value.
func InValueModel(v any) bool {
	switch x := v.(type) {
	case nil, bool, string, int64:
		return true
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	case time.Time:
		return x == x.UTC() // UTC and no monotonic reading: == on purpose
	case []any:
		if x == nil {
			return false // normalize makes it an empty slice
		}
		for _, e := range x {
			if !InValueModel(e) {
				return false
			}
		}
		return true
	case map[string]any:
		if x == nil {
			return false // normalize makes it an empty map
		}
		for _, e := range x {
			if !InValueModel(e) {
				return false
			}
		}
		return true
	}
	return false
}

// CopyDocument returns a deep copy of d in the value model (see CopyFields).
func CopyDocument(d Document) (Document, error) {
	f, err := CopyFields(d.Fields)
	if err != nil {
		return Document{}, err
	}
	return Document{Fields: f, ExpireAt: d.ExpireAt.UTC()}, nil
}

func normalize(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, string, int64:
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("number %v cannot be stored: use a finite number", x)
		}
		return x, nil
	case float32:
		return normalize(float64(x))
	case int, int8, int16, int32:
		return reflect.ValueOf(x).Int(), nil
	case uint8, uint16, uint32:
		return int64(reflect.ValueOf(x).Uint()), nil
	case uint, uint64:
		if u := reflect.ValueOf(x).Uint(); u <= math.MaxInt64 {
			return int64(u), nil
		}
		return nil, fmt.Errorf("integer %d overflows int64", x)
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
		f, err := x.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %q: %w", x, err)
		}
		return normalize(f)
	case time.Time:
		return x.UTC(), nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			ne, err := normalize(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = ne
		}
		return out, nil
	case []string:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = e
		}
		return out, nil
	case map[string]any:
		return CopyFields(x)
	case map[string]string:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = e
		}
		return out, nil
	default:
		return nil, fmt.Errorf("unsupported value type %T: use bool, number, string, time.Time, slice or map[string]any", v)
	}
}

// EncodeJSON encodes a document for drivers that store JSON. Timestamps keep
// their type (a tagged object) and integers stay distinct from floats, so
// DecodeJSON returns what Firestore would. Map keys are sorted; strings are
// written as RFC 8785 writes them (jsontext.AppendQuote: only what JSON
// requires is escaped, invalid UTF-8 in a string becomes U+FFFD, as
// encoding/json turns it; a field name that is not UTF-8 is refused, since two
// such names could become one).
func EncodeJSON(d Document) ([]byte, error) {
	// Most documents fit in one buffer of this size: appending grows it
	// once or not at all, where a bytes.Buffer doubled its way up.
	return appendJSON(make([]byte, 0, 512), d.Fields)
}

// appendJSON appends v's encoding to b.
func appendJSON(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case string:
		b, _ = jsontext.AppendQuote(b, x) // invalid UTF-8 is replaced; the error only says so
		return b, nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return b, fmt.Errorf("number %v cannot be stored", x)
		}
		n := len(b)
		b = strconv.AppendFloat(b, x, 'g', -1, 64)
		if !bytes.ContainsAny(b[n:], ".eE") {
			b = append(b, ".0"...) // a float stays a float
		}
		return b, nil
	case time.Time:
		b = append(b, `{"`+timeTag+`":"`...)
		b = x.UTC().AppendFormat(b, time.RFC3339Nano)
		return append(b, `"}`...), nil
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSON(b, e); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		if _, tagged := x[timeTag]; tagged && len(x) == 1 {
			// It would read back as a timestamp (or fail to).
			return b, fmt.Errorf("a map whose only field is %s is how timestamps are stored: rename the field or add another", timeTag)
		}
		// The keys in order, on the stack for the maps documents hold.
		var buf [16]string
		keys := buf[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if !utf8.ValidString(k) {
				// Replaced by U+FFFD, two names could become one and a field be lost.
				return b, fmt.Errorf("field name %q is not valid UTF-8: name fields with text (JSON and Firestore names are UTF-8)", k)
			}
			if i > 0 {
				b = append(b, ',')
			}
			b, _ = jsontext.AppendQuote(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendJSON(b, x[k]); err != nil {
				return b, fmt.Errorf("field %q: %w", k, err)
			}
		}
		return append(b, '}'), nil
	default:
		nv, err := normalize(v)
		if err != nil {
			return b, err
		}
		return appendJSON(b, nv)
	}
}

// DecodeJSON decodes fields written by EncodeJSON.
func DecodeJSON(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw map[string]any
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("decode document: %w", err)
	}
	v, err := decodeValue(raw)
	if err != nil {
		return nil, err
	}
	m, _ := v.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

func decodeValue(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		s := x.String()
		if strings.ContainsAny(s, ".eE") {
			return x.Float64()
		}
		return x.Int64()
	case []any:
		for i, e := range x {
			ne, err := decodeValue(e)
			if err != nil {
				return nil, err
			}
			x[i] = ne
		}
		return x, nil
	case map[string]any:
		if len(x) == 1 {
			if s, ok := x[timeTag].(string); ok {
				t, err := time.Parse(time.RFC3339Nano, s)
				if err != nil {
					return nil, fmt.Errorf("decode timestamp %q: %w", s, err)
				}
				return t.UTC(), nil
			}
		}
		for k, e := range x {
			ne, err := decodeValue(e)
			if err != nil {
				return nil, err
			}
			x[k] = ne
		}
		return x, nil
	default:
		return x, nil
	}
}
