package policies_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/ruletest"
	"github.com/eventpipe/eventpipe/policies/plan"
	"github.com/eventpipe/eventpipe/render"
)

// isAlertRule reports whether id is an alert coverage rule of policies/alerts.rego.
func isAlertRule(id string) bool {
	switch id {
	case "EP101", "EP102", "EP103", "EP104":
		return true
	}
	return false
}

// alertFindings renders the stack in dir and returns the alert-rule findings
// as "ID level name", sorted.
func alertFindings(t *testing.T, dir, stack string, config map[string]any) []string {
	t.Helper()
	ctx := context.Background()
	res, err := render.Render(ctx, render.Options{Stack: stack, StackDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Parse(res.JSON, "stack "+stack)
	if err != nil {
		t.Fatal(err)
	}
	findings, err := ruletest.Engine(t, config).Evaluate(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range findings {
		if isAlertRule(f.Rule.ID) {
			out = append(out, f.Rule.ID+" "+string(f.Level)+" "+f.Name)
		}
	}
	sort.Strings(out)
	return out
}

// TestRenderedStacksHaveAlertCoverage: the alerts the Pipeline component
// declares satisfy the coverage rules in every environment.
func TestRenderedStacksHaveAlertCoverage(t *testing.T) {
	for _, stack := range []string{"dev", "staging", "prod"} {
		if got := alertFindings(t, "../stacks", stack, nil); len(got) != 0 {
			t.Errorf("%s: alert findings %v, want none", stack, got)
		}
	}
}

// TestAlertOptOutIsDeniedInProd: a pipeline that opts out of its alerts
// renders, but its subscriptions fail the coverage rules in prod and only
// warn in dev unless the policy configuration makes them strict.
func TestAlertOptOutIsDeniedInProd(t *testing.T) {
	dir := t.TempDir()
	for _, stack := range []string{"dev", "prod"} {
		src, err := os.ReadFile(filepath.Join("../stacks", "Pulumi."+stack+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		doc := strings.Replace(string(src), "    documents:\n", "    documents:\n      alerts: {optOut: true, reason: test}\n", 1)
		if doc == string(src) {
			t.Fatal("stack file has no documents pipeline to opt out")
		}
		if err := os.WriteFile(filepath.Join(dir, "Pulumi."+stack+".yaml"), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want := func(level string, ids ...string) []string {
		var out []string
		for _, id := range ids {
			name := "documents-process"
			if strings.HasSuffix(id, "!") {
				id, name = strings.TrimSuffix(id, "!"), "documents-process-dlq"
			}
			out = append(out, id+" "+level+" "+name)
		}
		sort.Strings(out)
		return out
	}
	if got, w := alertFindings(t, dir, "prod", nil), want("deny", "EP101", "EP103", "EP103!"); strings.Join(got, ";") != strings.Join(w, ";") {
		t.Errorf("prod findings %v, want %v", got, w)
	}
	if got, w := alertFindings(t, dir, "dev", nil), want("warn", "EP102", "EP104", "EP104!"); strings.Join(got, ";") != strings.Join(w, ";") {
		t.Errorf("dev findings %v, want %v", got, w)
	}
	strict := map[string]any{"stack_deny_subscription_without_backlog_alert": map[string]any{"environments": []any{"dev"}}}
	w := append(want("deny", "EP103", "EP103!"), want("warn", "EP102")...)
	sort.Strings(w)
	if got := alertFindings(t, dir, "dev", strict); strings.Join(got, ";") != strings.Join(w, ";") {
		t.Errorf("dev findings with strict backlog rule %v, want %v", got, w)
	}
}
