package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/compile"
	"github.com/open-policy-agent/opa/v1/ir"

	"github.com/eventpipe/eventpipe/policies/irvm"
	"github.com/eventpipe/eventpipe/policies/plan"
)

// Evaluator selects how an Engine evaluates the rules.
type Evaluator string

const (
	// EvaluatorIR, the default, runs the rules as OPA's planner compiles them (the IR
	// OPA's Wasm target starts from) in eventpipe's interpreter, policies/irvm, with OPA's
	// builtins: several times faster than topdown on large plans.
	EvaluatorIR Evaluator = "ir"
	// EvaluatorTopdown runs the rules in OPA's reference evaluator (topdown), as
	// `opa eval` and Pulumi's policy packs do. The differential tests hold the two equal.
	EvaluatorTopdown Evaluator = "topdown"
)

// Evaluators lists the valid Evaluator values, the default first.
func Evaluators() []Evaluator { return []Evaluator{EvaluatorIR, EvaluatorTopdown} }

// irRules evaluates the rules through their planned IR.
type irRules struct {
	prog *irvm.Program
	// data is data.config as an OPA value, {"config": {...}}.
	data ast.Value
	// byType holds, when Engine.resourceTypes is not nil, the plans of the rules that can
	// match each type; anyType, otherwise, the plans of every resource rule.
	byType  map[string]*irQuery
	anyType *irQuery
	// stack holds the plans of the stack rules, in Engine.stack order.
	stack []int
}

// irQuery is the plans of some rules, in the same order.
type irQuery struct {
	rules []Rule
	plans []int
}

// entrypoint is the planner's name for a rule: the package path and rule name joined
// by "/".
func entrypoint(pkg, rule string) string {
	return strings.ReplaceAll(pkg, ".", "/") + "/" + rule
}

// PlanRules compiles the rule files with OPA's planner, one entrypoint per deny/warn
// rule of package pkg, into an IR policy for package irvm.
func PlanRules(ctx context.Context, modules map[string]*ast.Module, pkg string, rules []Rule) (*ir.Policy, error) {
	raw, err := planJSON(ctx, modules, pkg, rules)
	if err != nil {
		return nil, err
	}
	var pol ir.Policy
	if err := json.Unmarshal(raw, &pol); err != nil {
		return nil, fmt.Errorf("decoding the planned rules: %w", err)
	}
	return &pol, nil
}

// planJSON is PlanRules' policy in the planner's JSON form.
func planJSON(ctx context.Context, modules map[string]*ast.Module, pkg string, rules []Rule) ([]byte, error) {
	b := &bundle.Bundle{Data: map[string]any{}}
	for name, m := range modules {
		b.Modules = append(b.Modules, bundle.ModuleFile{Path: name, URL: name, Parsed: m})
	}
	eps := make([]string, len(rules))
	for i, r := range rules {
		eps[i] = entrypoint(pkg, r.Name)
	}
	c := compile.New().WithTarget(compile.TargetPlan).WithEntrypoints(eps...).WithBundle(b).WithRegoVersion(ast.RegoV1)
	if err := c.Build(ctx); err != nil {
		return nil, fmt.Errorf("planning the rules: %w", err)
	}
	out := c.Bundle()
	if len(out.PlanModules) != 1 {
		return nil, fmt.Errorf("planning the rules: %d plan modules, want 1", len(out.PlanModules))
	}
	return out.PlanModules[0].Raw, nil
}

