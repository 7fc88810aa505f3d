// Package engine evaluates eventpipe's Rego rules on a normalised plan. The Rego files stay
// the only source of the rules; by default (EvaluatorIR) they run as OPA's planner compiles
// them (the IR OPA's Wasm target starts from), in eventpipe's interpreter, policies/irvm,
// with OPA's own builtins. For policies/*.rego the planned and loaded rules, with their
// metadata, are embedded (rules.program.bin, rules.plan.json), so an Engine starts without
// parsing Rego; other rule files are parsed, compiled and planned by New. EvaluatorTopdown
// runs the same files in OPA's reference evaluator with queries prepared once per Engine;
// differential tests hold the two to identical findings.
//
// Each plan is converted to OPA's value form once and shared by the resource rules (one
// evaluation per resource, of only the rules its type can match, each resource as the
// whole input, as Pulumi does) and the stack rules (one evaluation on input.resources,
// spread over the processors by the IR evaluator, the helpers the rules share computed
// once).
package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/ir"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/eventpipe/eventpipe/policies/irvm"
	"github.com/eventpipe/eventpipe/policies/plan"
)

// Options configures an Engine.
type Options struct {
	// Modules are the Rego files (name → source); see policies.Modules.
	Modules map[string]string
	// Package is the Rego package of the rules (policies.Package).
	Package string
	// Config becomes data.config: thresholds as data.config.<rule>.<key>, as Pulumi policy
	// configuration provides them, and data.config.environment.
	Config map[string]any
	// Evaluator selects the evaluator: EvaluatorIR (the default when empty) or
	// EvaluatorTopdown, OPA's reference evaluator.
	Evaluator Evaluator
	// Plan, when set, is the rules as OPA's planner compiled them (see PlanRules), for the
	// IR evaluator. Otherwise New uses the plan embedded in this package when Modules are
	// exactly the rule files it was made from, and plans the rules itself if not.
	Plan *ir.Policy
}

// Engine evaluates one rule set with one configuration. It is safe for concurrent use.
type Engine struct {
	rules      []Rule
	byName     map[string]Rule
	resource   []Rule
	stack      []Rule
	store      storage.Store
	stackQuery rego.PreparedEvalQuery
	// resourceTypes, when not nil, are the only resource types any resource rule can
	// match (every definition starts with `input.type == "..."`): other resources skip
	// the resource rules.
	resourceTypes map[string]bool
	// byType holds, when resourceTypes is not nil, the query of the rules that can match
	// each of those types; anyType, otherwise, the query of every resource rule.
	byType  map[string]*ruleQuery
	anyType *ruleQuery
	// ir, when set, evaluates the rules instead of the topdown queries above.
	ir *irRules
}

