// Package evaluate evaluates eventpipe's rules on a document with OPA's evaluator. It
// evaluates exactly what conftest (--namespace eventpipe) and opa eval (data.eventpipe.deny,
// data.eventpipe.warn) evaluate: the entry package's deny, warn and waived sets and its
// summary of the document, in one evaluation of a query prepared once per Engine. The
// document's model, the rules, the downgrade of absence verdicts
// on incomplete previews and the waivers are all Rego (policies/*.rego); this package
// compiles the rules, reads their metadata, passes the configuration as data.config and
// turns the results into Findings.
package evaluate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/eventpipe/eventpipe/policies/plan"
)

// Options configures an Engine.
type Options struct {
	// Modules are the Rego files (name → source); see policies.Modules.
	Modules map[string]string
	// Package is the entry package (policies.Package): its deny, warn, waived and summary
	// rules are evaluated; the rules are the deny_*/warn_*/stack_deny_*/stack_warn_* sets of
	// Package + ".rules".
	Package string
	// Config becomes data.config: thresholds as config.<rule name>.<key> (where Pulumi
	// policy configuration puts them too), "environment", "waivers" and "today" (see
	// checkconfig.Config.Data).
	Config map[string]any
}

// Engine evaluates one rule set with one configuration. It is safe for concurrent use.
type Engine struct {
	rules []Rule
	byID  map[string]Rule
	query rego.PreparedEvalQuery
}

// Finding is one rule result on one resource.
type Finding struct {
	Rule    Rule   `json:"rule"`
	Level   Level  `json:"level"`
	Message string `json:"message"`
	URN     string `json:"urn"`
	Type    string `json:"type"`
	Name    string `json:"name"`
	// Note explains a changed level (a deny turned warning on an incomplete preview).
	Note string `json:"note,omitempty"`
	// Waiver is set when a waiver suppresses the finding.
	Waiver *Waiver `json:"waiver,omitempty"`
	// Location is where the resource was declared or appears in the input, if known.
	Location *plan.Location `json:"location,omitempty"`
}

// Waiver records why a finding is suppressed.
type Waiver struct {
	RuleID  string `json:"ruleId"`
	URN     string `json:"urn"`
	Reason  string `json:"reason"`
	Expires string `json:"expires"`
	// Source is the configuration file that declares the waiver.
	Source string `json:"source,omitempty"`
}

// Result is the outcome of one evaluation.
type Result struct {
	// Findings are every finding, waived ones included, ordered by Sort.
	Findings []Finding
	// Format is the kind of document: pulumi-preview, pulumi-stack-export or terraform-plan.
	Format string
	// Complete is false when the document leaves out resources that exist (a preview
	// without --show-sames): verdicts resting on a resource's absence are then warnings.
	Complete bool
	// Incomplete says, when Complete is false, what the document leaves out and the
	// command that shows everything (the model's incomplete); "" otherwise.
	Incomplete string
	// Resources is the number of resources the rules judged.
	Resources int
}

// ErrUnusableDocument is returned (wrapped, with the reasons) for a document no rule can
// judge: neither a preview, a stack export nor a Terraform plan, or malformed in part.
var ErrUnusableDocument = errors.New("the document cannot be checked")

// IncompleteNote is the note on findings downgraded on previews without unchanged
// resources: lib.rego's incomplete_note, which the tests hold it to.
const IncompleteNote = "the preview leaves out unchanged resources, so this verdict could be wrong: run `pulumi preview --json --show-sames` for a firm one"

// Compiled is a rule set parsed, compiled and with its rules' metadata read, before any
// configuration: one Compiled prepares Engines for as many configurations as a caller
// needs, so a process that judges documents under several configurations compiles its
// rules once. It is safe for concurrent use; nothing changes it after Compile.
type Compiled struct {
	pkg      string
	compiler *ast.Compiler
	rules    []Rule
}