// newIRRules loads the planned rules and maps each rule to its plan.
func newIRRules(e *Engine, prog *irvm.Program, pkg string, config ast.Value, byType map[string][]string) (*irRules, error) {
	var err error
	x := &irRules{prog: prog, data: ast.NewObject(ast.Item(ast.InternedTerm("config"), ast.NewTerm(config)))}
	query := func(rules []Rule) (*irQuery, error) {
		q := &irQuery{rules: rules}
		for _, r := range rules {
			idx, ok := prog.Plan(entrypoint(pkg, r.Name))
			if !ok {
				return nil, fmt.Errorf("the planned rules have no plan for %s", r.Name)
			}
			q.plans = append(q.plans, idx)
		}
		return q, nil
	}
	if byType == nil {
		if x.anyType, err = query(e.resource); err != nil {
			return nil, err
		}
	} else {
		x.byType = map[string]*irQuery{}
		for typ, names := range byType {
			rules := make([]Rule, len(names))
			for i, name := range names {
				r, ok := e.byName[name]
				if !ok {
					return nil, fmt.Errorf("type %s: no rule %s", typ, name)
				}
				rules[i] = r
			}
			if x.byType[typ], err = query(rules); err != nil {
				return nil, err
			}
		}
	}
	stack, err := query(e.stack)
	if err != nil {
		return nil, err
	}
	x.stack = stack.plans
	return x, nil
}

// evalResources runs the resource rules on the resources at the indexes part.
func (x *irRules) evalResources(ctx context.Context, p *plan.Plan, resources *ast.Array, part []int) ([]Finding, error) {
	var findings []Finding
	for _, idx := range part {
		res := &p.Resources[idx]
		q := x.anyType
		if q == nil {
			q = x.byType[res.Type]
		}
		if q == nil || len(q.plans) == 0 {
			continue
		}
		sets, err := x.prog.Eval(ctx, resources.Elem(idx).Value, x.data, q.plans)
		if err != nil {
			return nil, fmt.Errorf("evaluating resource rules on %s: %w", res.URN, err)
		}
		for i, r := range q.rules {
			msgs, err := messages(sets[i])
			if err != nil {
				return nil, fmt.Errorf("evaluating %s on %s: %w", r.Name, res.URN, err)
			}
			for _, m := range msgs {
				findings = append(findings, newFinding(r, res, m))
			}
		}
	}
	return findings, nil
}

// evalStack runs the stack rules on the whole plan, in one evaluation spread over every
// processor (the helpers and indexes the rules share are computed once), running spare
// work when they would idle (irvm.Program.EvalParallelSpare).
func (x *irRules) evalStack(ctx context.Context, e *Engine, input ast.Value, spare func() bool) ([][]string, error) {
	sets, err := x.prog.EvalParallelSpare(ctx, input, x.data, x.stack, runtime.GOMAXPROCS(0), spare)
	if err != nil {
		return nil, fmt.Errorf("evaluating stack rules: %w", err)
	}
	out := make([][]string, len(sets))
	for i, set := range sets {
		if out[i], err = messages(set); err != nil {
			return nil, fmt.Errorf("evaluating %s: %w", e.stack[i].Name, err)
		}
	}
	return out, nil
}

// messages reads an entrypoint's result set, {{"result": rule value}}, as the rule's
// messages: the elements of a partial set rule, strings as they are and other values as
// JSON (as the topdown path prints them). An undefined rule has none.
func messages(results irvm.ResultSet) ([]string, error) {
	values := results.Values()
	if len(values) == 0 {
		return nil, nil
	}
	if len(values) > 1 {
		return nil, fmt.Errorf("%d rule values, want 1", len(values))
	}
	value := values[0]
	var elems []*ast.Term
	switch v := value.Value.(type) {
	case ast.Set:
		elems = v.Slice()
	case *ast.Array:
		for i := range v.Len() {
			elems = append(elems, v.Elem(i))
		}
	default:
		return nil, fmt.Errorf("rule value %v is not a set of messages", value)
	}
	out := make([]string, 0, len(elems))
	for _, t := range elems {
		if s, ok := t.Value.(ast.String); ok {
			out = append(out, string(s))
			continue
		}
		v, err := ast.JSON(t.Value)
		if err != nil {
			return nil, fmt.Errorf("message %v: %w", t, err)
		}
		out = append(out, message(v))
	}
	return out, nil
}