// ruleQuery is a prepared query evaluating rules on one resource: binding r maps each
// rule name to the rule's messages.
type ruleQuery struct {
	rules []Rule
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

// IncompleteNote is appended to findings downgraded on previews without unchanged resources.
const IncompleteNote = "the preview leaves out unchanged resources, so this verdict could be wrong: run `pulumi preview --json --show-sames` for a firm one"

// New compiles the modules and prepares the queries.
func New(ctx context.Context, opts Options) (*Engine, error) {
	if len(opts.Modules) == 0 {
		return nil, fmt.Errorf("no rule files given")
	}
	if opts.Package == "" {
		return nil, fmt.Errorf("no rule package given")
	}
	switch opts.Evaluator {
	case "":
		opts.Evaluator = EvaluatorIR
	case EvaluatorIR, EvaluatorTopdown:
	default:
		return nil, fmt.Errorf("evaluator %q: use %s or %s", opts.Evaluator, EvaluatorIR, EvaluatorTopdown)
	}
	cfg := opts.Config
	if cfg == nil {
		cfg = map[string]any{}
	}
	// A JSON round trip gives the store plain JSON types whatever the caller built.
	raw, err := json.Marshal(map[string]any{"config": cfg})
	if err != nil {
		return nil, fmt.Errorf("encoding policy configuration: %w", err)
	}
	var data map[string]any
	if err := json.Unmarshal(raw, &data); err != nil {
		return nil, fmt.Errorf("decoding policy configuration: %w", err)
	}
	if opts.Evaluator == EvaluatorIR && opts.Plan == nil {
		// The rule files planned at build time need neither parsing nor compiling.
		planned, err := embeddedPlan(opts.Package, opts.Modules)
		if err != nil {
			return nil, err
		}
		if planned != nil {
			e := engineOf(planned.Rules)
			if planned.Types != nil {
				e.resourceTypes = map[string]bool{}
				for typ := range planned.Types {
					e.resourceTypes[typ] = true
				}
			}
			if err := e.prepareIR(planned.program, opts.Package, data["config"], planned.Types); err != nil {
				return nil, err
			}
			return e, nil
		}
	}
	modules := make(map[string]*ast.Module, len(opts.Modules))
	for name, src := range opts.Modules {
		m, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{ProcessAnnotation: true, RegoVersion: ast.RegoV1})
		if err != nil {
			return nil, fmt.Errorf("parsing rule file %s: %w", name, err)
		}
		modules[name] = m
	}
	compiler := ast.NewCompiler().WithEnablePrintStatements(false)
	compiler.Compile(modules)
	if compiler.Failed() {
		return nil, fmt.Errorf("compiling rules: %w", compiler.Errors)
	}
	rules, err := rulesOf(compiler, opts.Package)
	if err != nil {
		return nil, err
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("package %s has no deny_*/warn_*/stack_deny_*/stack_warn_* rules", opts.Package)
	}
	e := engineOf(rules)
	e.resourceTypes = guardedTypes(compiler, opts.Package, e.resource)
	if opts.Evaluator == EvaluatorIR {
		pol := opts.Plan
		if pol == nil {
			if pol, err = PlanRules(ctx, modules, opts.Package, e.rules); err != nil {
				return nil, err
			}
		}
		prog, err := irvm.Load(pol)
		if err != nil {
			return nil, fmt.Errorf("loading the planned rules: %w", err)
		}
		if err := e.prepareIR(prog, opts.Package, data["config"], resourceRulesByType(e, compiler, opts.Package)); err != nil {
			return nil, err
		}
		return e, nil
	}
	e.store = inmem.NewFromObjectWithOpts(data, inmem.OptReturnASTValuesOnRead(true))
	prepare := func(query string) (rego.PreparedEvalQuery, error) {
		return rego.New(rego.Query(query), rego.Compiler(compiler), rego.Store(e.store)).PrepareForEval(ctx)
	}
	// Resource rules: the rules on one resource, given to the rules as their whole input
	// as Pulumi's analyzer does. One evaluation per resource, of only the rules guarded by
	// its type, measured cheaper than one evaluation iterating the resources with `with
	// input as r`.
	prepareRules := func(rules []Rule) (*ruleQuery, error) {
		fields := make([]string, len(rules))
		for i, r := range rules {
			fields[i] = fmt.Sprintf("%q: data.%s.%s", r.Name, opts.Package, r.Name)
		}
		q, err := prepare(fmt.Sprintf("r = {%s}", strings.Join(fields, ", ")))
		if err != nil {
			return nil, fmt.Errorf("preparing resource rules: %w", err)
		}
		return &ruleQuery{rules: rules, query: q}, nil
	}
	if e.resourceTypes == nil {
		if e.anyType, err = prepareRules(e.resource); err != nil {
			return nil, err
		}
	} else {
		e.byType = map[string]*ruleQuery{}
		for typ, names := range rulesByType(compiler, opts.Package) {
			var rules []Rule
			for _, r := range e.resource {
				if names[r.Name] {
					rules = append(rules, r)
				}
			}
			if e.byType[typ], err = prepareRules(rules); err != nil {
				return nil, err
			}
		}
	}
	var q []string
	for i, r := range e.stack {
		q = append(q, fmt.Sprintf("s%d = data.%s.%s", i, opts.Package, r.Name))
	}
	if len(q) == 0 {
		q = append(q, "true")
	}
	if e.stackQuery, err = prepare(strings.Join(q, "; ")); err != nil {
		return nil, fmt.Errorf("preparing stack rules: %w", err)
	}
	return e, nil
}

