package irvm

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/compile"
	"github.com/open-policy-agent/opa/v1/ir"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// planOf compiles Rego modules into an IR policy with the given entrypoints ("pkg/rule").
func planOf(t testing.TB, modules map[string]string, entrypoints ...string) *ir.Policy {
	t.Helper()
	b := &bundle.Bundle{Data: map[string]any{}}
	for name, src := range modules {
		m, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatal(err)
		}
		b.Modules = append(b.Modules, bundle.ModuleFile{Path: name, URL: name, Raw: []byte(src), Parsed: m})
	}
	c := compile.New().WithTarget(compile.TargetPlan).WithEntrypoints(entrypoints...).WithBundle(b).WithRegoVersion(ast.RegoV1)
	if err := c.Build(context.Background()); err != nil {
		t.Fatal(err)
	}
	var pol ir.Policy
	if err := json.Unmarshal(c.Bundle().PlanModules[0].Raw, &pol); err != nil {
		t.Fatal(err)
	}
	return &pol
}

// outcome is one entrypoint's result: its value as JSON, "undefined", or "error: ...".
func irOutcome(t testing.TB, prog *Program, entrypoint string, input, data ast.Value) string {
	t.Helper()
	idx, ok := prog.Plan(entrypoint)
	if !ok {
		t.Fatalf("no plan %s among %v", entrypoint, prog.Plans())
	}
	rs, err := prog.Eval(context.Background(), input, data, []int{idx})
	if err != nil {
		return "error: " + errorCode(err)
	}
	if rs[0].Len() == 0 {
		return "undefined"
	}
	if rs[0].Len() != 1 {
		t.Fatalf("%s: %d results", entrypoint, rs[0].Len())
	}
	terms := rs[0].Terms()
	if v := rs[0].Values(); len(v) != 1 || !v[0].Equal(terms[0].Value.(ast.Object).Get(ast.StringTerm("result"))) {
		t.Fatalf("%s: Values %v disagree with Terms %v", entrypoint, v, terms)
	}
	return terms[0].Value.(ast.Object).Get(ast.StringTerm("result")).String()
}

func topdownOutcome(t testing.TB, modules map[string]string, entrypoint string, input, data ast.Value) string {
	t.Helper()
	parsed := map[string]*ast.Module{}
	for name, src := range modules {
		parsed[name] = ast.MustParseModuleWithOpts(src, ast.ParserOptions{RegoVersion: ast.RegoV1})
	}
	c := ast.NewCompiler()
	if c.Compile(parsed); c.Failed() {
		t.Fatal(c.Errors)
	}
	d := map[string]any{}
	if err := json.Unmarshal([]byte(data.String()), &d); err != nil {
		t.Fatal(err)
	}
	store := inmem.NewFromObject(d)
	ctx := context.Background()
	txn := storage.NewTransactionOrDie(ctx, store)
	defer store.Abort(ctx, txn)
	q := topdown.NewQuery(ast.MustParseBody("x = data." + strings.ReplaceAll(entrypoint, "/", "."))).
		WithCompiler(c).WithStore(store).WithTransaction(txn)
	if input != nil {
		q = q.WithInput(ast.NewTerm(input))
	}
	rs, err := q.Run(ctx)
	if err != nil {
		return "error: " + errorCode(err)
	}
	if len(rs) == 0 {
		return "undefined"
	}
	return rs[0][ast.Var("x")].String()
}

// errorCode reduces an evaluation error to its OPA error code, the part both evaluators
// must agree on.
func errorCode(err error) string {
	msg := err.Error()
	for _, code := range []string{"eval_conflict_error", "eval_type_error", "eval_builtin_error"} {
		if strings.Contains(msg, code) {
			return code
		}
	}
	return msg
}

