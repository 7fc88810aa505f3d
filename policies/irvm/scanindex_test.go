package irvm

import (
	"context"
	"fmt"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// groupBy is the shape of lib.rego's name indexes: a group-by over pairs, which the IR
// plans as a scan of the pairs inside a scan of the pairs.
const groupBy = `package g
import rego.v1
pairs := [[n, i] | some i, r in input.rs; n := r.name]
by_name := {n: {u | some p in pairs; p[0] == n; u := p[1]} | some q in pairs; n := q[0]}
by_type[t] := rs if {
	some t in {"a", "b", "c"}
	rs := [r | some r in input.rs; r.type == t]
}
`

// groupInput has n resources over n/4 names (duplicates included) and three types.
func groupInput(n int) ast.Value {
	rs := make([]*ast.Term, n)
	for i := range rs {
		rs[i] = ast.ObjectTerm(
			ast.Item(ast.StringTerm("name"), ast.StringTerm(fmt.Sprintf("n%d", i%(n/4+1)))),
			ast.Item(ast.StringTerm("type"), ast.StringTerm(string(rune('a'+i%3)))),
		)
	}
	return ast.NewObject(ast.Item(ast.StringTerm("rs"), ast.ArrayTerm(rs...)))
}

func groupProgram(t testing.TB, noIndex bool) *Program {
	t.Helper()
	prog, err := Load(planOf(t, map[string]string{"g.rego": groupBy}, "g/by_name", "g/by_type"))
	if err != nil {
		t.Fatal(err)
	}
	prog.noScanIndex = noIndex
	return prog
}

// evalTicks evaluates both entrypoints and returns their results and the number of scan
// iterations the evaluation ran.
func evalTicks(t testing.TB, prog *Program, input ast.Value) ([]ResultSet, int) {
	t.Helper()
	s := newState(prog)
	rs, err := prog.eval(context.Background(), s, input, ast.NewObject(), []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	return rs, s.ticks
}

func TestScanIndexSameResults(t *testing.T) {
	indexed, plain := groupProgram(t, false), groupProgram(t, true)
	for _, n := range []int{0, 1, 7, 300} {
		input := groupInput(n)
		got, _ := evalTicks(t, indexed, input)
		want, _ := evalTicks(t, plain, input)
		for _, i := range differingPlans(t, got, want) {
			t.Errorf("n=%d, plan %d: indexed %v, plain %v", n, i, got[i], want[i])
		}
		if n == 300 {
			// And topdown agrees on the values.
			modules := map[string]string{"g.rego": groupBy}
			for i, ep := range []string{"g/by_name", "g/by_type"} {
				td := topdownOutcome(t, modules, ep, input, ast.NewObject())
				ir := got[i].Values()[0].String()
				if ir != td {
					t.Errorf("%s: interpreter and topdown differ", ep)
				}
			}
		}
	}
}

// TestScanIndexIsLinear counts scan iterations (not time): quadrupling the input
// quadruples them with the index and multiplies them by about 16 without (measured on
// smaller inputs, as the quadratic scan is slow).
func TestScanIndexIsLinear(t *testing.T) {
	indexed, plain := groupProgram(t, false), groupProgram(t, true)
	_, i2 := evalTicks(t, indexed, groupInput(2000))
	_, i8 := evalTicks(t, indexed, groupInput(8000))
	_, p2 := evalTicks(t, plain, groupInput(500))
	_, p8 := evalTicks(t, plain, groupInput(2000))
	t.Logf("scan iterations: indexed %d -> %d, plain %d -> %d", i2, i8, p2, p8)
	if r := float64(i8) / float64(i2); r > 4.5 {
		t.Errorf("indexed iterations grew %.1fx for 4x the input, want linear", r)
	}
	if r := float64(p8) / float64(p2); r < 10 {
		t.Errorf("plain iterations grew only %.1fx: the test no longer exercises a quadratic scan", r)
	}
}

// BenchmarkGroupBy evaluates the group-by on 2,000 and 8,000 resources, with and without
// the scan index: with it, 4x the input costs about 4x the time.
func BenchmarkGroupBy(b *testing.B) {
	for _, noIndex := range []bool{false, true} {
		for _, n := range []int{2000, 8000} {
			if noIndex && n > 2000 && testing.Short() {
				continue
			}
			b.Run(fmt.Sprintf("index=%v/n=%d", !noIndex, n), func(b *testing.B) {
				prog, input := groupProgram(b, noIndex), groupInput(n)
				b.ResetTimer()
				for range b.N {
					if _, err := prog.Eval(context.Background(), input, ast.NewObject(), []int{0, 1}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestFilterOf recognises filtering scans and refuses look-alikes: a comparison with a
// local the block writes, with the scan key, or with a local the key overwrote.
func TestFilterOf(t *testing.T) {
	zero := ast.InternedTerm(0)
	const key, val, outer = 3, 4, 2
	scan := func(body ...stmt) *stmt {
		return &stmt{op: opScan, target: 1, key: key, value: val, block: &block{stmts: body}}
	}
	assign := func(src, dst int) stmt { return stmt{op: opAssignVar, a: operand{local: src}, target: dst} }
	cases := []struct {
		name string
		scan *stmt
		path string // "" when not a filter
	}{
		{"p[0] == outer", scan(assign(key, 5), assign(val, 6), stmt{op: opMakeNumber, term: zero, target: 7},
			stmt{op: opDot, a: operand{local: 6}, b: operand{local: 7}, target: 8},
			stmt{op: opEqual, a: operand{local: 8}, b: operand{local: outer}}), "[0]"},
		{"element == constant", scan(assign(val, 6), stmt{op: opEqual, a: operand{local: -1, term: ast.StringTerm("x")}, b: operand{local: 6}}), "[]"},
		{"outer written in the block", scan(assign(val, 6), stmt{op: opEqual, a: operand{local: 6}, b: operand{local: outer}},
			assign(val, outer)), ""},
		{"key compared", scan(assign(key, 5), stmt{op: opEqual, a: operand{local: 5}, b: operand{local: outer}}), ""},
		{"derived local overwritten by the key", scan(assign(val, 6), assign(key, 6),
			stmt{op: opEqual, a: operand{local: 6}, b: operand{local: outer}}), ""},
		{"other statement first", scan(stmt{op: opMakeObject, target: 9}, assign(val, 6),
			stmt{op: opEqual, a: operand{local: 6}, b: operand{local: outer}}), ""},
	}
	for _, tc := range cases {
		f := filterOf(tc.scan)
		got := ""
		if f != nil {
			got = f.pathKey
		}
		if got != tc.path {
			t.Errorf("%s: filter path %q, want %q", tc.name, got, tc.path)
		}
	}
}
