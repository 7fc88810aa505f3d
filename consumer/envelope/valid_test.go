package envelope

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// checkValidJSON is validJSON's invariant: for any text it decides as
// encoding/json's Valid does.
func checkValidJSON(t *testing.T, data []byte) {
	t.Helper()
	if got, want := validJSON(data), json.Valid(data); got != want {
		t.Fatalf("validJSON(%q) = %v, encoding/json's Valid says %v", data, got, want)
	}
}

// TestValidJSONIsEncodingJSONValid checks the invariant on generated texts
// (genJSON's values, white space around them) and on each with one byte
// cut off its end, removed, doubled or replaced by a byte that matters to
// JSON's grammar; and at the nesting bound, where both must turn.
func TestValidJSONIsEncodingJSONValid(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 2))
	grammar := []byte("{}[]:,\"\\ \t\n\r\x00\x01\x1f\x7f\xff0123456789-+.eEtruefalsnu/")
	for range 4000 {
		var b strings.Builder
		b.WriteString([]string{"", " ", "\n\t", "\r\n "}[r.IntN(4)])
		genJSON(r, &b, 0)
		b.WriteString([]string{"", " ", "\n"}[r.IntN(3)])
		data := []byte(b.String())
		checkValidJSON(t, data)
		if len(data) == 0 {
			continue
		}
		i := r.IntN(len(data))
		for _, mutated := range [][]byte{
			data[:i],
			append(append([]byte{}, data[:i]...), data[i+1:]...),
			append(append([]byte{}, data[:i+1]...), data[i:]...),
			append(append(append([]byte{}, data[:i]...), grammar[r.IntN(len(grammar))]), data[i+1:]...),
		} {
			checkValidJSON(t, mutated)
		}
	}
	for _, depth := range []int{9999, 10000, 10001, 10002} {
		checkValidJSON(t, []byte(strings.Repeat("[", depth)+strings.Repeat("]", depth)))
		checkValidJSON(t, []byte(strings.Repeat(`{"a":`, depth)+"1"+strings.Repeat("}", depth)))
		checkValidJSON(t, []byte(strings.Repeat(`[{"a":`, depth/2)+"1"+strings.Repeat("}]", depth/2)))
	}
}

// FuzzValidJSON checks the invariant on any text.
func FuzzValidJSON(f *testing.F) {
	for _, seed := range []string{
		`{"a":1,"a":[true,false,null],"\u0061":"x\/y"}`, "\"bad\xffutf8\"", `"\ud800"`, `"\udc00\ud800"`,
		`-0.5e-3`, `01`, `1.`, `.5`, `1e`, `"\x"`, `"\u12"`, "\"tab\there\"", `{"a" 1}`, `[1,]`, `{} {}`, ` `, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkValidJSON(t, data) })
}