// Compile parses and compiles modules (name → source) and reads the rules of package
// pkg + ".rules" (see Options).
func Compile(modules map[string]string, pkg string) (*Compiled, error) {
	if len(modules) == 0 {
		return nil, fmt.Errorf("no rule files given")
	}
	if pkg == "" {
		return nil, fmt.Errorf("no rule package given")
	}
	parsed := make(map[string]*ast.Module, len(modules))
	for name, src := range modules {
		m, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{ProcessAnnotation: true, RegoVersion: ast.RegoV1})
		if err != nil {
			return nil, fmt.Errorf("parsing rule file %s: %w", name, err)
		}
		parsed[name] = m
	}
	compiler := ast.NewCompiler().WithEnablePrintStatements(false)
	compiler.Compile(parsed)
	if compiler.Failed() {
		return nil, fmt.Errorf("compiling rules: %w", compiler.Errors)
	}
	rules, err := rulesOf(compiler, pkg+".rules")
	if err != nil {
		return nil, err
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("package %s.rules has no deny_*/warn_*/stack_deny_*/stack_warn_* rules", pkg)
	}
	return &Compiled{pkg: pkg, compiler: compiler, rules: rules}, nil
}

// Engine prepares the entry package's query with config as data.config (see
// Options.Config). The compiled rules are shared, not copied: OPA prepares a query on a
// compiler given with rego.Compiler without compiling it again, and only reads it when
// evaluating.
func (c *Compiled) Engine(ctx context.Context, config map[string]any) (*Engine, error) {
	data, err := configData(config)
	if err != nil {
		return nil, err
	}
	e := &Engine{rules: c.rules, byID: make(map[string]Rule, len(c.rules))}
	for _, r := range c.rules {
		e.byID[r.ID] = r
	}
	entry := "data." + c.pkg
	query := fmt.Sprintf("deny := %[1]s.deny; warn := %[1]s.warn; waived := %[1]s.waived; summary := %[1]s.summary", entry)
	e.query, err = rego.New(
		rego.Query(query),
		rego.Compiler(c.compiler),
		rego.Store(inmem.NewFromObject(data)),
	).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("preparing the rules' query: %w", err)
	}
	return e, nil
}

// New compiles the modules, reads the rules' metadata and prepares the query: Compile,
// then Compiled.Engine.
func New(ctx context.Context, opts Options) (*Engine, error) {
	c, err := Compile(opts.Modules, opts.Package)
	if err != nil {
		return nil, err
	}
	return c.Engine(ctx, opts.Config)
}

// configData is the data document {"config": cfg} in plain JSON types, whatever the caller
// built cfg from.
func configData(cfg map[string]any) (map[string]any, error) {
	if cfg == nil {
		cfg = map[string]any{}
	}
	raw, err := json.Marshal(map[string]any{"config": cfg})
	if err != nil {
		return nil, fmt.Errorf("encoding policy configuration: %w", err)
	}
	var data map[string]any
	if err := json.Unmarshal(raw, &data); err != nil {
		return nil, fmt.Errorf("decoding policy configuration: %w", err)
	}
	return data, nil
}

// Rules lists the rules, ordered by id.
func (e *Engine) Rules() []Rule { return append([]Rule(nil), e.rules...) }

// Evaluate runs every rule on p and returns the findings, waived ones included, ordered
// by resource, level (deny first), rule id and message. A document no rule can judge is an
// error wrapping ErrUnusableDocument.
func (e *Engine) Evaluate(ctx context.Context, p *plan.Plan) ([]Finding, error) {
	res, err := e.Check(ctx, p)
	if err != nil {
		return nil, err
	}
	return res.Findings, nil
}