// engineOf is an engine of the given rules, without evaluator.
func engineOf(rules []Rule) *Engine {
	e := &Engine{rules: rules, byName: map[string]Rule{}}
	for _, r := range rules {
		e.byName[r.Name] = r
		if r.Stack {
			e.stack = append(e.stack, r)
		} else {
			e.resource = append(e.resource, r)
		}
	}
	return e
}

// resourceRulesByType maps each resource type to the names of the resource rules that
// can match it, or is nil when some rule is not guarded by a type (see guardedTypes).
func resourceRulesByType(e *Engine, compiler *ast.Compiler, pkg string) map[string][]string {
	if e.resourceTypes == nil {
		return nil
	}
	byType := map[string][]string{}
	for typ, names := range rulesByType(compiler, pkg) {
		for _, r := range e.resource {
			if names[r.Name] {
				byType[typ] = append(byType[typ], r.Name)
			}
		}
	}
	return byType
}

// prepareIR loads the planned rules into the IR interpreter, with the same per-type rule
// selection as the topdown queries (byType: see resourceRulesByType).
func (e *Engine) prepareIR(prog *irvm.Program, pkg string, config any, byType map[string][]string) error {
	cfg, err := ast.InterfaceToValue(config)
	if err != nil {
		return fmt.Errorf("converting policy configuration: %w", err)
	}
	if e.ir, err = newIRRules(e, prog, pkg, cfg, byType); err != nil {
		return fmt.Errorf("loading the planned rules: %w", err)
	}
	return nil
}

// Rules lists the rules, ordered by id.
func (e *Engine) Rules() []Rule { return append([]Rule(nil), e.rules...) }

// Evaluate runs every rule on p and returns the findings, ordered by resource, level
// (deny first), rule id and message. The resource rules run on shards of the resources
// while the stack rules run on the whole plan, all concurrently.
func (e *Engine) Evaluate(ctx context.Context, p *plan.Plan) ([]Finding, error) {
	input, resources, err := toValue(p)
	if err != nil {
		return nil, err
	}
	byURN := make(map[string]*plan.Resource, len(p.Resources))
	for i := range p.Resources {
		byURN[p.Resources[i].URN] = &p.Resources[i]
	}
	var relevant []int
	for i := range p.Resources {
		if e.resourceTypes == nil || e.resourceTypes[p.Resources[i].Type] {
			relevant = append(relevant, i)
		}
	}
	var findings []Finding
	if e.ir != nil {
		findings, err = e.evaluateIR(ctx, p, input, resources, relevant, byURN)
	} else {
		findings, err = e.evaluateTopdown(ctx, p, input, resources, relevant, byURN)
	}
	if err != nil {
		return nil, err
	}
	Sort(findings)
	return findings, nil
}

// evaluateTopdown runs the rules through OPA's topdown evaluator. The stack rules, the
// longest part, keep one processor to themselves; the resource rules share the others
// (or, on one processor, run beside them).
func (e *Engine) evaluateTopdown(ctx context.Context, p *plan.Plan, input ast.Value, resources *ast.Array, relevant []int, byURN map[string]*plan.Resource) ([]Finding, error) {
	shards := max(runtime.GOMAXPROCS(0)-1, 1)
	if len(relevant) < 2*shards {
		shards = 1
	}
	results := make([]result, shards+1)
	var wg sync.WaitGroup
	for s := 0; s < shards; s++ {
		part := relevant[s*len(relevant)/shards : (s+1)*len(relevant)/shards]
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[s].findings, results[s].err = e.evalResources(ctx, p, resources, part)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		results[shards].findings, results[shards].err = e.evalStack(ctx, p, input, byURN, nil)
	}()
	wg.Wait()
	return gather(results)
}

// resourceChunk is how many resources one unit of the resource rules' work evaluates
// when the IR evaluator spreads it over the stack rules' idle time: small enough that a
// goroutine doing one comes back soon to a helper it was waiting for.
const resourceChunk = 64

