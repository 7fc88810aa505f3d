package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/eventpipe/eventpipe/policies"
	"github.com/eventpipe/eventpipe/policies/irvm"
)

// TestEmbeddedPlanIsCurrent plans policies/*.rego and compares the result with the
// embedded rules.plan.json and rules.program.bin; EVENTPIPE_UPDATE_PLAN=1 rewrites the
// files instead:
//
//	EVENTPIPE_UPDATE_PLAN=1 go test ./policies/engine -run TestEmbeddedPlanIsCurrent
func TestEmbeddedPlanIsCurrent(t *testing.T) {
	mods, err := policies.Modules()
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(context.Background(), Options{Modules: mods, Package: policies.Package, Evaluator: EvaluatorTopdown})
	if err != nil {
		t.Fatal(err)
	}
	parsed := map[string]*ast.Module{}
	for name, src := range mods {
		if parsed[name], err = ast.ParseModuleWithOpts(name, src, ast.ParserOptions{ProcessAnnotation: true, RegoVersion: ast.RegoV1}); err != nil {
			t.Fatal(err)
		}
	}
	pol, err := PlanRules(context.Background(), parsed, policies.Package, e.Rules())
	if err != nil {
		t.Fatal(err)
	}
	prog, err := irvm.Load(pol)
	if err != nil {
		t.Fatal(err)
	}
	wantProgram, err := prog.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	compiler := ast.NewCompiler()
	if compiler.Compile(parsed); compiler.Failed() {
		t.Fatal(compiler.Errors)
	}
	e.resourceTypes = guardedTypes(compiler, policies.Package, e.resource)
	want, err := json.Marshal(plannedFile{
		Digest: modulesDigest(policies.Package, mods),
		Rules:  e.Rules(),
		Types:  resourceRulesByType(e, compiler, policies.Package),
	})
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("EVENTPIPE_UPDATE_PLAN") == "1" {
		if err := os.WriteFile("rules.plan.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("rules.program.bin", wantProgram, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(plannedRules, want) || !bytes.Equal(plannedProgram, wantProgram) {
		t.Fatal("rules.plan.json is stale (the rule files or OPA's planner changed): run\n" +
			"  EVENTPIPE_UPDATE_PLAN=1 go test ./policies/engine -run TestEmbeddedPlanIsCurrent")
	}
	planned, err := embeddedPlan(policies.Package, mods)
	if err != nil || planned == nil {
		t.Fatalf("the embedded plan is not used for policies/*.rego: %v", err)
	}
	// The engine made from it is the engine made from the rule files.
	embedded, err := New(context.Background(), Options{Modules: mods, Package: policies.Package})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(embedded.Rules(), e.Rules()) || !reflect.DeepEqual(embedded.resourceTypes, e.resourceTypes) {
		t.Fatal("the embedded rules or type guards differ from the rule files'")
	}
}

// TestEmbeddedPlanOnlyForItsRules: other rule files (here, the core rules without the
// alert rules) are planned at New, not served the embedded plan.
func TestEmbeddedPlanOnlyForItsRules(t *testing.T) {
	mods, err := policies.Modules()
	if err != nil {
		t.Fatal(err)
	}
	for name := range mods {
		mods[name] += "\n# changed\n"
		break
	}
	if pol, err := embeddedPlan(policies.Package, mods); err != nil || pol != nil {
		t.Fatalf("embedded plan served for changed rule files (err %v)", err)
	}
}
