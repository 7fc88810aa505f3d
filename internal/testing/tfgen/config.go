package tfgen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The configuration: a tree of modules, each with resources, module calls, variables and
// outputs, and the expressions of the attributes that link resources, written as
// `terraform show -json` writes them (configuration.root_module).

const (
	topicType        = "google_pubsub_topic"
	subscriptionType = "google_pubsub_subscription"
)

// linkingAttributes are, by resource type, the attributes the model links by and the
// resource type each one names.
var linkingAttributes = map[string]map[string]string{
	subscriptionType:                         {"topic": topicType, "dead_letter_policy": topicType},
	"google_pubsub_topic_iam_member":         {"topic": topicType},
	"google_pubsub_topic_iam_binding":        {"topic": topicType},
	"google_pubsub_topic_iam_policy":         {"topic": topicType},
	"google_pubsub_subscription_iam_member":  {"subscription": subscriptionType},
	"google_pubsub_subscription_iam_binding": {"subscription": subscriptionType},
	"google_pubsub_subscription_iam_policy":  {"subscription": subscriptionType},
}

// Instancing kinds of a resource or module call.
const (
	single = iota
	counted
	forEach
)

// instancing is how many instances a resource or module call has, and their keys.
type instancing struct {
	kind int
	keys []string // printed keys: [0], ["a"]
	// expression is the count_expression or for_each_expression.
	expression map[string]any
}

// module is one module's configuration.
type module struct {
	depth     int
	resources []*resource
	calls     []*call
	variables map[string]*variable
	outputs   map[string]*output
}

type resource struct {
	mode, typ, name string
	inst            instancing
	// expressions are the attribute expressions other than the linking ones.
	expressions map[string]any
	// links are the linking attributes' expressions (absent: the configuration shows none).
	links map[string]*expr
	// dlq is how the configuration writes dead_letter_policy: literal (a block whose
	// dead_letter_topic is links["dead_letter_policy"]), dynamic, absent, or object (a
	// block written as an object, which Terraform never prints but the model accepts).
	dlq string
}

func (r *resource) address() string { return r.typ + "." + r.name }

type call struct {
	name  string
	inst  instancing
	child *module
	// passed are the expressions the call passes to its module's variables.
	passed map[string]*expr
}

type variable struct {
	// target is the resource type the variable's value names ("" for other values),
	// budget how many more module boundaries an expression passed to it may cross.
	target string
	budget int
	// defaulted variables are not passed by the call when it has no expression for them.
	defaulted bool
	order     int
}

type output struct {
	e     *expr
	order int
}

// expr is an expression of the configuration: the references Terraform lists for it, or
// a constant (no references).
type expr struct {
	refs     []string
	constant any
	// shape is what the expression names, for the trace.
	shape string
}

func (e *expr) json() map[string]any {
	if e.refs == nil {
		return map[string]any{"constant_value": e.constant}
	}
	refs := make([]any, len(e.refs))
	for i, r := range e.refs {
		refs[i] = r
	}
	return map[string]any{"references": refs}
}

// quoteKey prints a for_each key as an address does: ["key"], with HCL's escapes.
func quoteKey(k string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "${", "$${", "%{", "%%{")
	return `["` + r.Replace(k) + `"]`
}

// forEachKeys are keys for_each maps use, some with characters that an address parser
// splitting on dots or brackets gets wrong.
var forEachKeys = []string{"a", "b", "orders", "dead-letters", "eu.west", "x y", `say "hi"`, "k[1]", "payments"}

// instances chooses how a resource or module call of module m is instantiated (count
// and for_each can give none).
func (g *gen) instances(m *module) instancing {
	switch weighted(g, []weight[int]{{single, 6}, {counted, 2}, {forEach, 2}}) {
	case counted:
		n := 1 + g.r.IntN(3)
		if g.chance(0.1) {
			n = 0
		}
		inst := instancing{kind: counted}
		for i := range n {
			inst.keys = append(inst.keys, "["+strconv.Itoa(i)+"]")
		}
		inst.expression = g.countExpression(m, n)
		return inst
	case forEach:
		keys := slices.Clone(forEachKeys)
		g.r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		n := 1 + g.r.IntN(3)
		if g.chance(0.1) {
			n = 0
		}
		inst := instancing{kind: forEach}
		for _, k := range keys[:n] {
			inst.keys = append(inst.keys, quoteKey(k))
		}
		inst.expression = g.eachExpression(m)
		return inst
	}
	return instancing{kind: single}
}

