package analyzer

// This file is the analyzer's only contact with the rule engine (policies, policies/plan,
// policies/evaluate): everything else sees rules, a Pulumi stack export document and
// findings in the types below.

import (
	"context"
	"fmt"
	"os"

	"github.com/eventpipe/eventpipe/policies"
	"github.com/eventpipe/eventpipe/policies/evaluate"
	"github.com/eventpipe/eventpipe/policies/plan"
)

// rule is one policy rule as the analyzer offers it to Pulumi.
type rule struct {
	// Name is the Rego rule name, the Pulumi policy name and the data.config key.
	Name string
	// ID is the stable rule id, e.g. EP001.
	ID          string
	Title       string
	Description string
	// Severity is critical, high, medium, low or info.
	Severity string
	Fix      string
	// Mandatory is the default enforcement: deny rules are mandatory, warn rules advisory.
	Mandatory bool
	// Stack marks rules that judge the whole stack rather than one resource: the stack_
	// rules, and the rules whose verdict rests on other resources being absent (a missing
	// retry policy is fine on a DLQ subscription, known only from the subscription that
	// dead-letters to it). They must never run on a single resource.
	Stack bool
	// NeedsOperations marks rules on what a step does (delete, replace): an analyzer is
	// never given a step's operation, so under `pulumi preview --policy-pack` they can
	// never report anything (see unseenNotice).
	NeedsOperations bool
}

// finding is one rule result.
type finding struct {
	// Rule is the rule's Name.
	Rule string
	// URN is the resource the finding is about, "" when the rule names none.
	URN     string
	Message string
}

// ruleSet is the rules of a policy pack folder compiled with one configuration.
type ruleSet struct {
	eng   *evaluate.Engine
	rules []rule
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
	rs := &ruleSet{eng: eng}
	for _, r := range eng.Rules() {
		rs.rules = append(rs.rules, rule{
			Name: r.Name, ID: r.ID, Title: r.Title, Description: r.Description, Severity: r.Severity, Fix: r.Fix,
			Mandatory: r.Level == evaluate.Deny, Stack: r.Stack || r.NeedsCompleteStack, NeedsOperations: r.NeedsOperations,
		})
	}
	return rs, nil
}

// evaluate runs every rule on a `pulumi stack export` document (name identifies it in
// errors) and returns the findings.
func (rs *ruleSet) evaluate(ctx context.Context, doc []byte, name string) ([]finding, error) {
	p, err := plan.Parse(doc, name)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	found, err := rs.eng.Evaluate(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("evaluating the rules on %s: %w", name, err)
	}
	out := make([]finding, len(found))
	for i, f := range found {
		out[i] = finding{Rule: f.Rule.Name, URN: f.URN, Message: f.Message}
	}
	return out, nil
}