// differentialCases are Rego programs exercising the statements the planner emits, each
// run on several inputs by the interpreter and by topdown.
var differentialCases = []struct {
	name   string
	module string
	rules  []string
	inputs []string
	data   string
}{
	{
		name: "complete rules, else, not, comparisons",
		module: `package t
import rego.v1
default allow := false
allow if { input.user == "admin" }
allow if { input.level >= 3; not input.blocked }
grade := "a" if { input.level > 5 } else := "b" if { input.level > 2 } else := "c"
not_admin if { input.user != "admin" }
num_eq if { input.level == 3.0 }`,
		rules:  []string{"allow", "grade", "not_admin", "num_eq"},
		inputs: []string{`{"user": "admin"}`, `{"user": "bob", "level": 3}`, `{"user": "bob", "level": 7, "blocked": true}`, `{}`, `"scalar"`},
	},
	{
		name: "partial sets and objects, comprehensions, some/in over collections",
		module: `package t
import rego.v1
names contains n if { some r in input.rs; n := r.name }
by_name[n] := r.kind if { some r in input.rs; n := r.name }
idx[i] := r if { some i, r in input.rs; r.kind == "a" }
keys contains k if { some k, _ in input.obj }
members contains x if { some x in {1, 2, 3}; x > 1 }
arr := [x | some x in input.rs; x.kind == "a"]
set := {x.name | some x in input.rs}
obj := {x.name: count(x.name) | some x in input.rs}
nested := {k: {v | some p in input.pairs; p[0] == k; v := p[1]} | some q in input.pairs; k := q[0]}
in_set if { "b" in {n | some n in names} }`,
		rules: []string{"names", "by_name", "idx", "keys", "members", "arr", "set", "obj", "nested", "in_set"},
		inputs: []string{
			`{"rs": [{"name": "x", "kind": "a"}, {"name": "yy", "kind": "b"}, {"name": "b", "kind": "a"}], "obj": {"p": 1, "q": 2}, "pairs": [["a", 1], ["b", 2], ["a", 3], [1, 4], [1.0, 5]]}`,
			`{"rs": [], "obj": [], "pairs": []}`,
			`{"rs": "no", "obj": {"z": null}, "pairs": [["a"], "x"]}`,
			`{}`,
		},
	},
	{
		name: "conflicts",
		module: `package t
import rego.v1
one := input.a
one := input.b
obj[k] := v if { some k, v in input.kv }
obj[k] := "fixed" if { some k, _ in input.kv }`,
		rules:  []string{"one", "obj"},
		inputs: []string{`{"a": 1, "b": 1}`, `{"a": 1, "b": 2}`, `{"kv": {"x": "fixed"}}`, `{"kv": {"x": "other"}}`},
	},
	{
		name: "functions, builtin errors as undefined, every",
		module: `package t
import rego.v1
double(x) := 2 * x
pick(x) := "big" if { x > 10 } else := "small"
f := [double(x) | some x in input.nums]
g := [pick(x) | some x in input.nums]
bad := to_number(input.s)
words := split(input.s, "-")
msg := sprintf("%s has %d", [input.s, count(input.nums)])
all_pos if { every x in input.nums { x > 0 } }
obj_every if { every k, v in input.o { k != v } }`,
		rules:  []string{"f", "g", "bad", "words", "msg", "all_pos", "obj_every"},
		inputs: []string{`{"nums": [1, 5, 20], "s": "a-b", "o": {"a": "b"}}`, `{"nums": [0, -1], "s": "12", "o": {"a": "a"}}`, `{"nums": [], "s": 3, "o": 7}`},
	},
	{
		name: "with, data documents and dynamic data references",
		module: `package t
import rego.v1
limit := data.config.limit
over if { input.n > limit }
over_with if { over with data.config.limit as 100 }
input_with := v if { v := over with input as {"n": 1000} }
pkg_rule := data.t.sub[input.which]
merged := data.t.sub
seen := object.get(data.config, ["limit"], "none")
`,
		rules:  []string{"limit", "over", "over_with", "input_with", "pkg_rule", "merged", "seen"},
		inputs: []string{`{"n": 50, "which": "a"}`, `{"n": 5, "which": "b"}`, `{"n": 500, "which": "zz"}`},
		data:   `{"config": {"limit": 10}, "t": {"sub": {"b": "base"}}}`,
	},
	{
		name: "constant collections (folded at load) beside built ones",
		module: `package t
import rego.v1
paths contains v if { some r in input.rs; v := object.get(r, ["labels", "env"], "none") }
blank contains r.name if { some r in input.rs; r.env in {null, "", 0} }
ranged contains r.name if { some r in input.rs; [r.n >= 2, r.n <= 5] != [true, true] }
nested := [{"a": [1, 2.5, {"b": null}], "c": {"x", "y"}}, [], {}, set()]
mixed contains m if { some r in input.rs; m := [r.name, "const", 3] }
chosen contains v if { some r in input.rs; v := {true: "t", false: r.name}[r.n > 3] }
grown := {x | some x in [1, 2, 3]} | {4}
`,
		rules:  []string{"paths", "blank", "ranged", "nested", "mixed", "chosen", "grown"},
		inputs: []string{`{"rs": [{"name": "a", "n": 1, "env": "", "labels": {"env": "prod"}}, {"name": "b", "n": 4, "env": 0}, {"name": "c", "n": 9, "labels": {}}]}`, `{}`},
	},
}

var subModule = `package t.sub
import rego.v1
a := "virtual"
`

func TestEvalMatchesTopdown(t *testing.T) {
	for _, tc := range differentialCases {
		t.Run(tc.name, func(t *testing.T) {
			modules := map[string]string{"t.rego": tc.module, "sub.rego": subModule}
			var eps []string
			for _, r := range tc.rules {
				eps = append(eps, "t/"+r)
			}
			prog, err := Load(planOf(t, modules, eps...))
			if err != nil {
				t.Fatal(err)
			}
			data := ast.Value(ast.NewObject())
			if tc.data != "" {
				data = ast.MustParseTerm(tc.data).Value
			}
			for _, in := range tc.inputs {
				input := ast.MustParseTerm(in).Value
				for _, ep := range eps {
					got := irOutcome(t, prog, ep, input, data)
					want := topdownOutcome(t, modules, ep, input, data)
					if got != want {
						t.Errorf("%s on %s: interpreter %s, topdown %s", ep, in, got, want)
					}
				}
			}
		})
	}
}

