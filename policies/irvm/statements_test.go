package irvm

import (
	"context"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/ir"
)

// These tests run hand-written IR for the statements and control flow the planner
// emits rarely or never for eventpipe's rules, with the semantics of OPA's Wasm compiler.

func loc(l int) ir.Operand              { return ir.Operand{Value: ir.Local(l)} }
func str(i int) ir.Operand              { return ir.Operand{Value: ir.StringIndex(i)} }
func blk(s ...ir.Stmt) *ir.Block        { return &ir.Block{Stmts: s} }
func blocks(b ...*ir.Block) []*ir.Block { return b }

// strs are the string constants of the hand-written policies.
var strs = []string{"result", "a", "b", "after", "x", "héllo", "3", "g0", "p", "f"}

// runPlan evaluates a one-plan policy whose plan adds local 2 to the result set, and
// returns the result set as a string.
func runPlan(t *testing.T, input string, funcs []*ir.Func, body ...ir.Stmt) string {
	t.Helper()
	var sc []*ir.StringConst
	for _, s := range strs {
		sc = append(sc, &ir.StringConst{Value: s})
	}
	pol := &ir.Policy{
		Static: &ir.Static{Strings: sc},
		Plans:  &ir.Plans{Plans: []*ir.Plan{{Name: "p", Blocks: blocks(blk(body...))}}},
		Funcs:  &ir.Funcs{Funcs: funcs},
	}
	prog, err := Load(pol)
	if err != nil {
		t.Fatal(err)
	}
	var in ast.Value
	if input != "" {
		in = ast.MustParseTerm(input).Value
	}
	rs, err := prog.Eval(context.Background(), in, ast.NewObject(), []int{0})
	if err != nil {
		return "error: " + err.Error()
	}
	return ast.NewSet(rs[0].Terms()...).String()
}

func TestBreakLevels(t *testing.T) {
	// block: L2 := []; { scan input: append v; v == 2 (else continue); break K }; append "after"
	scanWith := func(k uint32) []ir.Stmt {
		return []ir.Stmt{
			&ir.MakeArrayStmt{Target: 2},
			&ir.MakeNumberIntStmt{Value: 2, Target: 9},
			&ir.BlockStmt{Blocks: blocks(blk(
				&ir.ScanStmt{Source: 0, Key: 3, Value: 4, Block: blk(
					&ir.ArrayAppendStmt{Array: 2, Value: loc(4)},
					&ir.EqualStmt{A: loc(4), B: loc(9)},
					&ir.BreakStmt{Index: k},
				)},
				&ir.ArrayAppendStmt{Array: 2, Value: str(3)},
			))},
			&ir.ResultSetAddStmt{Value: 2},
		}
	}
	for _, tc := range []struct {
		k    uint32
		want string
	}{
		{0, `{[1, 2, 3, 4, "after"]}`}, // ends the iteration
		{1, `{[1, 2, "after"]}`},       // ends the scan
		{2, `{[1, 2]}`},                // ends the block holding the scan
		{3, `set()`},                   // ends the plan's block too
	} {
		if got := runPlan(t, `[1, 2, 3, 4]`, nil, scanWith(tc.k)...); got != tc.want {
			t.Errorf("break %d in a scan: %s, want %s", tc.k, got, tc.want)
		}
	}
}

