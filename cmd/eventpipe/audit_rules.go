package main

// This file is the audit's only door to the rule engine (policies/plan, policies/engine,
// policies/checkconfig, policies/report): everything the audit hands the rules and gets
// back passes here, so a change of the engine's API is adapted in this one place.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/eventpipe/eventpipe/audit/drift"
	"github.com/eventpipe/eventpipe/audit/model"
	"github.com/eventpipe/eventpipe/audit/summary"
	"github.com/eventpipe/eventpipe/policies"
	"github.com/eventpipe/eventpipe/policies/checkconfig"
	"github.com/eventpipe/eventpipe/policies/engine"
	"github.com/eventpipe/eventpipe/policies/plan"
	"github.com/eventpipe/eventpipe/policies/report"
)

// driftRule is the rule drift findings are reported under.
func driftRule() engine.Rule {
	return engine.Rule{
		Name:        "deny_live_drift",
		ID:          "EP200",
		Title:       "Live settings differ from the stack",
		Description: "A resource the stack declares does not exist live, or its live settings differ from the declared ones: someone changed it by hand (or another tool did), and the next update will change it back or fail.",
		Severity:    "medium",
		Fix:         "Find who changed it (Cloud Audit Logs), then either run `pulumi up` to restore the declared settings or change the stack to what is live if the change was meant.",
		Level:       engine.Deny,
	}
}

// auditRules are the loaded rules (with one environment's thresholds) and the check
// configuration whose waivers apply; drift says whether the audit compares with a stack.
type auditRules struct {
	eng   *engine.Engine
	cfg   *checkconfig.Config
	drift bool
}

// loadAuditRules compiles the rules with the thresholds of env from the configuration
// file (none when configPath is empty), as `eventpipe check` does.
func loadAuditRules(ctx context.Context, configPath, env, evaluator string, withDrift bool) (*auditRules, error) {
	ev := engine.Evaluator(evaluator)
	if ev != "" && !slices.Contains(engine.Evaluators(), ev) {
		return nil, usageError("--evaluator %q: use %s or %s", evaluator, engine.EvaluatorIR, engine.EvaluatorTopdown)
	}
	var cfg *checkconfig.Config
	if configPath != "" {
		c, err := checkconfig.Load(configPath)
		if err != nil {
			return nil, &exitError{code: 2, err: err}
		}
		cfg = c
	}
	mods, err := policies.Modules()
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	eng, err := engine.New(ctx, engine.Options{Modules: mods, Package: policies.Package, Config: cfg.Data(env), Evaluator: ev})
	if err != nil {
		return nil, &exitError{code: 2, err: fmt.Errorf("loading policy rules: %w", err)}
	}
	a := &auditRules{eng: eng, cfg: cfg, drift: withDrift}
	// The drift rule is known with or without a stack, so one configuration file serves
	// every audit.
	if err := cfg.Validate(append(slices.Clone(eng.Rules()), driftRule())); err != nil {
		return nil, &exitError{code: 2, err: fmt.Errorf("%s: %w", configPath, err)}
	}
	return a, nil
}

// rules are the rules an audit reports under: the engine's, and the drift rule when the
// audit compares with a stack.
func (a *auditRules) rules() []engine.Rule {
	rules := a.eng.Rules()
	if a.drift {
		rules = append(slices.Clone(rules), driftRule())
	}
	return rules
}

// list prints the rules, as `eventpipe check --list-rules` does.
func (a *auditRules) list(w io.Writer) error {
	return listRules(w, append(a.eng.Rules(), driftRule()))
}

// auditFinding is a finding of the rules, and auditReport a report of them, as the audit
// command passes them around.
type (
	auditFinding = engine.Finding
	auditReport  = report.Report
)

// evaluate runs the rules on the model, one group of projects that refer to one another
// at a time (see model.Document.Split), and returns the findings, each attached to the
// model resource it concerns.
func (a *auditRules) evaluate(ctx context.Context, doc *model.Document, source string) ([]auditFinding, int, error) {
	var findings []auditFinding
	for _, group := range doc.Split() {
		data, aliases, err := engineDocument(group)
		if err != nil {
			return nil, 0, &exitError{code: 2, err: err}
		}
		p, err := plan.Parse(data, source)
		if err != nil {
			return nil, 0, &exitError{code: 2, err: fmt.Errorf("reading the audit model: %w", err)}
		}
		fs, err := a.eng.Evaluate(ctx, p)
		if err != nil {
			return nil, 0, &exitError{code: 2, err: err}
		}
		for i := range fs {
			if urn, ok := aliases[fs[i].URN]; ok {
				fs[i].URN = urn
				if r, ok := doc.Resource(urn); ok {
					fs[i].Type, fs[i].Name = r.Type, urnName(urn)
				}
			}
		}
		findings = append(findings, fs...)
	}
	return findings, len(doc.Resources), nil
}

