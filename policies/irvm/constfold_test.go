package irvm

import (
	"context"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/ir"
)

// TestFoldConstants: collections of constants become one constant at load; collections
// with a variable element, returned by their function or filled elsewhere stay built at
// run time; a folded constant is the same term in every evaluation and no evaluation
// changes it.
func TestFoldConstants(t *testing.T) {
	module := `package t
import rego.v1
in_set contains r.name if { some r in input.rs; r.env in {null, "", 0} }
path contains v if { some r in input.rs; v := object.get(r, ["labels", "env"], "none") }
variable contains v if { some r in input.rs; v := [r.name, "const"] }
nested contains r.name if { some r in input.rs; object.get(r, "p", null) in {null, {}} }
`
	prog, err := Load(planOf(t, map[string]string{"t.rego": module}, "t/in_set", "t/path", "t/variable", "t/nested"))
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string][]*ast.Term{}
	makes := map[string]int{}
	for _, fn := range append(append([]*function(nil), prog.funcs...), prog.plans...) {
		rule := "t/" + fn.name[strings.LastIndex(fn.name, ".")+1:] // g0.data.t.in_set, t/in_set
		for _, b := range fn.blocks {
			walkStmts(b, func(st *stmt) {
				switch st.op {
				case opAssignConst:
					consts[rule] = append(consts[rule], st.term)
				case opMakeArray, opMakeSet, opMakeObject:
					makes[rule]++
				}
			})
		}
	}
	for plan, want := range map[string]string{"t/in_set": `{null, "", 0}`, "t/path": `["labels", "env"]`} {
		if len(consts[plan]) != 1 || consts[plan][0].Value.Compare(ast.MustParseTerm(want).Value) != 0 {
			t.Errorf("%s: folded %v, want %s", plan, consts[plan], want)
		}
	}
	found := false
	for _, c := range consts["t/nested"] {
		found = found || c.Value.Compare(ast.MustParseTerm(`{null, {}}`).Value) == 0
	}
	if !found {
		t.Errorf("t/nested: folded %v, want {null, {}} among them (a set of a folded object)", consts["t/nested"])
	}
	if len(consts["t/variable"]) != 0 || makes["t/variable"] == 0 {
		t.Errorf("t/variable: folded %v (%d collections still built), want [r.name, \"const\"] built each time", consts["t/variable"], makes["t/variable"])
	}
	input := ast.MustParseTerm(`{"rs": [{"name": "a", "env": "", "p": {}}, {"name": "b", "env": "x", "labels": {"env": "prod"}}, {"name": "c", "p": 1}]}`).Value
	var plans []int
	for i := range prog.plans {
		plans = append(plans, i)
	}
	first, err := prog.Eval(context.Background(), input, ast.NewObject(), plans)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		again, err := prog.Eval(context.Background(), input, ast.NewObject(), plans)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range differingPlans(t, again, first) {
			t.Errorf("plan %d: %v, first evaluation %v", i, again[i].Terms(), first[i].Terms())
		}
	}
	for plan, want := range map[string]string{"t/in_set": `{null, "", 0}`, "t/path": `["labels", "env"]`} {
		if got := consts[plan][0]; got.Value.Compare(ast.MustParseTerm(want).Value) != 0 {
			t.Errorf("%s: the folded constant changed to %v", plan, got)
		}
	}

	// f(input, data) := c where c is [1] filled, then returned: not folded.
	fn := &ir.Func{Name: "f", Params: []ir.Local{0, 1}, Return: 5, Blocks: blocks(
		blk(&ir.MakeArrayStmt{Target: 5}, &ir.MakeNumberIntStmt{Value: 1, Target: 6}, &ir.ArrayAppendStmt{Value: loc(6), Array: 5}),
		blk(&ir.ReturnLocalStmt{Source: 5}),
	)}
	// g(input, data): c := []; c is filled in a later block: not folded.
	gn := &ir.Func{Name: "g", Params: []ir.Local{0, 1}, Return: 7, Blocks: blocks(
		blk(&ir.MakeArrayStmt{Target: 5}, &ir.MakeNumberIntStmt{Value: 1, Target: 6}, &ir.ArrayAppendStmt{Value: loc(6), Array: 5}),
		blk(&ir.ArrayAppendStmt{Value: loc(6), Array: 5}, &ir.LenStmt{Source: loc(5), Target: 7}),
		blk(&ir.ReturnLocalStmt{Source: 7}),
	)}
	p2, err := Load(&ir.Policy{Static: &ir.Static{}, Plans: &ir.Plans{Plans: []*ir.Plan{}}, Funcs: &ir.Funcs{Funcs: []*ir.Func{fn, gn}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range p2.funcs {
		for _, b := range f.blocks {
			walkStmts(b, func(st *stmt) {
				if st.op == opAssignConst {
					t.Errorf("%s: folded %v, a collection it returns or fills elsewhere", f.name, st.term)
				}
			})
		}
	}
}