func TestNotAndBlockBreaks(t *testing.T) {
	cases := []struct {
		name string
		body []ir.Stmt
		want string
	}{
		{"not of an undefined block holds", []ir.Stmt{
			&ir.NotStmt{Block: blk(&ir.DotStmt{Source: loc(0), Key: str(4), Target: 5})},
			&ir.AssignVarStmt{Source: str(1), Target: 2},
			&ir.ResultSetAddStmt{Value: 2},
		}, `{"a"}`},
		{"not of a defined block fails", []ir.Stmt{
			&ir.NotStmt{Block: blk(&ir.DotStmt{Source: loc(0), Key: str(1), Target: 5})},
			&ir.AssignVarStmt{Source: str(1), Target: 2},
			&ir.ResultSetAddStmt{Value: 2},
		}, `set()`},
		{"break 1 in a not ends the enclosing block", []ir.Stmt{
			&ir.AssignVarStmt{Source: str(1), Target: 2},
			&ir.BlockStmt{Blocks: blocks(blk(
				&ir.NotStmt{Block: blk(&ir.BreakStmt{Index: 1})},
				&ir.AssignVarStmt{Source: str(2), Target: 2},
			))},
			&ir.ResultSetAddStmt{Value: 2},
		}, `{"a"}`},
		{"every block of a BlockStmt runs, a break 0 ends only its own", []ir.Stmt{
			&ir.MakeArrayStmt{Target: 2},
			&ir.BlockStmt{Blocks: blocks(
				blk(&ir.ArrayAppendStmt{Array: 2, Value: str(1)}, &ir.BreakStmt{}, &ir.ArrayAppendStmt{Array: 2, Value: str(4)}),
				blk(&ir.ArrayAppendStmt{Array: 2, Value: str(2)}),
			)},
			&ir.ResultSetAddStmt{Value: 2},
		}, `{["a", "b"]}`},
		{"a break 1 in a BlockStmt skips its later blocks and the rest of the enclosing block", []ir.Stmt{
			&ir.MakeArrayStmt{Target: 2},
			&ir.BlockStmt{Blocks: blocks(blk(
				&ir.BlockStmt{Blocks: blocks(
					blk(&ir.ArrayAppendStmt{Array: 2, Value: str(1)}, &ir.BreakStmt{Index: 1}),
					blk(&ir.ArrayAppendStmt{Array: 2, Value: str(2)}),
				)},
				&ir.ArrayAppendStmt{Array: 2, Value: str(4)},
			))},
			&ir.ResultSetAddStmt{Value: 2},
		}, `{["a"]}`},
	}
	for _, tc := range cases {
		if got := runPlan(t, `{"a": 1}`, nil, tc.body...); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestScalarStatements(t *testing.T) {
	got := runPlan(t, `{"a": [1, 2]}`, nil,
		&ir.MakeArrayStmt{Target: 2},
		&ir.NopStmt{},
		&ir.MakeNumberIntStmt{Value: 7, Target: 5},
		&ir.AssignIntStmt{Value: 8, Target: 5},
		&ir.ArrayAppendStmt{Array: 2, Value: loc(5)},
		&ir.LenStmt{Source: str(5), Target: 6}, // bytes, as the Wasm runtime counts
		&ir.ArrayAppendStmt{Array: 2, Value: loc(6)},
		&ir.DotStmt{Source: loc(0), Key: str(1), Target: 7},
		&ir.LenStmt{Source: loc(7), Target: 6},
		&ir.ArrayAppendStmt{Array: 2, Value: loc(6)},
		&ir.MakeNumberRefStmt{Index: 6, Target: 8},
		&ir.ArrayAppendStmt{Array: 2, Value: loc(8)},
		&ir.MakeNullStmt{Target: 8},
		&ir.ArrayAppendStmt{Array: 2, Value: loc(8)},
		&ir.BlockStmt{Blocks: blocks(
			blk(&ir.IsArrayStmt{Source: loc(7)}, &ir.ArrayAppendStmt{Array: 2, Value: str(1)}),
			blk(&ir.IsArrayStmt{Source: str(1)}, &ir.ArrayAppendStmt{Array: 2, Value: str(4)}),
			blk(&ir.IsObjectStmt{Source: loc(0)}, &ir.ArrayAppendStmt{Array: 2, Value: str(2)}),
			blk(&ir.IsSetStmt{Source: loc(0)}, &ir.ArrayAppendStmt{Array: 2, Value: str(4)}),
			blk(&ir.ResetLocalStmt{Target: 7}, &ir.IsUndefinedStmt{Source: 7}, &ir.ArrayAppendStmt{Array: 2, Value: str(3)}),
			blk(&ir.IsDefinedStmt{Source: 7}, &ir.ArrayAppendStmt{Array: 2, Value: str(4)}),
		)},
		&ir.ResultSetAddStmt{Value: 2},
	)
	if want := `{[8, 6, 2, 3, null, "a", "b", "after"]}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestWithUpsertsAndRestores(t *testing.T) {
	got := runPlan(t, `{"a": {"c": 1}, "z": 2}`, nil,
		&ir.MakeArrayStmt{Target: 2},
		&ir.WithStmt{Local: 0, Path: []int{1, 2}, Value: str(4), Block: blk(
			&ir.ArrayAppendStmt{Array: 2, Value: loc(0)},
		)},
		&ir.ArrayAppendStmt{Array: 2, Value: loc(0)},
		&ir.WithStmt{Local: 0, Value: str(4), Block: blk(
			&ir.ArrayAppendStmt{Array: 2, Value: loc(0)},
			&ir.DotStmt{Source: loc(0), Key: str(1), Target: 5}, // undefined: the with fails
		)},
		&ir.ArrayAppendStmt{Array: 2, Value: str(3)},
		&ir.ResultSetAddStmt{Value: 2},
	)
	if want := `set()`; got != want {
		t.Errorf("an undefined with block: got %s, want %s", got, want)
	}
	got = runPlan(t, `{"a": {"c": 1}, "z": 2}`, nil,
		&ir.MakeArrayStmt{Target: 2},
		&ir.WithStmt{Local: 0, Path: []int{1, 2}, Value: str(4), Block: blk(
			&ir.ArrayAppendStmt{Array: 2, Value: loc(0)},
		)},
		&ir.ArrayAppendStmt{Array: 2, Value: loc(0)},
		&ir.ResultSetAddStmt{Value: 2},
	)
	if want := `{[{"a": {"b": "x", "c": 1}, "z": 2}, {"a": {"c": 1}, "z": 2}]}`; got != want {
		t.Errorf("with upsert: got %s, want %s", got, want)
	}
}

func TestCallDynamic(t *testing.T) {
	// g0.p.f(input, data) := input.a; called dynamically by path ["g0", "p", <input.which>].
	f := &ir.Func{Name: "g0.data.p.f", Params: []ir.Local{0, 1}, Return: 2, Path: []string{"g0", "p", "f"}, Blocks: blocks(
		blk(&ir.DotStmt{Source: loc(0), Key: str(1), Target: 3}, &ir.AssignVarStmt{Source: loc(3), Target: 2}),
		blk(&ir.ReturnLocalStmt{Source: 2}),
	)}
	body := func() []ir.Stmt {
		return []ir.Stmt{
			&ir.AssignVarStmt{Source: str(3), Target: 2},
			&ir.DotStmt{Source: loc(0), Key: str(8), Target: 5},
			&ir.BlockStmt{Blocks: blocks(blk(
				&ir.BlockStmt{Blocks: blocks(blk(
					&ir.BlockStmt{Blocks: blocks(blk(
						&ir.CallDynamicStmt{Path: []ir.Operand{str(7), str(8), loc(5)}, Args: []ir.Local{0, 1}, Result: 2},
					))},
				))},
			))},
			&ir.ResultSetAddStmt{Value: 2},
		}
	}
	for _, tc := range []struct{ input, want string }{
		{`{"p": "f", "a": "value"}`, `{"value"}`},    // found and defined
		{`{"p": "nope", "a": "value"}`, `{"after"}`}, // not found: only its block ends
		{`{"p": "f"}`, `set()`},                      // found, undefined: three blocks end
	} {
		if got := runPlan(t, tc.input, []*ir.Func{f}, body()...); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.input, got, tc.want)
		}
	}
}

func TestLoadRejectsUnknownCalls(t *testing.T) {
	pol := &ir.Policy{
		Static: &ir.Static{},
		Plans: &ir.Plans{Plans: []*ir.Plan{{Name: "p", Blocks: blocks(blk(
			&ir.CallStmt{Func: "no.such.function", Result: 2},
		))}}},
	}
	_, err := Load(pol)
	if err == nil || !strings.Contains(err.Error(), "no.such.function") {
		t.Fatalf("Load: %v, want an error naming the function", err)
	}
}

func TestTwoParameterFunctionsAreMemoized(t *testing.T) {
	// g(input, data) := [] (a new array each time it runs); h(input, data, x) := [].
	newArray := func(name string, params ...ir.Local) *ir.Func {
		return &ir.Func{Name: name, Params: params, Return: 5, Blocks: blocks(
			blk(&ir.MakeArrayStmt{Target: 5}),
			blk(&ir.ReturnLocalStmt{Source: 5}),
		)}
	}
	pol := &ir.Policy{
		Static: &ir.Static{},
		Plans:  &ir.Plans{Plans: []*ir.Plan{}},
		Funcs:  &ir.Funcs{Funcs: []*ir.Func{newArray("g", 0, 1), newArray("h", 0, 1, 2)}},
	}
	prog, err := Load(pol)
	if err != nil {
		t.Fatal(err)
	}
	s := newState(prog)
	s.reset(context.Background())
	frame := s.push(3)
	args2 := []operand{{local: 0}, {local: 1}}
	args3 := []operand{{local: 0}, {local: 1}, {local: 2}}
	g1, _ := s.call(frame, 0, args2)
	g2, _ := s.call(frame, 0, args2)
	h1, _ := s.call(frame, 1, args3)
	h2, _ := s.call(frame, 1, args3)
	if g1 == nil || g1 != g2 {
		t.Errorf("a two-parameter function ran twice in one evaluation")
	}
	if h1 == h2 {
		t.Errorf("a three-parameter function was memoized")
	}
	s.memo = append(s.memo, make([]memoEntry, len(prog.funcs))) // as WithStmt pushes
	if g3, _ := s.call(frame, 0, args2); g3 == g1 {
		t.Errorf("a memoized result crossed a with frame")
	}
}

// TestIntTerm: intTerm gives the integer's term (from its table below maxIntTerms, the
// same term each time), as OPA numbers them.
func TestIntTerm(t *testing.T) {
	s := newState(&Program{})
	for _, i := range []int{0, 1, 511, 512, 513, 10000, maxIntTerms - 1, maxIntTerms, -1, -600} {
		got := s.intTerm(i)
		if want := ast.InternedTerm(i); got.Value.Compare(want.Value) != 0 || got.String() != want.String() {
			t.Errorf("intTerm(%d) = %v, want %v", i, got, want)
		}
		if i >= 0 && i < maxIntTerms && s.intTerm(i) != got {
			t.Errorf("intTerm(%d) gave a new term the second time", i)
		}
	}
}