// evaluateIR runs the rules through the IR interpreter: the stack rules spread over
// every processor, and the resource rules, in chunks, in the time their goroutines
// would wait for a shared helper another is computing, or have no stack rule left. So
// the stack rules' longest chain of helpers is never slowed by the resource rules.
func (e *Engine) evaluateIR(ctx context.Context, p *plan.Plan, input ast.Value, resources *ast.Array, relevant []int, byURN map[string]*plan.Resource) ([]Finding, error) {
	chunks := 0
	if len(e.resource) > 0 {
		chunks = (len(relevant) + resourceChunk - 1) / resourceChunk
	}
	results := make([]result, chunks+1)
	var next atomic.Int64
	spare := func() bool {
		c := int(next.Add(1) - 1)
		if c >= chunks {
			return false
		}
		part := relevant[c*resourceChunk : min((c+1)*resourceChunk, len(relevant))]
		results[c].findings, results[c].err = e.ir.evalResources(ctx, p, resources, part)
		return true
	}
	results[chunks].findings, results[chunks].err = e.evalStack(ctx, p, input, byURN, spare)
	for spare() { // the stack rules ran out early, or there are none
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("evaluating rules: %w", err)
	}
	return gather(results)
}

// result is one part of an evaluation's findings.
type result struct {
	findings []Finding
	err      error
}

// gather concatenates the parts' findings, or returns the first part's error.
func gather(results []result) ([]Finding, error) {
	n := 0
	for _, r := range results {
		if r.err != nil {
			return nil, r.err
		}
		n += len(r.findings)
	}
	findings := make([]Finding, 0, n)
	for _, r := range results {
		findings = append(findings, r.findings...)
	}
	return findings, nil
}

// evalResources runs the resource rules on the resources at the indexes part.
func (e *Engine) evalResources(ctx context.Context, p *plan.Plan, resources *ast.Array, part []int) ([]Finding, error) {
	if len(e.resource) == 0 || len(part) == 0 {
		return nil, nil
	}
	if e.ir != nil {
		return e.ir.evalResources(ctx, p, resources, part)
	}
	// One read transaction serves every evaluation of the shard.
	txn, err := e.store.NewTransaction(ctx)
	if err != nil {
		return nil, fmt.Errorf("evaluating resource rules: %w", err)
	}
	defer e.store.Abort(ctx, txn)
	var findings []Finding
	for _, idx := range part {
		res := &p.Resources[idx]
		rq := e.anyType
		if rq == nil {
			rq = e.byType[res.Type]
		}
		rs, err := rq.query.Eval(ctx, rego.EvalParsedInput(resources.Elem(idx).Value), rego.EvalTransaction(txn))
		if err != nil {
			return nil, fmt.Errorf("evaluating resource rules on %s: %w", res.URN, err)
		}
		if len(rs) != 1 {
			return nil, fmt.Errorf("evaluating resource rules on %s: %d results, want 1", res.URN, len(rs))
		}
		byRule, _ := rs[0].Bindings["r"].(map[string]any)
		for _, r := range rq.rules {
			msgs, _ := byRule[r.Name].([]any)
			for _, m := range msgs {
				findings = append(findings, newFinding(r, res, message(m)))
			}
		}
	}
	return findings, nil
}

// evalStack runs the stack rules on the whole plan.
// The IR evaluator's goroutines run spare, if not nil, when they would idle
// (irvm.Program.EvalParallelSpare).
func (e *Engine) evalStack(ctx context.Context, p *plan.Plan, input ast.Value, byURN map[string]*plan.Resource, spare func() bool) ([]Finding, error) {
	if len(e.stack) == 0 {
		return nil, nil
	}
	var byRule [][]string
	if e.ir != nil {
		var err error
		if byRule, err = e.ir.evalStack(ctx, e, input, spare); err != nil {
			return nil, err
		}
	} else {
		rs, err := e.stackQuery.Eval(ctx, rego.EvalParsedInput(input))
		if err != nil {
			return nil, fmt.Errorf("evaluating stack rules: %w", err)
		}
		if len(rs) != 1 {
			return nil, fmt.Errorf("evaluating stack rules: %d results, want 1", len(rs))
		}
		for i := range e.stack {
			msgs, _ := rs[0].Bindings[fmt.Sprintf("s%d", i)].([]any)
			strs := make([]string, len(msgs))
			for j, m := range msgs {
				strs[j] = message(m)
			}
			byRule = append(byRule, strs)
		}
	}
	n := 0
	for _, msgs := range byRule {
		n += len(msgs)
	}
	findings := make([]Finding, 0, n)
	for i, r := range e.stack {
		for _, m := range byRule[i] {
			res, rest := attribute(m, byURN)
			f := newFinding(r, res, rest)
			if !p.Complete && r.NeedsCompleteStack && f.Level == Deny {
				f.Level = Warn
				f.Note = IncompleteNote
			}
			findings = append(findings, f)
		}
	}
	return findings, nil
}

