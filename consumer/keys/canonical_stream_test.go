package keys

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// checkStreamed holds writeCanonical to canonical for data at every chunk
// size given: the same bytes, or both refuse; and the scan it returns says
// the v1 form may differ whenever it does.
func checkStreamed(t *testing.T, data []byte, chunks ...int) {
	t.Helper()
	want, _, werr := canonical(nil, data)
	for _, chunk := range chunks {
		var got bytes.Buffer
		scan, err := writeCanonical(&got, data, chunk)
		switch {
		case (err == nil) != (werr == nil):
			t.Fatalf("chunk %d, %.200q: streamed error %v, buffered %v", chunk, data, err, werr)
		case werr != nil:
			if strings.Contains(werr.Error(), "duplicate object key") != strings.Contains(err.Error(), "duplicate object key") ||
				strings.Contains(werr.Error(), "nested deeper") != strings.Contains(err.Error(), "nested deeper") {
				t.Fatalf("chunk %d, %.200q: streamed error %v, buffered %v: not the same refusal", chunk, data, err, werr)
			}
			continue
		case !bytes.Equal(got.Bytes(), want):
			t.Fatalf("chunk %d, %.200q: streamed %.200q, buffered %.200q", chunk, data, got.Bytes(), want)
		}
		v1, v1err := canonicalV1(data)
		if v1err == nil && !bytes.Equal(v1, want) && !scan.mayDiffer {
			t.Fatalf("chunk %d, %.200q: the v1 form %.200q differs, the scan says it cannot", chunk, data, v1)
		}
		// The v1 form written piece by piece: canonicalV1's bytes, or its refusal.
		got.Reset()
		if err := writeCanonicalV1(&got, data, chunk); (err == nil) != (v1err == nil) || (err == nil && !bytes.Equal(got.Bytes(), v1)) {
			t.Fatalf("chunk %d, %.200q: v1 streamed %.200q (%v), whole %.200q (%v)", chunk, data, got.Bytes(), err, v1, v1err)
		}
	}
}

// TestCanonicalWriterMatchesCanonical: for generated payloads of the
// shapes producers write (nested objects and arrays; keys plain, escaped,
// accented, beyond U+FFFF as UTF-8 or as surrogate escapes, private use;
// integers, big integers, fractions, exponents; strings with every kind of
// escape; spacing; now and then a duplicate key or a broken text) the form
// written piece by piece is canonical's, byte for byte, at chunk sizes that
// cut every string and container, and both refuse the same texts.
func TestCanonicalWriterMatchesCanonical(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 2))
	for i := range 3000 {
		data := genJSON(rng, 0)
		if rng.IntN(20) == 0 { // break it somewhere
			cut := rng.IntN(len(data) + 1)
			data = data[:cut] + []string{"", ",", "}", `"`, "\xff", " 1"}[rng.IntN(6)] + data[cut:]
		}
		checkStreamed(t, []byte(data), 1, 2, 5, 16, 1+rng.IntN(len(data)+1), streamChunkBytes)
		if t.Failed() {
			t.Fatalf("payload %d", i)
		}
	}
}

// genKeys are the object keys genJSON draws from: some equal once decoded
// ("a" and "\u0061"), some ordered differently by UTF-8 and UTF-16.
var genKeys = []string{`a`, `b`, `\u0061`, `service`, `é`, `\u00e9`, `E`, `😀`, `\ud83d\ude00`, "\ue000", `€`, `a\nb`, `\"q\"`, `\/`, `/`, `ab`, `abc`, ``, `k\u0000`, "\u2028"}

// genJSON writes a random JSON value nested depth deep.
func genJSON(rng *rand.Rand, depth int) string {
	sp := func() string { return []string{"", "", " ", "\n  ", "\t"}[rng.IntN(5)] }
	// list writes up to n values of elem between open and close.
	list := func(open, close string, n int, elem func(j int) string) string {
		var b strings.Builder
		b.WriteString(open + sp())
		for j := range rng.IntN(n) {
			if j > 0 {
				b.WriteString("," + sp())
			}
			b.WriteString(elem(j))
		}
		return b.String() + sp() + close
	}
	switch k := rng.IntN(10); {
	case k < 3 && depth < 6:
		return list("{", "}", 6, func(j int) string {
			key := genKeys[rng.IntN(len(genKeys))]
			if rng.IntN(4) == 0 {
				key += strconv.Itoa(j) // distinct from the rest
			}
			return `"` + key + `"` + sp() + ":" + sp() + genJSON(rng, depth+1)
		})
	case k < 5 && depth < 6:
		return list("[", "]", 5, func(int) string { return genJSON(rng, depth+1) })
	case k < 7:
		units := []string{"x", "é", "😀", `\ud83d\ude00`, `\n`, `\"`, `\\`, `\/`, `\u0001`, `\u00e9`, `\t`, " ", "\u2028", "\ue000", `\u20ac`}
		var b strings.Builder
		b.WriteString(`"`)
		for range rng.IntN(40) {
			b.WriteString(units[rng.IntN(len(units))])
		}
		b.WriteString(`"`)
		return b.String()
	case k < 9:
		return []string{"0", "-0", "1", "-17", "1.0", "1.5", "0.000001", "1e-7", "1e21", "1E+2", "-0.0e-5", "123456789012345678901234567890",
			"9007199254740993", "1234567.5", "1.5e300", fmt.Sprint(rng.Int64()), fmt.Sprint(rng.Float64() * 1e6)}[rng.IntN(17)]
	}
	return []string{"true", "false", "null"}[rng.IntN(3)]
}

// TestFingerprintStreamsLargePayloads: a payload past streamChunkBytes is
// fingerprinted by hashing its form as it is written, to the hash of the
// form canonical holds; allocating a small part of the payload (the scratch
// and the member spans), where holding the form took 1.25 times it.
func TestFingerprintStreamsLargePayloads(t *testing.T) {
	for name, payload := range bigPayloads() {
		canon, err := CanonicalJSON(payload)
		if err != nil {
			t.Fatal(err)
		}
		want := prefixedHash(fingerprintPrefix, sha256.Sum256(canon))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got, err := Fingerprint(payload)
		runtime.ReadMemStats(&after)
		if err != nil || got != want {
			t.Fatalf("%s: Fingerprint = %s, %v; want %s", name, got, err, want)
		}
		if per := after.TotalAlloc - before.TotalAlloc; per > uint64(len(payload))/20 {
			t.Errorf("%s: fingerprinting %d bytes allocates %d bytes, more than a twentieth of it", name, len(payload), per)
		}
	}
}