func (g *gen) countExpression(m *module, n int) map[string]any {
	if g.chance(0.5) {
		return map[string]any{"constant_value": n}
	}
	return (&expr{refs: []string{"var." + g.variable(m, "", 0).name(m)}}).json()
}

// eachExpression is a for_each expression: a variable, a local, other resources, or a
// literal map.
func (g *gen) eachExpression(m *module) map[string]any {
	switch g.r.IntN(4) {
	case 0:
		return (&expr{refs: []string{"var." + g.variable(m, topicType, 0).name(m)}}).json()
	case 1:
		return (&expr{refs: []string{"local." + g.fresh("items")}}).json()
	case 2:
		if t := g.someResource(m, topicType, nil); t != nil {
			return (&expr{refs: []string{t.address() + ".name", t.address()}}).json()
		}
	}
	return map[string]any{"constant_value": map[string]any{"a": "x", "b": "y"}}
}

// name finds a variable's name in m.
func (v *variable) name(m *module) string {
	for n, x := range m.variables {
		if x == v {
			return n
		}
	}
	panic("tfgen: a variable outside its module")
}

// variable adds a variable to m (or reuses one for the same target).
func (g *gen) variable(m *module, target string, budget int) *variable {
	if g.chance(0.3) {
		for _, n := range sortedKeys(m.variables) {
			if v := m.variables[n]; v.target == target && v.budget >= budget {
				return v
			}
		}
	}
	v := &variable{target: target, budget: budget, defaulted: g.chance(0.1), order: len(m.variables)}
	name := g.fresh(pick(g, "dlq_topic", "topic", "subscription"))
	if target == "" {
		name = g.fresh(pick(g, "name", "prefix", "labels"))
	}
	if g.chance(0.1) {
		name = g.fresh("private-service") // hyphens are valid in names
	}
	m.variables[name] = v
	return v
}

// configure builds the configuration: the root module and its descendants.
func (g *gen) configure() *module {
	maxDepth := weighted(g, []weight[int]{{0, 2}, {1, 3}, {2, 3}, {3, 2}, {4, 1}})
	if g.chance(0.02) {
		maxDepth = 9
		g.trace.features["deep-module"] = true
	}
	root := g.module(0, maxDepth)
	g.passVariables(root)
	return root
}