// Check is Evaluate with what the rules learned of the document.
func (e *Engine) Check(ctx context.Context, p *plan.Plan) (*Result, error) {
	rs, err := e.query.Eval(ctx, rego.EvalParsedInput(p.Document))
	if err != nil {
		return nil, fmt.Errorf("evaluating rules on %s: %w", p.File, err)
	}
	if len(rs) != 1 {
		return nil, fmt.Errorf("evaluating rules on %s: %d results, want 1", p.File, len(rs))
	}
	b := rs[0].Bindings
	var summary struct {
		Format     string   `json:"format"`
		Complete   bool     `json:"complete"`
		Incomplete string   `json:"incomplete"`
		Resources  int      `json:"resources"`
		Problems   []string `json:"problems"`
	}
	if err := convert(b["summary"], &summary); err != nil {
		return nil, fmt.Errorf("reading the document summary: %w", err)
	}
	if len(summary.Problems) > 0 {
		return nil, fmt.Errorf("%s: %w: %s", p.File, ErrUnusableDocument, strings.Join(summary.Problems, "; "))
	}
	res := &Result{Format: summary.Format, Complete: summary.Complete, Incomplete: summary.Incomplete, Resources: summary.Resources}
	for _, set := range []struct {
		name  string
		level Level
	}{{"deny", Deny}, {"warn", Warn}, {"waived", ""}} {
		results, _ := b[set.name].([]any)
		for _, v := range results {
			f, err := e.finding(v, set.level, p)
			if err != nil {
				return nil, fmt.Errorf("reading a %s result: %w", set.name, err)
			}
			res.Findings = append(res.Findings, f)
		}
	}
	Sort(res.Findings)
	return res, nil
}

// finding turns one result of the entry's deny, warn or waived set into a Finding located
// by p.Locations. A result is {msg: "ID: message[ (note)]", id, severity, fix, urn, type,
// note?, waiver?}; level is the set's, or for a waived result the rule's (a deny with a
// note counts as a warning).
func (e *Engine) finding(v any, level Level, p *plan.Plan) (Finding, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return Finding{}, fmt.Errorf("a result is %T, want an object", v)
	}
	id := str(m["id"])
	rule, ok := e.byID[id]
	if !ok {
		return Finding{}, fmt.Errorf("a result names rule id %q, which no rule has", id)
	}
	note := str(m["note"])
	msg := strings.TrimPrefix(str(m["msg"]), id+": ")
	if note != "" {
		msg = strings.TrimSuffix(msg, " ("+note+")")
	}
	if level == "" {
		level = rule.Level
		if note != "" {
			level = Warn
		}
	}
	f := Finding{Rule: rule, Level: level, Message: msg, URN: str(m["urn"]), Type: str(m["type"]), Name: nameOf(str(m["urn"])), Note: note}
	if w, ok := m["waiver"].(map[string]any); ok {
		f.Waiver = &Waiver{RuleID: str(w["rule"]), URN: str(w["urn"]), Reason: str(w["reason"]), Expires: str(w["expires"])}
	}
	if loc, ok := p.Locations[f.URN]; ok && f.URN != "" {
		f.Location = &loc
	}
	return f, nil
}

// nameOf is a resource's name: the last part of its Pulumi URN, or its Terraform address
// (lib.rego's name).
func nameOf(urn string) string {
	if i := strings.LastIndex(urn, "::"); i >= 0 {
		return urn[i+2:]
	}
	return urn
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// convert copies a JSON-shaped value into out.
func convert(v any, out any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

// Sort orders findings by resource, level (deny first), rule id and message, keeping the
// order of findings equal in all four.
func Sort(fs []Finding) {
	slices.SortStableFunc(fs, compareFindings)
}

// compareFindings orders two findings as Sort does.
func compareFindings(a, b Finding) int {
	if c := strings.Compare(a.URN, b.URN); c != 0 {
		return c
	}
	if a.Level != b.Level {
		switch Deny {
		case a.Level:
			return -1
		case b.Level:
			return 1
		}
		return 0
	}
	if c := strings.Compare(a.Rule.ID, b.Rule.ID); c != 0 {
		return c
	}
	return strings.Compare(a.Message, b.Message)
}
