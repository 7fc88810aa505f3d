package tfmodel

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/eventpipe/eventpipe/internal/testing/benchgen"
	"github.com/eventpipe/eventpipe/internal/testing/regoquery"
	"github.com/eventpipe/eventpipe/internal/testing/tfgen"
)

// linkQuery is what the Rego model says of a plan's links: terraform_links, and
// terraform_link_expression for every linking change and each linking property where it
// is defined.
const linkQuery = `links := data.eventpipe.model.terraform_links
expressions := {rc.address: {p: t |
	some p in data.eventpipe.model.linking_properties
	t := data.eventpipe.model.terraform_link_expression(rc.address, p)
} | some rc in data.eventpipe.model.linking_changes}`

// preparedLinkQuery compiles linkQuery on the embedded rules once per test binary.
var preparedLinkQuery = sync.OnceValues(func() (rego.PreparedEvalQuery, error) { return regoquery.New(linkQuery) })

// regoLinks evaluates the Rego model's links of doc (a decoded plan, as decodePlan
// decodes it): terraform_links, and the link expressions by address and property.
func regoLinks(t testing.TB, doc map[string]any) (links, expressions ast.Value) {
	t.Helper()
	q, err := preparedLinkQuery()
	if err != nil {
		t.Fatalf("compiling the rules: %v", err)
	}
	rs, err := q.Eval(context.Background(), rego.EvalInput(doc))
	if err != nil {
		t.Fatalf("evaluating the Rego links: %v", err)
	}
	if len(rs) != 1 {
		t.Fatalf("the Rego links: %d results, want 1 (is a rule undefined?)", len(rs))
	}
	links, err = ast.InterfaceToValue(rs[0].Bindings["links"])
	if err != nil {
		t.Fatal(err)
	}
	expressions, err = ast.InterfaceToValue(rs[0].Bindings["expressions"])
	if err != nil {
		t.Fatal(err)
	}
	return links, expressions
}

// goLinks is what this package says of the same: links() and linkExpressions() of doc,
// as the values the Rego model writes.
func goLinks(t testing.TB, doc map[string]any) (links, expressions ast.Value) {
	t.Helper()
	x := newReferenceIndex(newDocument(doc))
	byAddress := map[string]any{}
	for address, l := range x.links() {
		byAddress[address] = map[string]any{
			"exact":        targetsValue(l.exact),
			"possible":     targetsValue(l.possible),
			"dependencies": stringsValue(l.dependencies),
		}
	}
	links, err := ast.InterfaceToValue(byAddress)
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]any{}
	for address, byProperty := range x.linkExpressions() {
		m := map[string]any{}
		for p, text := range byProperty {
			m[p] = text
		}
		texts[address] = m
	}
	expressions, err = ast.InterfaceToValue(texts)
	if err != nil {
		t.Fatal(err)
	}
	return links, expressions
}

func targetsValue(m map[string][]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = stringsValue(v)
	}
	return out
}

func stringsValue(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

// checkLinkParity fails t, naming each address that differs and both sides, unless this
// package's links and link expressions of doc are the Rego model's.
func checkLinkParity(t testing.TB, doc map[string]any) {
	t.Helper()
	wantLinks, wantExpressions := regoLinks(t, doc)
	gotLinks, gotExpressions := goLinks(t, doc)
	compareByKey(t, "terraform_links", wantLinks, gotLinks)
	compareByKey(t, "terraform_link_expression", wantExpressions, gotExpressions)
}

// compareByKey reports, key by key, where got (Go) differs from want (Rego).
func compareByKey(t testing.TB, what string, want, got ast.Value) {
	t.Helper()
	if want.Compare(got) == 0 {
		return
	}
	w, okW := want.(ast.Object)
	g, okG := got.(ast.Object)
	if !okW || !okG {
		t.Errorf("%s: Rego %v, Go %v", what, want, got)
		return
	}
	keys := map[string]*ast.Term{}
	for _, k := range w.Keys() {
		keys[k.String()] = k
	}
	for _, k := range g.Keys() {
		keys[k.String()] = k
	}
	names := slices.Sorted(maps.Keys(keys))
	shown := 0
	for _, name := range names {
		wv, gv := w.Get(keys[name]), g.Get(keys[name])
		if wv != nil && gv != nil && wv.Equal(gv) {
			continue
		}
		if shown++; shown > 10 {
			t.Errorf("%s: more differences left out", what)
			return
		}
		t.Errorf("%s[%s]:\n  Rego: %v\n  Go:   %v", what, name, wv, gv)
	}
}

// decodePlan decodes a plan as eventpipe check does (numbers kept as json.Number).
func decodePlan(t testing.TB, data []byte) map[string]any {
	t.Helper()
	doc, err := tfgen.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// cliPlans are the plans the real terraform and tofu CLIs made of the fixtures, by path.
func cliPlans(t testing.TB) map[string]map[string]any {
	t.Helper()
	plans := map[string]map[string]any{}
	for rel, data := range cliPlanFiles(t) {
		plans[rel] = decodePlan(t, data)
	}
	return plans
}

// cliPlanFiles are the bytes of cliPlans, by path: each decoding is a copy to edit.
func cliPlanFiles(t testing.TB) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	root := filepath.Join("..", "testdata")
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.Contains(e.Name(), "plan.json") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		files[rel] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 40 {
		t.Fatalf("found %d real-CLI plans under %s, want the 40 and more the fixtures hold", len(files), root)
	}
	return files
}

// TestLinksMatchRegoOnCLIPlans holds links and linkExpressions to the Rego model's
// terraform_links and terraform_link_expression on every plan the real CLIs made.
func TestLinksMatchRegoOnCLIPlans(t *testing.T) {
	plans := cliPlans(t)
	names := slices.Sorted(maps.Keys(plans))
	linked := 0
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			checkLinkParity(t, plans[name])
		})
		linked += len(newReferenceIndex(newDocument(plans[name])).links())
	}
	t.Logf("%d plans, %d linked instances", len(plans), linked)
	// The parity must be over links, not over empty maps.
	if linked < 100 {
		t.Errorf("the plans have %d linked instances in all: is the model reading them?", linked)
	}
}

// TestLinksMatchRegoOnGeneratedPlans holds the same parity on the benchmark's generated
// plans (every resource in the root, linked by direct references).
func TestLinksMatchRegoOnGeneratedPlans(t *testing.T) {
	for _, n := range []int{10, 100, 1000, 3000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			data, err := benchgen.GenerateTerraform(n)
			if err != nil {
				t.Fatal(err)
			}
			checkLinkParity(t, decodePlan(t, data))
		})
	}
}

// BenchmarkLinks measures links, and linkExpressions, on the generated 10,000-resource
// plan.
func BenchmarkLinks(b *testing.B) {
	data, err := benchgen.GenerateTerraform(10000)
	if err != nil {
		b.Fatal(err)
	}
	d := newDocument(decodePlan(b, data))
	b.Run("links", func(b *testing.B) {
		for b.Loop() {
			if len(newReferenceIndex(d).links()) == 0 {
				b.Fatal("no links")
			}
		}
	})
	b.Run("expressions", func(b *testing.B) {
		for b.Loop() {
			if len(newReferenceIndex(d).linkExpressions()) == 0 {
				b.Fatal("no link expressions")
			}
		}
	})
}