// module builds a module at depth and its children, down to maxDepth.
func (g *gen) module(depth, maxDepth int) *module {
	m := &module{depth: depth, variables: map[string]*variable{}, outputs: map[string]*output{}}
	if depth < maxDepth {
		n := g.r.IntN(3)
		if depth == 0 {
			n = 1 + g.r.IntN(2)
		}
		if maxDepth > 4 {
			n = 1
		}
		for range n {
			c := &call{name: g.fresh(pick(g, "unit", "pubsub", "dlq", "worker")), passed: map[string]*expr{}}
			c.inst = g.instances(m)
			c.child = g.module(depth+1, maxDepth)
			m.calls = append(m.calls, c)
		}
	}
	nres := 1 + g.r.IntN(5)
	if depth == 0 {
		nres = 2 + g.r.IntN(6)
	}
	if depth > 4 {
		nres = g.r.IntN(2)
	}
	if depth > 0 && g.chance(0.1) {
		// A module without resources, passing what it is given through its outputs.
		nres = 0
	}
	for range nres {
		typ := weighted(g, []weight[string]{
			{topicType, 6}, {subscriptionType, 7},
			{"google_pubsub_topic_iam_member", 2}, {"google_pubsub_topic_iam_binding", 1}, {"google_pubsub_topic_iam_policy", 1},
			{"google_pubsub_subscription_iam_member", 2}, {"google_pubsub_subscription_iam_binding", 1}, {"google_pubsub_subscription_iam_policy", 1},
			{"google_project_iam_member", 1}, {"google_cloud_run_v2_service", 1}, {"google_firestore_field", 1},
			{"google_monitoring_alert_policy", 1}, {"random_id", 1}, {"google_storage_bucket", 1},
		})
		r := &resource{mode: "managed", typ: typ, name: g.fresh(pick(g, "events", "orders", "dlq", "t", "s", "worker", "dead-letter")), links: map[string]*expr{}}
		r.inst = g.instances(m)
		m.resources = append(m.resources, r)
	}
	// Linking expressions are written once every resource of the module exists, so they
	// can name any of them.
	for _, r := range m.resources {
		for _, attribute := range sortedKeys(linkingAttributes[r.typ]) {
			target := linkingAttributes[r.typ][attribute]
			if attribute == "dead_letter_policy" {
				r.dlq = weighted(g, []weight[string]{{"literal", 6}, {"dynamic", 3}, {"absent", 3}, {"object", 1}})
				if r.dlq == "dynamic" || r.dlq == "absent" {
					continue
				}
			} else if g.chance(0.03) {
				continue // a linking attribute without an expression
			}
			r.links[attribute] = g.expr(m, r, target, 3)
		}
		r.expressions = g.otherExpressions(m, r)
	}
	// Outputs and variables that name no linking resource: noise the graph still holds.
	for range g.r.IntN(2) {
		m.outputs[g.fresh("name")] = &output{e: &expr{refs: []string{"var." + g.variable(m, "", 0).name(m)}, shape: "variable"}, order: len(m.outputs)}
	}
	return m
}

// someResource returns a managed resource of type typ in m other than self, or nil.
func (g *gen) someResource(m *module, typ string, self *resource) *resource {
	var found []*resource
	for _, r := range m.resources {
		if r.typ == typ && r != self && r.mode == "managed" {
			found = append(found, r)
		}
	}
	if len(found) == 0 {
		return nil
	}
	return pick(g, found...)
}

// expr writes an expression naming a resource of type target in module m, for owner (a
// resource, or nil for a module call's argument or an output), crossing at most budget
// more module boundaries.
func (g *gen) expr(m *module, owner *resource, target string, budget int) *expr {
	return g.exprIn(m, owner, nil, target, budget)
}

