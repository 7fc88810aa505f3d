// Package jsonplain finds the bytes a JSON string carries as they are, eight
// at a time: the JSON encoders of the consumer (canonical JSON in package
// keys, log lines in package logging) copy such a run at once and escape
// only from the first byte that needs it.
package jsonplain

// Every byte of a 64-bit word set to 0x01, and to 0x80.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// Prefix returns the length of the longest prefix of s made only of
// printable ASCII other than '"' and '\\' (0x20-0x7e without 0x22 and
// 0x5c): the bytes no JSON encoder escapes.
func Prefix[T string | []byte](s T) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		_ = s[i+7]
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// A word has a byte below n (n <= 0x80) exactly when
		// (w - n*ones) &^ w has a high bit set; a byte equal to c when w^c*ones
		// has a zero byte; a non-ASCII byte when w has a high bit set.
		quote, backslash := w^('"'*ones), w^('\\'*ones)
		special := (w-0x20*ones)&^w | (quote-ones)&^quote | (backslash-ones)&^backslash | w
		if special&highs != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			break
		}
	}
	return i
}
