package analyzer

// This file is where the analyzer loads, compiles and runs the rules (policies,
// policies/plan, policies/evaluate); the rest of it sees only evaluate's Rule and Finding
// and a Pulumi stack export document.

import (
	"context"
	"fmt"
	"os"

	"github.com/eventpipe/eventpipe/policies"
	"github.com/eventpipe/eventpipe/policies/evaluate"
	"github.com/eventpipe/eventpipe/policies/plan"
)

// stackRule reports whether r judges the whole stack rather than one resource: a stack_
// rule, or a rule whose verdict rests on other resources being absent (a missing retry
// policy is fine on a DLQ subscription, known only from the subscription that
// dead-letters to it). Such a rule must never run on a single resource.
func stackRule(r evaluate.Rule) bool { return r.Stack || r.NeedsCompleteStack }

// ruleSet is the rules of a policy pack folder compiled with one configuration.
type ruleSet struct {
	eng   *evaluate.Engine
	rules []evaluate.Rule
}

// loadModules reads the rule files of the policy pack folder dir.
func loadModules(dir string) (map[string]string, error) {
	mods, err := policies.ModulesIn(os.DirFS(dir))
	if err != nil {
		return nil, fmt.Errorf("policy pack %s: %w", dir, err)
	}
	if len(mods) == 0 {
		return nil, fmt.Errorf("policy pack %s has no *.rego rule files: point --policy-pack at eventpipe's policies folder", dir)
	}
	return mods, nil
}

// compileRules compiles the rule files with config as data.config (policy name → setting →
// value, where Pulumi policy configuration and `eventpipe check --config` put thresholds).
func compileRules(ctx context.Context, modules map[string]string, config map[string]any) (*ruleSet, error) {
	eng, err := evaluate.New(ctx, evaluate.Options{Modules: modules, Package: policies.Package, Config: config})
	if err != nil {
		return nil, fmt.Errorf("compiling the policy rules: %w", err)
	}
	return &ruleSet{eng: eng, rules: eng.Rules()}, nil
}

// evaluate runs every rule on a `pulumi stack export` document (name identifies it in
// errors) and returns the findings.
func (rs *ruleSet) evaluate(ctx context.Context, doc []byte, name string) ([]evaluate.Finding, error) {
	p, err := plan.Parse(doc, name)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	found, err := rs.eng.Evaluate(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("evaluating the rules on %s: %w", name, err)
	}
	return found, nil
}