// exprIn is expr where the expression belongs to a resource (owner) or a module call
// (caller) of m, whose instancing decides whether each.key, each.value and count.index
// are valid.
func (g *gen) exprIn(m *module, owner *resource, caller *call, target string, budget int) *expr {
	eachValid, countValid := false, false
	if owner != nil {
		eachValid, countValid = owner.inst.kind == forEach, owner.inst.kind == counted
	}
	if caller != nil {
		eachValid, countValid = caller.inst.kind == forEach, caller.inst.kind == counted
	}
	choices := []weight[string]{
		{"resource", 10}, {"literal", 2}, {"local", 2}, {"data", 2}, {"ghost", 1}, {"mixed", 1},
	}
	if budget > 0 {
		choices = append(choices, weight[string]{"variable", 5}, weight[string]{"output", 7})
	}
	if eachValid {
		choices = append(choices, weight[string]{"each", 3})
	}
	kind := weighted(g, choices)
	if g.chance(0.01) {
		kind = "each" // each.value where there is no for_each: the model cannot follow it
	}
	switch kind {
	case "resource":
		t := g.someResource(m, target, owner)
		switch {
		case t != nil:
			return g.resourceRef(t, eachValid, countValid)
		case budget > 0 && g.chance(0.7):
			// No such resource here: the module is given one.
			return g.variableRef(m, target, budget)
		}
		return g.ghost(target)
	case "literal":
		return &expr{constant: fmt.Sprintf("projects/%s/topics/%s", g.projects[0], g.fresh("literal")), shape: "literal"}
	case "local":
		refs := []string{"local." + g.fresh("topic_id")}
		if g.chance(0.3) {
			refs = append([]string{refs[0] + ".id"}, refs...)
		}
		return &expr{refs: refs, shape: "local"}
	case "data":
		name := g.fresh("existing")
		typ := "data." + target + "." + name
		m.resources = append(m.resources, &resource{mode: "data", typ: target, name: name, links: map[string]*expr{}, expressions: map[string]any{"name": map[string]any{"constant_value": name}}})
		return &expr{refs: []string{typ + ".id", typ}, shape: "data"}
	case "ghost":
		return g.ghost(target)
	case "mixed":
		// var.create ? google_pubsub_topic.t[0].id : var.topic
		a := g.exprIn(m, owner, caller, target, 0)
		v := g.variable(m, target, 0)
		refs := append([]string{"var." + g.variable(m, "", 0).name(m)}, a.refs...)
		refs = append(refs, "var."+v.name(m))
		return &expr{refs: refs, shape: "mixed>" + a.shape}
	case "variable":
		return g.variableRef(m, target, budget)
	case "output":
		return g.outputRef(m, caller, target, budget, eachValid)
	case "each":
		if g.chance(0.5) {
			return &expr{refs: []string{"each.value.topic", "each.value"}, shape: "each"}
		}
		return &expr{refs: []string{"each.value"}, shape: "each"}
	}
	panic("tfgen: unknown expression kind " + kind)
}

// variableRef names a variable of m (var.x, or var.x.id) whose value names a resource of
// type target, crossing at most budget module boundaries.
func (g *gen) variableRef(m *module, target string, budget int) *expr {
	name := g.variable(m, target, budget-1).name(m)
	refs := []string{"var." + name}
	if g.chance(0.2) {
		refs = []string{"var." + name + ".id", "var." + name}
	}
	return &expr{refs: refs, shape: "variable"}
}

// ghost names a resource the plan does not hold (removed from the configuration, say).
func (g *gen) ghost(target string) *expr {
	a := target + "." + g.fresh("ghost")
	return &expr{refs: []string{a + ".id", a}, shape: "ghost"}
}

// resourceRef names resource t as Terraform lists the reference: the whole traversal,
// each shorter step, the subject and, for an instance, the resource without its key.
func (g *gen) resourceRef(t *resource, eachValid, countValid bool) *expr {
	a := t.address()
	attr := pick(g, ".id", ".id", ".name", "")
	if t.inst.kind == single {
		if g.chance(0.03) {
			// A key on a resource without count or for_each: not planned.
			refs := []string{a + "[0]", a}
			if attr != "" {
				refs = append([]string{a + "[0]" + attr}, refs...)
			}
			return &expr{refs: refs, shape: "ghost"}
		}
		if attr == "" {
			return &expr{refs: []string{a}, shape: "resource"}
		}
		return &expr{refs: []string{a + attr, a}, shape: "resource"}
	}
	switch {
	case t.inst.kind == forEach && eachValid && g.chance(0.8):
		return &expr{refs: []string{a, "each.key"}, shape: "resource-each-key"}
	case t.inst.kind == counted && countValid && g.chance(0.8):
		return &expr{refs: []string{a, "count.index"}, shape: "resource-count-index"}
	case g.chance(0.2):
		// t[*].id, values(t)[0].id: the whole resource.
		return &expr{refs: []string{a}, shape: "resource-whole"}
	}
	key := "[7]"
	if t.inst.kind == forEach {
		key = quoteKey("missing")
	}
	shape := "ghost"
	if len(t.inst.keys) > 0 && !g.chance(0.05) {
		key = pick(g, t.inst.keys...)
		shape = "resource-keyed"
	}
	refs := []string{a + key, a}
	if attr != "" {
		refs = append([]string{a + key + attr}, refs...)
	}
	return &expr{refs: refs, shape: shape}
}