// TestEvalParallelMatchesEval runs every differential case's entrypoints together, on
// one goroutine and on several sharing the memoized functions and scan indexes.
func TestEvalParallelMatchesEval(t *testing.T) {
	cases := append(differentialCases, struct {
		name   string
		module string
		rules  []string
		inputs []string
		data   string
	}{name: "group-by", module: groupBy, rules: []string{"by_name", "by_type"}, inputs: []string{"{}"}})
	for _, tc := range cases {
		modules := map[string]string{"t.rego": tc.module, "sub.rego": subModule}
		pkg := strings.TrimPrefix(strings.SplitN(tc.module, "\n", 2)[0], "package ")
		var eps []string
		for _, r := range tc.rules {
			eps = append(eps, pkg+"/"+r)
		}
		prog, err := Load(planOf(t, modules, eps...))
		if err != nil {
			t.Fatal(err)
		}
		plans := make([]int, len(eps))
		for i, ep := range eps {
			plans[i], _ = prog.Plan(ep)
		}
		data := ast.Value(ast.NewObject())
		if tc.data != "" {
			data = ast.MustParseTerm(tc.data).Value
		}
		inputs := tc.inputs
		if tc.name == "group-by" {
			inputs = []string{groupInput(400).String()}
		}
		for _, in := range inputs {
			input := ast.MustParseTerm(in).Value
			want, wantErr := prog.Eval(context.Background(), input, data, plans)
			for _, workers := range []int{2, 3, 8} {
				got, err := prog.EvalParallel(context.Background(), input, data, plans, workers)
				if (err != nil) != (wantErr != nil) {
					t.Fatalf("%s, %d workers: error %v, one goroutine: %v", tc.name, workers, err, wantErr)
				}
				for _, i := range differingPlans(t, got, want) {
					t.Errorf("%s, %s, %d workers: %v, one goroutine: %v", tc.name, eps[i], workers, got[i].Terms(), want[i].Terms())
				}
			}
		}
	}
}

// TestEntrypointResultsAreUnwrapped: Load rewrites every entrypoint plan's result wrapper
// (MakeObject, ObjectInsert "result", ResultSetAdd) into one unwrapped result statement.
func TestEntrypointResultsAreUnwrapped(t *testing.T) {
	tc := differentialCases[1]
	var eps []string
	for _, r := range tc.rules {
		eps = append(eps, "t/"+r)
	}
	prog, err := Load(planOf(t, map[string]string{"t.rego": tc.module, "sub.rego": subModule}, eps...))
	if err != nil {
		t.Fatal(err)
	}
	for _, pl := range prog.plans {
		unwrapped, wrapped := 0, 0
		for _, b := range pl.blocks {
			walkStmts(b, func(st *stmt) {
				switch st.op {
				case opResultValue:
					unwrapped++
				case opResultSetAdd, opMakeObject:
					wrapped++
				}
			})
		}
		if unwrapped != 1 || wrapped != 0 {
			t.Errorf("plan %s: %d unwrapped results, %d wrapper statements left", pl.name, unwrapped, wrapped)
		}
	}
}

// TestCancellation: a cancelled context ends an evaluation with its error, and a builtin
// that notices the cancellation (net.cidr_expand) ends it with its topdown.Halt error, which
// is not swallowed as builtin errors are.
func TestCancellation(t *testing.T) {
	module := `package t
import rego.v1
many := count(net.cidr_expand("10.0.0.0/8"))
`
	prog, err := Load(planOf(t, map[string]string{"t.rego": module}, "t/many"))
	if err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := prog.Eval(cancelled, ast.NewObject(), ast.NewObject(), []int{0}); !errors.Is(err, context.Canceled) {
		t.Fatalf("evaluation under a cancelled context: %v", err)
	}
	ctx, stop := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer stop()
	_, err = prog.Eval(ctx, ast.NewObject(), ast.NewObject(), []int{0})
	var te *topdown.Error
	if !errors.As(err, &te) || te.Code != topdown.CancelErr || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("evaluation cancelled inside net.cidr_expand: %v, want its cancel error", err)
	}
}

// differingPlans returns the indexes of the plans whose results differ between got and
// want, after failing the test when they do not hold the same number of result sets.
func differingPlans(t testing.TB, got, want []ResultSet) []int {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d result sets, want %d", len(got), len(want))
	}
	var out []int
	for i := range got {
		if ast.NewArray(got[i].Terms()...).Compare(ast.NewArray(want[i].Terms()...)) != 0 {
			out = append(out, i)
		}
	}
	return out
}
