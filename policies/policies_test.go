package policies

import (
	"context"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
)

// testModules returns the rule files and their *_test.rego unit tests.
func testModules() (map[string]string, error) {
	return read(files, true)
}

// TestRegoUnitTests runs every test_* rule in the *_test.rego files through OPA's Go test
// runner (the runner behind `opa test policies/`).
func TestRegoUnitTests(t *testing.T) {
	srcs, err := testModules()
	if err != nil {
		t.Fatal(err)
	}
	modules := map[string]*ast.Module{}
	for name, src := range srcs {
		m, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		modules[name] = m
	}
	ch, err := tester.NewRunner().SetCompiler(ast.NewCompiler().WithEnablePrintStatements(true)).Run(context.Background(), modules)
	if err != nil {
		t.Fatalf("running rego tests: %v", err)
	}
	passed := 0
	for res := range ch {
		switch {
		case res.Error != nil:
			t.Errorf("%s: error: %v", res.Name, res.Error)
		case res.Fail:
			t.Errorf("%s: FAIL\n%s", res.Name, res.Output)
		case res.Skip:
			t.Errorf("%s: skipped (a skipped test proves nothing)", res.Name)
		default:
			passed++
		}
	}
	if passed < 140 {
		t.Fatalf("only %d rego tests passed; the suite has more than 140", passed)
	}
}

// TestOPATestFolder loads this folder the way `opa test policies/` does — every .rego file
// as a module and every .json/.yaml file below it as data — and runs the tests with the
// store it builds, so a data file that the OPA CLI would trip over fails here too.
func TestOPATestFolder(t *testing.T) {
	ctx := context.Background()
	modules, store, err := tester.Load([]string{"."}, nil)
	if err != nil {
		t.Fatalf("loading the folder as opa test does: %v", err)
	}
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Abort(ctx, txn)
	ch, err := tester.NewRunner().SetStore(store).SetModules(modules).RunTests(ctx, txn)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for res := range ch {
		n++
		if res.Error != nil || res.Fail {
			t.Errorf("%s: fail %v error %v", res.Name, res.Fail, res.Error)
		}
	}
	if n < 140 {
		t.Fatalf("opa test ran only %d tests", n)
	}
}

var ruleName = regexp.MustCompile(`(?m)^((?:stack_)?(?:deny|warn|violation)_[a-z0-9_]+) contains`)

// TestEveryRuleIsTested checks that each rule is exercised by the unit tests.
func TestEveryRuleIsTested(t *testing.T) {
	srcs, err := testModules()
	if err != nil {
		t.Fatal(err)
	}
	var tests strings.Builder
	rules := map[string]bool{}
	for name, src := range srcs {
		if strings.HasSuffix(name, "_test.rego") {
			tests.WriteString(src)
			continue
		}
		for _, m := range ruleName.FindAllStringSubmatch(src, -1) {
			rules[m[1]] = true
		}
	}
	names := make([]string, 0, len(rules))
	for r := range rules {
		names = append(names, r)
	}
	sort.Strings(names)
	if len(names) < 13 {
		t.Fatalf("found only %d rules: %v", len(names), names)
	}
	for _, r := range names {
		if !strings.Contains(tests.String(), r) {
			t.Errorf("rule %s is not referenced by any *_test.rego", r)
		}
	}
}

func TestModulesLeaveOutTests(t *testing.T) {
	mods, err := Modules()
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) == 0 {
		t.Fatal("no rule files embedded")
	}
	for name := range mods {
		if strings.HasSuffix(name, "_test.rego") {
			t.Errorf("Modules returned test file %s", name)
		}
	}
}