// outputRef names an output of a child module of m (for an argument of caller, or nil),
// writing that output's expression in the child; with no child, a module the
// configuration does not call.
func (g *gen) outputRef(m *module, caller *call, target string, budget int, eachValid bool) *expr {
	// A call passing its own output to its module is a cycle Terraform refuses; now and
	// then one is written all the same, which a model must not loop on.
	calls := slices.DeleteFunc(slices.Clone(m.calls), func(c *call) bool { return c == caller && !g.chance(0.1) })
	if len(calls) == 0 {
		call := "module." + g.fresh("gone")
		return &expr{refs: []string{call + ".topic", call}, shape: "ghost"}
	}
	c := pick(g, calls...)
	if c == caller {
		g.trace.features["cycle"] = true
	}
	var providers []*call
	for _, x := range calls {
		if g.someResource(x.child, target, nil) != nil && x.inst.kind != single {
			providers = append(providers, x)
		}
	}
	if len(providers) > 0 && g.chance(0.5) {
		c = pick(g, providers...)
	}
	var name string
	var inner string
	if names := sortedKeys(c.child.outputs); len(names) > 0 && g.chance(0.3) {
		name = pick(g, names...)
		inner = c.child.outputs[name].e.shape
	}
	if name == "" {
		name = g.fresh(pick(g, "id", "topic", "topic_id", "subscription"))
		// Modules mostly output one of their own resources.
		var e *expr
		if t := g.someResource(c.child, target, nil); t != nil && g.chance(0.6) {
			e = g.resourceRef(t, false, false)
		} else {
			e = g.expr(c.child, nil, target, budget-1)
		}
		c.child.outputs[name] = &output{e: e, order: len(c.child.outputs)}
		inner = e.shape
	}
	call := "module." + c.name
	if g.chance(0.04) {
		// An output the module does not declare.
		name, inner = g.fresh("undeclared"), "ghost"
	}
	if c.inst.kind == single {
		if g.chance(0.05) {
			return &expr{refs: []string{call}, shape: "output-module>" + inner}
		}
		return &expr{refs: []string{call + "." + name, call}, shape: "output>" + inner}
	}
	switch {
	case c.inst.kind == forEach && eachValid && g.chance(0.3):
		return &expr{refs: []string{call, "each.key"}, shape: "output-each-key>" + inner}
	case g.chance(0.1):
		return &expr{refs: []string{call}, shape: "output-whole>" + inner}
	case len(c.inst.keys) == 0 || g.chance(0.05):
		return &expr{refs: []string{call + "[5]." + name, call + "[5]"}, shape: "ghost"}
	}
	key := pick(g, c.inst.keys...)
	if g.chance(0.1) {
		// module.m[0] as an object: every output of that instance.
		return &expr{refs: []string{call + key, call}, shape: "output-instance>" + inner}
	}
	return &expr{refs: []string{call + key + "." + name, call + key}, shape: "output-keyed>" + inner}
}

// passVariables writes, for every module call in the tree under m, an expression for each
// variable of its module that is not defaulted. Writing one can add variables to m (and
// outputs to a child), so the tree is walked until every variable has its value.
func (g *gen) passVariables(root *module) {
	for changed := true; changed; {
		changed = false
		var walk func(m *module)
		walk = func(m *module) {
			for _, c := range m.calls {
				for _, name := range sortedKeys(c.child.variables) {
					v := c.child.variables[name]
					if _, done := c.passed[name]; done || v.defaulted {
						continue
					}
					var e *expr
					if v.target == "" {
						e = &expr{constant: g.fresh("value"), shape: "literal"}
						if g.chance(0.3) {
							e = &expr{refs: []string{"count.index"}, shape: "count"}
						}
					} else {
						e = g.exprIn(m, nil, c, v.target, v.budget)
					}
					c.passed[name] = e
					changed = true
				}
				walk(c.child)
			}
		}
		walk(root)
	}
}

