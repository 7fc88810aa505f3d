package keys

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// marshalCanonical is identityJSON's definition: encoding/json, then the v1 canonical
// form of what CanonicalJSON accepts.
func marshalCanonical(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if _, err := CanonicalJSON(data); err != nil {
		return nil, err
	}
	return canonicalV1(data)
}

func TestIdentityJSONMatchesEncodingJSON(t *testing.T) {
	deep := any("x")
	for range MaxDepth + 1 {
		deep = []any{deep}
	}
	tests := []struct {
		name string
		v    any
	}{
		{"map", map[string]any{"service": "api", "producedAt": "2026-01-02T03:04:05Z"}},
		{"nested", map[string]any{"b": []any{json.Number("1.0"), json.Number("1e2"), json.Number("-0"), nil, true, false}, "a": map[string]any{"y": 1, "x": int64(-2)}}},
		{"html and separators", map[string]any{"<k&>": "a<b>&c\u2028\u2029\"\\\t\x01"}},
		{"unicode keys", map[string]any{"é": 1, "e": 2, "E": 3}},
		{"big integer", json.Number("123456789012345678901234567890")},
		{"float forms", []any{json.Number("1.5e300"), json.Number("0.000001"), json.Number("-0.0")}},
		{"nil containers", map[string]any{"m": map[string]any(nil), "s": []any(nil), "e": []any{}, "o": map[string]any{}}},
		{"float64 falls back", map[string]any{"f": 1.5, "g": 1e21}},
		{"other types fall back", map[string]any{"s": []string{"a"}, "u": uint8(3)}},
		{"invalid utf-8 falls back", map[string]any{"k": "a\xffb"}},
		{"invalid utf-8 key falls back", map[string]any{"\xff": 1, "\xfe": 2}},
		{"empty number falls back", json.Number("")},
		{"bad number falls back", json.Number("01")},
		{"huge number falls back", json.Number("1e400")},
		{"too deep falls back", deep},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, wantErr := marshalCanonical(tc.v)
			got, err := identityJSON(tc.v)
			if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
				t.Fatalf("identityJSON = %s, %v; encoding/json then canonicalV1 = %s, %v", got, err, want, wantErr)
			}
		})
	}
}

// FuzzIdentityJSON checks that the direct encoding of a decoded payload
// equals encoding/json's encoding made canonical.
func FuzzIdentityJSON(f *testing.F) {
	for _, s := range []string{`{"service":"api","producedAt":"2026-01-02T03:04:05Z"}`, `{"b":[1.0,1e2,-0,null,true],"a":{"<":"\u2028"}}`, `"\ud800x"`, `[1e400]`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		want, wantErr := marshalCanonical(v)
		got, err := identityJSON(v)
		if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("%q: identityJSON = %s, %v; want %s, %v", data, got, err, want, wantErr)
		}
	})
}

func TestNormalizeIDPlainIDsUnchanged(t *testing.T) {
	for _, id := range []string{"svc-1", "prod", "m-123", "a", strings.Repeat("a", maxComponentBytes)} {
		if got, err := NormalizeID(id); err != nil || got != id {
			t.Errorf("NormalizeID(%q) = %q, %v; want it unchanged", id, got, err)
		}
	}
	long := strings.Repeat("a", maxComponentBytes+1)
	if got, _ := NormalizeID(long); got == long || len(got) > maxComponentBytes {
		t.Errorf("NormalizeID of %d plain bytes = %d bytes, want it shortened with a hash", len(long), len(got))
	}
}
