package jsonplain

import (
	"strings"
	"testing"
)

// prefixByByte is Prefix's definition, one byte at a time.
func prefixByByte(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return i
		}
	}
	return len(s)
}

// TestPrefixEveryByteEverywhere puts each of the 256 byte values at each
// position of strings long enough to use the word-at-a-time path, with
// plain bytes around it, and compares with the byte-by-byte definition.
func TestPrefixEveryByteEverywhere(t *testing.T) {
	plain := strings.Repeat("abcXYZ 09~!#[]{}", 3) // printable, neither '"' nor '\\'
	for b := range 256 {
		for pos := range 24 {
			for _, tail := range []string{"", "\"", "\x00", "é"} {
				s := plain[:pos] + string([]byte{byte(b)}) + plain[pos:30] + tail
				if got, want := Prefix(s), prefixByByte(s); got != want {
					t.Fatalf("Prefix(%q) = %d, want %d", s, got, want)
				}
				if got, want := Prefix([]byte(s)), prefixByByte(s); got != want {
					t.Fatalf("Prefix([]byte(%q)) = %d, want %d", s, got, want)
				}
			}
		}
	}
}

func FuzzPrefix(f *testing.F) {
	for _, s := range []string{"", "plain", `a"b`, "tab\there", "ünï", "\\\\", "0123456789abcdef\x1f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Prefix(s), prefixByByte(s); got != want {
			t.Errorf("Prefix(%q) = %d, want %d", s, got, want)
		}
	})
}
