package envelope

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"testing"
)

// TestDecodeBase64InPlace: for generated message data (standard and
// URL-safe base64, padded or not, of lengths around the chunks it is
// decoded in, now and then corrupted by a character outside the alphabet,
// padding before the end or a last quantum with unused bits set), decoding
// in place gives the data and the error of decoding into a new buffer, the
// same message included, and a text that does not decode is left as it was.
func TestDecodeBase64InPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 64))
	encodings := []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding}
	sizes := []int{1, 2, 3, 4, 100, base64Chunk/4*3 - 1, base64Chunk / 4 * 3, base64Chunk/4*3 + 1, 2 * base64Chunk / 4 * 3, 3*base64Chunk/4*3 + 2}
	failures := 0
	for i := range 2000 {
		data := make([]byte, sizes[rng.IntN(len(sizes))]+rng.IntN(3))
		for j := range data {
			data[j] = byte(rng.UintN(256))
		}
		text := []byte(encodings[rng.IntN(len(encodings))].EncodeToString(data))
		switch rng.IntN(6) {
		case 0: // a character outside both alphabets
			text[rng.IntN(len(text))] = "!*.\x00 \xc3"[rng.IntN(6)]
		case 1: // padding before the end, at a chunk's end now and then
			at := rng.IntN(len(text))
			if len(text) > base64Chunk && rng.IntN(2) == 0 {
				at = base64Chunk - 1 - rng.IntN(2)
			}
			text[at] = '='
		case 2: // unused bits of the last character set
			text[len(text)-1] ^= 1
		}
		want, wantErr := decodeBase64(bytes.Clone(text), false)
		sent := bytes.Clone(text)
		got, err := decodeBase64(text, true)
		switch {
		case (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()):
			t.Fatalf("text %d (%d characters): in place %v, into a new buffer %v", i, len(sent), err, wantErr)
		case err != nil:
			failures++
			if !bytes.Equal(text, sent) {
				t.Fatalf("text %d: refused (%v), but changed", i, err)
			}
		case !bytes.Equal(got, want):
			t.Fatalf("text %d (%d characters): in place decoded %d bytes, into a new buffer %d, not the same", i, len(sent), len(got), len(want))
		}
	}
	if failures < 200 || failures > 1000 {
		t.Fatalf("%d of 2000 texts refused: the generator does not exercise both outcomes", failures)
	}
}