// engineDocument is the model as the rules read it today. The rules do not read an IAM
// policy's policyData yet (the policies rewrite adds it), so each TopicIAMPolicy,
// SubscriptionIAMPolicy, ServiceIamPolicy and project IAMPolicy is also given to them as
// the per-role IAMBinding resources it consists of (a policy is the set of its bindings;
// an unreadable policy becomes one binding whose role and members are unknown). aliases
// maps each added binding's URN to its policy's URN. Delete the expansion once the rules
// read policyData.
func engineDocument(doc *model.Document) ([]byte, map[string]string, error) {
	bindingType := map[string]string{
		model.TypeTopicIAMPolicy:        "gcp:pubsub/topicIAMBinding:TopicIAMBinding",
		model.TypeSubscriptionIAMPolicy: "gcp:pubsub/subscriptionIAMBinding:SubscriptionIAMBinding",
		model.TypeServiceIAMPolicy:      "gcp:cloudrunv2/serviceIamBinding:ServiceIamBinding",
		model.TypeProjectIAMPolicy:      "gcp:projects/iAMBinding:IAMBinding",
	}
	expanded := &model.Document{Resources: slices.Clone(doc.Resources)}
	aliases := map[string]string{}
	for _, r := range doc.Resources {
		typ, ok := bindingType[r.Type]
		if !ok {
			continue
		}
		bindings, err := policyBindings(r.Inputs["policyData"])
		if err != nil {
			return nil, nil, fmt.Errorf("%s: policyData: %w", r.URN, err)
		}
		for _, b := range bindings {
			in := map[string]any{"role": b.Role, "members": b.Members}
			for k, v := range r.Inputs {
				if k != "policyData" {
					in[k] = v
				}
			}
			urn := strings.Replace(r.URN, "::"+r.Type+"::", "::"+typ+"::", 1) + "/" + b.Role
			aliases[urn] = r.URN
			expanded.Resources = append(expanded.Resources, model.Resource{
				URN: urn, Custom: true, Type: typ, ID: r.ID, Inputs: in,
				Dependencies: r.Dependencies, PropertyDependencies: r.PropertyDependencies,
			})
		}
	}
	data, err := expanded.JSON()
	return data, aliases, err
}

type policyBinding struct {
	Role    string `json:"role"`
	Members any    `json:"members"`
}

// policyBindings are the bindings of a policyData value; for the unknown value, one
// binding whose role and members are unknown.
func policyBindings(v any) ([]policyBinding, error) {
	s, _ := v.(string)
	if s == model.UnknownValue {
		return []policyBinding{{Role: model.UnknownValue, Members: model.UnknownValue}}, nil
	}
	var pol struct {
		Bindings []policyBinding `json:"bindings"`
	}
	if err := json.Unmarshal([]byte(s), &pol); err != nil {
		return nil, err
	}
	return pol.Bindings, nil
}

// urnName is the last "::" part of a URN.
func urnName(urn string) string {
	if i := strings.LastIndex(urn, "::"); i >= 0 {
		return urn[i+2:]
	}
	return urn
}

// annotate adds to each finding who manages its resource (as its note) and where to fix
// it (after the rule's own fix, which says what to change).
func annotate(findings []auditFinding, owner func(urn, ruleID string) (who, where string)) {
	for i := range findings {
		f := &findings[i]
		who, where := owner(f.URN, f.Rule.ID)
		if who == "" {
			continue
		}
		f.Note = joinNote(f.Note, "managed by "+who)
		if where != "" {
			f.Rule.Fix = f.Rule.Fix + " Where: " + where
		}
	}
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// driftFindings reports each difference under the drift rule; locate gives the stack
// config location of a declared URN.
func driftFindings(diffs []drift.Difference, locate func(urn string) (file string, line int)) []auditFinding {
	out := make([]auditFinding, 0, len(diffs))
	for _, d := range diffs {
		f := engine.Finding{Rule: driftRule(), Level: engine.Deny, Message: d.Message(), URN: d.URN, Type: d.Type, Name: urnName(d.URN)}
		if file, line := locate(d.URN); file != "" {
			f.Location = &plan.Location{File: file, Line: line}
		}
		out = append(out, f)
	}
	return out
}

// finish applies the waivers (and reports expired ones), writes the report in format and
// returns it with its verdict.
func (a *auditRules) finish(w io.Writer, format string, findings []auditFinding, source, inputFormat string, resources int, failOnWarn bool, now time.Time) (*auditReport, error) {
	findings = a.cfg.Apply(findings, now)
	engine.Sort(findings)
	rep := &report.Report{
		Source: source, InputFormat: inputFormat, Resources: resources, Rules: a.rules(),
		Findings: findings, FailOnWarn: failOnWarn, Version: buildVersion(),
	}
	if err := report.Write(w, report.Format(format), rep); err != nil {
		return nil, &exitError{code: 2, err: fmt.Errorf("writing %s report: %w", format, err)}
	}
	return rep, nil
}

// validAuditFormat reports whether format is one of the report formats.
func validAuditFormat(format string) bool { return validFormat(report.Format(format)) }

// summaryFindings converts the report's findings for the summary; project names the
// project of a URN.
func summaryFindings(rep *auditReport, project func(urn string) string) []summary.Finding {
	out := make([]summary.Finding, 0, len(rep.Findings))
	for _, f := range rep.Findings {
		out = append(out, summary.Finding{
			Project: project(f.URN), RuleID: f.Rule.ID, Title: f.Rule.Title, Severity: f.Rule.Severity,
			Level: string(f.Level), Resource: resourceLabel(f), Message: f.Message, Owner: f.Note,
			Fix: f.Rule.Fix, Waived: f.Waiver != nil,
		})
	}
	return out
}

func resourceLabel(f engine.Finding) string {
	if f.Name != "" {
		return f.Name
	}
	return f.URN
}

// verdict is the report's counts and whether it fails.
func verdict(rep *auditReport) (denies, warnings, waived int, failed bool) {
	denies, warnings, waived = rep.Counts()
	return denies, warnings, waived, rep.Failed()
}
