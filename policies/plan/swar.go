package plan

import "encoding/binary"

// Word-at-a-time scanning: eight bytes are tested at once for the bytes that end a plain
// run in a JSON string or a run of indentation, and only a word holding one is looked at
// byte by byte. (The tests are exact for "is there such a byte in the word".)

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// hasByte reports whether some byte of w equals b.
func hasByte(w uint64, b byte) bool {
	x := w ^ (ones * uint64(b))
	return (x-ones)&^x&highs != 0
}

// plainString8 reports whether the eight bytes at data[i:] are all ordinary string
// content: printable ASCII other than '"' and '\\'.
func plainString8(data []byte, i int) bool {
	w := binary.LittleEndian.Uint64(data[i:])
	q := w ^ (ones * '"')
	b := w ^ (ones * '\\')
	// A zero byte in q or b, a byte of w below 0x20, or one at or above 0x80.
	return ((q-ones)&^q|(b-ones)&^b|(w-ones*0x20)|w)&highs == 0
}

// quoteFree8 reports whether the eight bytes at data[i:] hold neither '"' nor '\\'.
func quoteFree8(data []byte, i int) bool {
	w := binary.LittleEndian.Uint64(data[i:])
	return !hasByte(w, '"') && !hasByte(w, '\\')
}

// spaces8 reports whether the eight bytes at data[i:] are all spaces (indentation).
func spaces8(data []byte, i int) bool {
	return binary.LittleEndian.Uint64(data[i:]) == ones*' '
}
