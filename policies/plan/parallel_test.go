package plan

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// decodeTerms decodes the array at data[pos] with decodeArray, each element as a term.
func decodeTerms(data []byte, pos int) ([]*ast.Term, int, bool) {
	return decodeArray(data, pos, func(d *valueDecoder, out **ast.Term) bool {
		var ok bool
		*out, ok = d.value(false)
		return ok
	})
}

// TestDecodeArray checks decodeArray against encoding/json on arrays whose segment
// guesses are right, wrong (the elements' signature also appears inside elements or
// after the array) or impossible, with one and several processors.
func TestDecodeArray(t *testing.T) {
	elems := func(n int, indent bool) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString(",")
			}
			if indent {
				b.WriteString("\n  ")
			}
			// Every element but each seventh nests objects with the same first key: a
			// compact signature matches inside them.
			nested := "[]"
			if i%7 != 0 {
				nested = fmt.Sprintf(`[{"k": %d}, {"k": "x,{\"k\":"}]`, i)
			}
			fmt.Fprintf(&b, `{"k": %d, "s": "e%d", "n": %s}`, i, i, nested)
		}
		return b.String()
	}
	tests := []struct {
		name, doc string
		want      int
		segments  bool // the guessed segments hold (else the array is cut first)
	}{
		{"indented", `{"a": [` + elems(3000, true) + "\n]}", 3000, true},
		{"compact, signature inside elements", `{"a":[` + strings.NewReplacer(": ", ":", ", ", ",").Replace(elems(3000, false)) + `]}`, 3000, false},
		{"followed by a like array", `{"a": [` + elems(2000, true) + "\n], \"b\": [" + elems(2000, true) + "\n]}", 2000, true},
		{"scalars", `{"a": [` + strings.Repeat(`1, "x", null, `, 500) + `2]}`, 1501, false},
		{"small", `{"a": [` + elems(10, true) + `]}`, 10, false},
		{"empty", `{"a": [ ]}`, 0, false},
	}
	for _, procs := range []int{1, 4} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/%d procs", tt.name, procs), func(t *testing.T) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				data := []byte(tt.doc)
				pos := strings.Index(tt.doc, "[")
				got, end, ok := decodeTerms(data, pos)
				if !ok {
					t.Fatal("decodeArray failed on a valid array")
				}
				var want struct {
					A []any `json:"a"`
				}
				if err := json.Unmarshal(data, &want); err != nil {
					t.Fatal(err)
				}
				if len(got) != tt.want || len(want.A) != tt.want {
					t.Fatalf("%d elements, encoding/json %d, want %d", len(got), len(want.A), tt.want)
				}
				for i, term := range got {
					w, err := ast.InterfaceToValue(want.A[i])
					if err != nil {
						t.Fatal(err)
					}
					if term.Value.Compare(w) != 0 {
						t.Fatalf("element %d = %v, want %v", i, term, w)
					}
				}
				if _, _, ok := trySegments(data, pos); ok != tt.segments {
					t.Errorf("the segments held: %v, want %v", ok, tt.segments)
				}
				if rest := strings.TrimSpace(tt.doc[end:]); !strings.HasPrefix(rest, "}") && !strings.HasPrefix(rest, ",") {
					t.Fatalf("the array ends at %d, before %q", end, rest[:min(20, len(rest))])
				}
			})
		}
	}
}

// trySegments runs decodeArray's segment path alone on the rest of the array at
// data[pos], after its first minPerWorker elements.
func trySegments(data []byte, pos int) ([]*ast.Term, int, bool) {
	fn := func(d *valueDecoder, out **ast.Term) bool {
		var ok bool
		*out, ok = d.value(false)
		return ok
	}
	d := newValueDecoder()
	d.reset(data)
	d.pos = pos + 1
	second := -1
	for n := 1; n <= minPerWorker; n++ {
		var t *ast.Term
		if !fn(d, &t) {
			return nil, 0, false
		}
		d.skipSpace()
		if data[d.pos] != ',' {
			return nil, 0, false
		}
		if n == 1 {
			second = d.pos
		}
		d.pos++
	}
	return decodeSegments(data, elementSignature(data[second:]), d.pos, 4, (d.pos-pos)/minPerWorker, fn)
}

func TestDecodeArrayRejectsMalformedArrays(t *testing.T) {
	for _, doc := range []string{`[1, 2`, `[1 2]`, `[1,,2]`, `[1,]`, `[,1]`, `[1, "x]`, `[{"a": 1]`} {
		if _, _, ok := decodeTerms([]byte(doc), 0); ok {
			t.Errorf("%s: accepted", doc)
		}
	}
}