// sortedKeys are m's keys in order, so that generation never depends on map order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// json is the module's configuration as `terraform show -json` prints it.
func (m *module) json() map[string]any {
	out := map[string]any{}
	var resources []any
	for _, r := range m.resources {
		resources = append(resources, r.json())
	}
	if len(resources) > 0 {
		out["resources"] = resources
	}
	if len(m.calls) > 0 {
		calls := map[string]any{}
		for _, c := range m.calls {
			cj := map[string]any{"source": "./modules/" + c.name, "module": c.child.json()}
			if len(c.passed) > 0 {
				exprs := map[string]any{}
				for n, e := range c.passed {
					exprs[n] = e.json()
				}
				cj["expressions"] = exprs
			}
			switch c.inst.kind {
			case counted:
				cj["count_expression"] = c.inst.expression
			case forEach:
				cj["for_each_expression"] = c.inst.expression
			}
			calls[c.name] = cj
		}
		out["module_calls"] = calls
	}
	if len(m.outputs) > 0 {
		outs := map[string]any{}
		for n, o := range m.outputs {
			oj := map[string]any{"expression": o.e.json()}
			if o.order%3 == 2 {
				oj["sensitive"] = true
			}
			outs[n] = oj
		}
		out["outputs"] = outs
	}
	if len(m.variables) > 0 {
		vars := map[string]any{}
		for n, v := range m.variables {
			vj := map[string]any{}
			if v.defaulted {
				vj["default"] = "projects/acme-prod/topics/default"
			}
			if v.order%2 == 1 {
				vj["description"] = "the " + n
			}
			vars[n] = vj
		}
		out["variables"] = vars
	}
	return out
}

// rootVariables are the plan's "variables": the root module's values.
func (m *module) rootVariables() map[string]any {
	vars := map[string]any{}
	for n := range m.variables {
		vars[n] = map[string]any{"value": "projects/acme-prod/topics/" + n}
	}
	return vars
}

func (r *resource) json() map[string]any {
	exprs := map[string]any{}
	for k, v := range r.expressions {
		exprs[k] = v
	}
	for attribute, e := range r.links {
		if attribute != "dead_letter_policy" {
			exprs[attribute] = e.json()
			continue
		}
		block := map[string]any{"dead_letter_topic": e.json(), "max_delivery_attempts": map[string]any{"constant_value": 5}}
		if r.dlq == "object" {
			exprs[attribute] = block
		} else {
			exprs[attribute] = []any{block}
		}
	}
	out := map[string]any{
		"address": r.address(), "mode": r.mode, "type": r.typ, "name": r.name,
		"provider_config_key": "google", "schema_version": 0, "expressions": exprs,
	}
	if r.mode == "data" {
		out["address"] = "data." + r.address()
	}
	switch r.inst.kind {
	case counted:
		out["count_expression"] = r.inst.expression
	case forEach:
		out["for_each_expression"] = r.inst.expression
	}
	return out
}

// otherExpressions are the attribute expressions a resource's configuration writes
// besides its linking attributes.
func (g *gen) otherExpressions(m *module, r *resource) map[string]any {
	exprs := map[string]any{"name": map[string]any{"constant_value": r.name}}
	if m.depth > 0 && g.chance(0.5) {
		exprs["name"] = (&expr{refs: []string{"var." + g.variable(m, "", 0).name(m)}}).json()
	}
	if r.inst.kind == forEach && g.chance(0.5) {
		exprs["labels"] = (&expr{refs: []string{"each.value.labels", "each.value"}}).json()
	}
	switch r.typ {
	case subscriptionType:
		exprs["ack_deadline_seconds"] = map[string]any{"constant_value": 60}
		exprs["retry_policy"] = []any{map[string]any{"minimum_backoff": map[string]any{"constant_value": "10s"}}}
	case "google_pubsub_topic_iam_member", "google_pubsub_subscription_iam_member":
		exprs["role"] = map[string]any{"constant_value": "roles/pubsub.publisher"}
		exprs["member"] = (&expr{refs: []string{"data.google_project.this.number", "data.google_project.this"}}).json()
	}
	return exprs
}
