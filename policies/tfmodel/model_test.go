package tfmodel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/eventpipe/eventpipe/internal/testing/benchgen"
	"github.com/eventpipe/eventpipe/internal/testing/regoquery"
	"github.com/eventpipe/eventpipe/internal/testing/ruletest"
	"github.com/eventpipe/eventpipe/internal/testing/tfgen"
	"github.com/eventpipe/eventpipe/policies/evaluate"
	"github.com/eventpipe/eventpipe/policies/plan"
	"github.com/eventpipe/eventpipe/policies/tfmodel"
)

// modelQuery reads every value of data.eventpipe.model the rules read, for the input it
// is given: the plan itself (the Rego model) or the Go model of it.
const modelQuery = `x := {
	"format": data.eventpipe.model.format,
	"complete": data.eventpipe.model.complete,
	"problems": data.eventpipe.model.problems,
	"resources": data.eventpipe.model.resources,
	"removals": data.eventpipe.model.removals,
	"project_numbers": data.eventpipe.model.project_numbers,
	"link_expressions": {[r.urn, p]: data.eventpipe.model.link_expression(r, p) |
		some r in data.eventpipe.model.resources
		some p in {"topic", "deadLetterPolicy", "subscription"}
	},
}`

// parity holds the invariant the Go model keeps on any Terraform plan: the rules read
// exactly the same model from it as from the plan (every value of data.eventpipe.model
// above), and so give the same findings.
type parity struct {
	model  rego.PreparedEvalQuery
	engine *evaluate.Engine
}

func newParity(t testing.TB) *parity {
	t.Helper()
	q, err := preparedModelQuery()
	if err != nil {
		t.Fatal(err)
	}
	return &parity{model: q, engine: ruletest.Engine(t, nil)}
}

// preparedModelQuery compiles modelQuery on the embedded rules once per test binary.
var preparedModelQuery = sync.OnceValues(func() (rego.PreparedEvalQuery, error) { return regoquery.New(modelQuery) })

// check compares the two models of the plan data, and the findings on both.
func (p *parity) check(t testing.TB, name string, data []byte) {
	t.Helper()
	doc, err := tfgen.Decode(data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if !tfmodel.IsPlan(doc) {
		t.Fatalf("%s: not a Terraform plan", name)
	}
	rego := p.eval(t, name, doc)
	goModel := p.eval(t, name, map[string]any{tfmodel.Key: tfmodel.Model(doc)})
	if problems := rego.Get(ast.StringTerm("problems")); problems != nil && problems.Value.(*ast.Array).Len() > 0 {
		// The rules judge nothing on a document with problems: only the problems count.
		if got := goModel.Get(ast.StringTerm("problems")); got == nil || got.Value.Compare(problems.Value) != 0 {
			t.Errorf("%s: problems differ:\nrego %v\ngo   %v", name, problems, got)
		}
		return
	}
	for _, key := range rego.Keys() {
		want, got := rego.Get(key), goModel.Get(key)
		if got == nil || want.Value.Compare(got.Value) != 0 {
			t.Errorf("%s: %v differs:\n%s", name, key, diff(want, got))
		}
	}
	if t.Failed() {
		return
	}
	raw, err := plan.FromDocument(doc, name)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := plan.Parse(data, name)
	if err != nil {
		t.Fatal(err)
	}
	want, err := p.engine.Check(context.Background(), raw)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	got, err := p.engine.Check(context.Background(), parsed)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for i := range got.Findings {
		got.Findings[i].Location = nil
	}
	w, _ := json.Marshal(want)
	g, _ := json.Marshal(got)
	if !bytes.Equal(w, g) {
		t.Errorf("%s: the findings differ:\nrego %s\ngo   %s", name, w, g)
	}
}

func (p *parity) eval(t testing.TB, name string, input any) ast.Object {
	t.Helper()
	v, err := ast.InterfaceToValue(input)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := p.model.Eval(context.Background(), rego.EvalParsedInput(v))
	if err != nil || len(rs) != 1 {
		t.Fatalf("%s: evaluating the model: %v (%d results)", name, err, len(rs))
	}
	out, err := ast.InterfaceToValue(rs[0].Bindings["x"])
	if err != nil {
		t.Fatal(err)
	}
	return out.(ast.Object)
}

// diff names the first elements two model values differ in, for arrays of resources.
func diff(want, got *ast.Term) string {
	if got == nil {
		return "missing from the Go model"
	}
	wa, okW := want.Value.(*ast.Array)
	ga, okG := got.Value.(*ast.Array)
	if !okW || !okG {
		return "rego " + want.String() + "\ngo   " + got.String()
	}
	var b strings.Builder
	for i := 0; i < max(wa.Len(), ga.Len()) && b.Len() < 4000; i++ {
		var w, g *ast.Term
		if i < wa.Len() {
			w = wa.Elem(i)
		}
		if i < ga.Len() {
			g = ga.Elem(i)
		}
		if w == nil || g == nil || w.Value.Compare(g.Value) != 0 {
			b.WriteString("rego " + termString(w) + "\ngo   " + termString(g) + "\n")
		}
	}
	return b.String()
}

func termString(t *ast.Term) string {
	if t == nil {
		return "(none)"
	}
	return t.String()
}

// TestModelOfRealPlans holds the parity on every plan the real terraform and tofu CLIs
// made of the Terraform fixtures (policies/testdata/terraform).
func TestModelOfRealPlans(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "terraform", "*", "*.plan.json.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no plans: %v", err)
	}
	p := newParity(t)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p.check(t, f, data)
	}
}

// TestModelOfGeneratedPlans holds the parity on the benchmark's generated plans: the plan
// with literal references and the for_each module's plan written as Terraform writes it
// (instance keys, references indexed by each.key), the one whose figures justify this
// package (docs/benchmarks.md).
func TestModelOfGeneratedPlans(t *testing.T) {
	p := newParity(t)
	generators := []struct {
		name     string
		generate func(int) ([]byte, error)
		sizes    []int
	}{
		{"literal", benchgen.GenerateTerraform, []int{10, 120}},
		// 56 changes are its smallest plan (10 pipelines); 600, several module instances.
		{"for_each", benchgen.GenerateForEachTerraform, []int{56, 600}},
	}
	for _, g := range generators {
		for _, n := range g.sizes {
			data, err := g.generate(n)
			if err != nil {
				t.Fatal(err)
			}
			p.check(t, fmt.Sprintf("%s %d", g.name, n), data)
		}
	}
}

// FuzzModel holds the parity on random plans (internal/testing/tfgen: module trees,
// count and for_each instances, references of every kind, unknown and sensitive values,
// malformed changes), one per seed.
func FuzzModel(f *testing.F) {
	for seed := range uint64(40) {
		f.Add(seed)
	}
	p := newParity(f)
	f.Fuzz(func(t *testing.T, seed uint64) {
		p.check(t, fmt.Sprintf("tfgen seed %d", seed), tfgen.PlanJSON(seed))
	})
}

// BenchmarkModel is the Go model of the check benchmark's 10,000-resource Terraform plan
// (scripts/bench-check.sh), from the decoded plan to the value the rules read; the Rego
// model of the same plan took 2.4 s (docs/benchmarks.md).
func BenchmarkModel(b *testing.B) {
	data, err := benchgen.GenerateTerraform(10000)
	if err != nil {
		b.Fatal(err)
	}
	doc, err := tfgen.Decode(data)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := ast.InterfaceToValue(map[string]any{tfmodel.Key: tfmodel.Model(doc)}); err != nil {
			b.Fatal(err)
		}
	}
}