// guardedTypes returns the resource types the resource rules can match, or nil when some
// definition of some rule does not start with a guard `input.type == "<type>"`.
func guardedTypes(c *ast.Compiler, pkg string, rules []Rule) map[string]bool {
	names := map[string]bool{}
	for _, r := range rules {
		names[r.Name] = true
	}
	types := map[string]bool{}
	guarded := true
	eachDefinition(c, pkg, func(name string, r *ast.Rule) {
		if !names[name] {
			return
		}
		guard := typeGuard(r)
		if guard == "" {
			guarded = false
		}
		types[guard] = true
	})
	if !guarded {
		return nil
	}
	return types
}

// rulesByType maps each resource type some definition guards to the names of the rules
// with a definition guarded by it. Only meaningful when guardedTypes is not nil.
func rulesByType(c *ast.Compiler, pkg string) map[string]map[string]bool {
	byType := map[string]map[string]bool{}
	eachDefinition(c, pkg, func(name string, r *ast.Rule) {
		if guard := typeGuard(r); guard != "" {
			if byType[guard] == nil {
				byType[guard] = map[string]bool{}
			}
			byType[guard][name] = true
		}
	})
	return byType
}

// typeGuard is the type of a definition starting with `input.type == "<type>"`, or "".
func typeGuard(r *ast.Rule) string {
	inputType := ast.MustParseRef("input.type")
	guard := ""
	// The compiler rewrites `==` against a constant into unification (`=`).
	if len(r.Body) > 0 && (r.Body[0].IsEquality() || r.Body[0].Operator().Equal(ast.Equal.Ref())) {
		if terms, ok := r.Body[0].Terms.([]*ast.Term); ok && len(terms) == 3 {
			for _, pair := range [][2]*ast.Term{{terms[1], terms[2]}, {terms[2], terms[1]}} {
				ref, isRef := pair[0].Value.(ast.Ref)
				str, isStr := pair[1].Value.(ast.String)
				if isRef && isStr && ref.Equal(inputType) {
					guard = string(str)
				}
			}
		}
	}
	return guard
}

func newFinding(r Rule, res *plan.Resource, msg string) Finding {
	f := Finding{Rule: r, Level: r.Level, Message: msg}
	if res != nil {
		f.URN, f.Type, f.Name, f.Location = res.URN, res.Type, res.Name, res.Location
	}
	return f
}

// message renders a rule result: Pulumi expects strings; anything else is printed as JSON.
func message(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// attribute splits a stack-rule message "URN: text" into the resource and the text. The
// URN is recognised only if it names a resource of the plan.
func attribute(msg string, byURN map[string]*plan.Resource) (*plan.Resource, string) {
	for i := strings.Index(msg, ": "); i >= 0; {
		if r, ok := byURN[msg[:i]]; ok {
			return r, msg[i+2:]
		}
		j := strings.Index(msg[i+2:], ": ")
		if j < 0 {
			break
		}
		i += 2 + j
	}
	return nil, msg
}

// Sort orders findings by resource, level (deny first), rule id and message, keeping the
// order of findings equal in all four. It sorts their indexes and moves each finding
// once: a Finding is large, and a report has thousands.
func Sort(fs []Finding) {
	order := make([]int, len(fs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return compareFindings(&fs[i], &fs[j]) })
	sorted := make([]Finding, len(fs))
	for k, i := range order {
		sorted[k] = fs[i]
	}
	copy(fs, sorted)
}

// compareFindings orders two findings as Sort does.
func compareFindings(a, b *Finding) int {
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
