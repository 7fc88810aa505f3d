package handler

import (
	"strings"
	"testing"
)

// sfString writes s as a Structured Field string.
func sfString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// FuzzParseKey: every accepted key is 1 to MaxKeyLength visible ASCII
// bytes; a key sent as a Structured Field string or as a bare token parses
// to itself.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"8e03978e-40d5-43e8-bc93-6894a57f9324", `a"b\c`, " x ", "", strings.Repeat("k", 256), "é", "\x7f", `"unterminated`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		visible := len(s) > 0 && len(s) <= MaxKeyLength && strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r > 0x7e }) < 0
		got, err := ParseKey([]string{sfString(s)})
		if visible != (err == nil) || (err == nil && got != s) {
			t.Fatalf("ParseKey(%q) = %q, %v; visible ASCII: %v", sfString(s), got, err, visible)
		}
		if visible && strings.TrimSpace(s) == s && !strings.HasPrefix(s, `"`) {
			if got, err := ParseKey([]string{s}); err != nil || got != s {
				t.Fatalf("bare token %q: %q, %v", s, got, err)
			}
		}
		if k, err := ParseKey([]string{s}); err == nil && (k == "" || len(k) > MaxKeyLength || strings.IndexFunc(k, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0) {
			t.Fatalf("ParseKey(%q) accepted %q", s, k)
		}
	})
}

func TestParseKeyCount(t *testing.T) {
	for _, vs := range [][]string{nil, {"a", "b"}} {
		if _, err := ParseKey(vs); err == nil {
			t.Errorf("ParseKey(%q) accepted", vs)
		}
	}
}

// TestFingerprint: JSON bodies are fingerprinted canonically (spelling and
// member order do not count, values do); other bodies by their bytes.
func TestFingerprint(t *testing.T) {
	same := [][2]string{{`{"a":1,"b":"x"}`, "{ \"b\" : \"x\", \"a\": 1.0 }"}, {`[1,2]`, ` [1, 2] `}}
	for _, p := range same {
		if Fingerprint([]byte(p[0])) != Fingerprint([]byte(p[1])) {
			t.Errorf("%s and %s differ", p[0], p[1])
		}
	}
	differ := []string{`{"a":1}`, `{"a":2}`, `{"a":"1"}`, `[2,1]`, `not json`, `not json `, ``}
	seen := map[string]string{}
	for _, b := range differ {
		fp := Fingerprint([]byte(b))
		if prev, ok := seen[fp]; ok {
			t.Errorf("%q and %q share fingerprint %s", prev, b, fp)
		}
		seen[fp] = b
	}
}
