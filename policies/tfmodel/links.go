package tfmodel

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// links are one planned instance's links: model_terraform_references.rego's
// terraform_links value for its address.
type links struct {
	// exact is propertyDependencies: by model property name (camelCase: topic,
	// deadLetterPolicy, subscription), the one planned instance it surely names.
	exact map[string][]string
	// possible is possibleDependencies: by model property name, the instances it may name.
	possible map[string][]string
	// dependencies are the instances exact names, sorted and distinct.
	dependencies []string
}

// links is terraform_links: the links of every planned instance with linking attributes
// that has any, by address. Target lists may be shared between instances: do not modify
// them.
func (x *referenceIndex) links() map[string]links {
	l := newLinker(x)
	out := map[string]links{}
	for _, p := range l.linking {
		if !p.hasAddress {
			continue
		}
		var found *links
		for _, attribute := range linkingAttributes[p.typ] {
			exact, targets, ok := l.attributeLink(p, attribute)
			if !ok {
				continue
			}
			if found == nil {
				found = &links{exact: map[string][]string{}, possible: map[string][]string{}, dependencies: []string{}}
			}
			if exact {
				found.exact[linkingProperties[attribute]] = targets
				found.dependencies = append(found.dependencies, targets...)
			} else {
				found.possible[linkingProperties[attribute]] = targets
			}
		}
		if found != nil {
			found.dependencies = sortedDistinct(found.dependencies)
			out[p.address] = *found
		}
	}
	return out
}

// linkExpressions is terraform_link_expression for every planned instance with linking
// attributes and each of its linking properties, where it is defined: by address, then
// by model property name, the text a finding names when a link cannot be decided.
func (x *referenceIndex) linkExpressions() map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, p := range x.linking {
		if !p.hasAddress {
			continue
		}
		texts := map[string]string{}
		for _, attribute := range linkingAttributes[p.typ] {
			texts[linkingProperties[attribute]] = x.attributeExpressionText(p, attribute)
		}
		out[p.address] = texts
	}
	return out
}

// attributeExpressionText is attribute_expression_text: the references the configuration
// writes in a linking attribute's expression (each the longest traversal of its kind), or
// what the plan does not show.
func (x *referenceIndex) attributeExpressionText(p *plannedChange, attribute string) string {
	if text, ok := x.referencesText(p, attribute); ok {
		return text
	}
	if attribute == "dead_letter_policy" {
		return fmt.Sprintf(`dynamic "%s" block, whose content the plan does not show`, attribute)
	}
	return attribute + ", which the plan does not show"
}

func (x *referenceIndex) referencesText(p *plannedChange, attribute string) (string, bool) {
	config, ok := x.resourceConfig(p)
	if !ok {
		return "", false
	}
	expressions, ok := field(config, "expressions")
	if !ok {
		return "", false
	}
	expr, ok := linkingExpression(expressions, attribute)
	if !ok {
		return "", false
	}
	refs := expressionReferences(expr)
	if len(refs) == 0 {
		return "", false
	}
	set := make([]string, len(refs))
	for i, r := range refs {
		s, ok := r.(string)
		if !ok {
			// Never extended by another (startswith fails on it): it is among the longest,
			// and concat fails on it.
			return "", false
		}
		set[i] = s
	}
	set = sortedDistinct(set)
	longest := make([]string, 0, len(set))
	for _, r := range set {
		if !extended(r, set) {
			longest = append(longest, r)
		}
	}
	return linkedValuePath(attribute) + " = " + strings.Join(longest, ", "), true
}

// extended reports whether refs holds a longer traversal of r (extended).
func extended(r string, refs []string) bool {
	for _, other := range refs {
		if len(other) > len(r) && strings.HasPrefix(other, r) && (other[len(r)] == '.' || other[len(r)] == '[') {
			return true
		}
	}
	return false
}

// linkedValuePath is linked_value_path.
func linkedValuePath(attribute string) string {
	if attribute == "dead_letter_policy" {
		return "dead_letter_policy.dead_letter_topic"
	}
	return attribute
}

// linker holds the reference graph of a plan (model_terraform_references.rego and
// model_terraform_direct.rego), built as far as the links need it.
type linker struct {
	*referenceIndex
	// direct is direct_links: by address and attribute, the instances an attribute names
	// directly.
	direct map[attributeKey][]string
	// attributeEdges are attribute_edges, by address and attribute (the node "a:" +
	// address + "|" + attribute, which no edge leads to).
	attributeEdges map[attributeKey][]string
	// resourceEach are resource_each_edges (kept apart: they are the linking changes'
	// for_each expressions, found with their configurations).
	resourceEach map[string][]string
	// graph is reference_graph, built on first need.
	graph map[string][]string
	// reached memoises reach summaries by start (see reachFrom).
	reached map[string]reach
}

// reach is what the links read of the nodes reachable from a start: whether they hold
// the unknown end (U), the constant end (C) or what is outside the plan (X), and the
// planned instances among them, sorted.
type reach struct {
	u, c, x bool
	targets []string
}

func newLinker(x *referenceIndex) *linker {
	l := &linker{
		referenceIndex: x,
		direct:         make(map[attributeKey][]string, len(x.linking)),
		attributeEdges: map[attributeKey][]string{},
		resourceEach:   map[string][]string{},
		reached:        map[string]reach{},
	}
	for _, p := range x.linking {
		config, ok := x.resourceConfig(p)
		if !ok {
			continue
		}
		mi := p.module
		each := x.eachNodeOf(mi, p.resource, config)
		if each != "" {
			fe, _ := field(config, "for_each_expression")
			l.resourceEach[each] = x.expressionNodes(fe, mi, noOwner)
		}
		expressions, ok := field(config, "expressions")
		if !ok {
			continue
		}
		var own *owner
		for _, attribute := range linkingAttributes[p.typ] {
			if shownUnset(p, attribute) {
				continue
			}
			expr, ok := linkingExpression(expressions, attribute)
			if !ok || !p.hasAddress {
				continue
			}
			refs := expressionReferences(expr)
			if targets, ok := x.directTargets(refs, mi); ok {
				l.direct[attributeKey{p.address, attribute}] = targets
				continue
			}
			if own == nil {
				key := instanceKey(p.address, prefixed(mi, p.resource))
				own = &owner{each: each, key: key, eachValue: x.eachValueNode(mi, config, key)}
			}
			l.attributeEdges[attributeKey{p.address, attribute}] = x.referenceExpressionNodes(refs, mi, *own)
		}
	}
	return l
}

// attributeKey names a linking attribute of a planned instance.
type attributeKey struct{ address, attribute string }

func eachNode(mi, owner string) string { return "f:" + mi + "|" + owner }

// eachNodeOf is each_node_of: the node of the for_each expression of a resource or module
// call config (owner names it) in module instance mi, or "" when it has none.
func (x *referenceIndex) eachNodeOf(mi, owner string, config any) string {
	if truthy(config, "for_each_expression") {
		return eachNode(mi, owner)
	}
	return ""
}

// owner is owner_context (model_terraform_keys.rego): who writes an expression. each is
// the node of its for_each expression ("" for none), key the instance key the plan gave
// it (["a"] or [0], "" for none) and eachValue the node of its each.value at that key
// when the plan shows it ("" otherwise).
type owner struct{ each, key, eachValue string }

// noOwner is no_owner: an expression no instance writes (a for_each expression, an output).
var noOwner = owner{}

// instanceKey is instance_key: what follows prefix in address, counted in characters as
// Rego's substring counts them ("" when address is no longer than prefix).
func instanceKey(address, prefix string) string {
	runes := []rune(address)
	n := utf8.RuneCountInString(prefix)
	if n >= len(runes) {
		return ""
	}
	return string(runes[n:])
}

// eachValueNode is each_value_node: when config (a resource or module call in module
// instance mi) has a for_each expression that names one resource, unkeyed, and nothing
// else, the node of that resource's instance of key; "" otherwise.
func (x *referenceIndex) eachValueNode(mi string, config any, key string) string {
	if key == "" {
		return ""
	}
	fe, ok := field(config, "for_each_expression")
	if !ok {
		return ""
	}
	parsed := map[parsedReference]bool{}
	for _, e := range expressionReferences(fe) {
		parsed[parseReference(e)] = true
	}
	if len(parsed) != 1 {
		return ""
	}
	for p := range parsed {
		if p.kind != kindResource || p.key != "" {
			return ""
		}
		if node := x.instanceNode(mi, p.resource, key); node != "X" {
			return node
		}
	}
	return ""
}

// ownIndex is own_index: the owner's key when the references name each.key (a string
// key) or count.index (a number) and the owner has a key of that form; "" otherwise.
func ownIndex(parsed []parsedReference, key string) string {
	if key == "" {
		return ""
	}
	form := "string"
	if numberKey.MatchString(key) {
		form = "number"
	}
	for _, p := range parsed {
		if p.kind == kindOwnKey && p.form == form {
			return key
		}
	}
	return ""
}

// numberKey matches a count instance's key (key_form's pattern).
var numberKey = regexp.MustCompile(`^\[[0-9]+\]$`)

// shownUnset is shown_unset: the plan shows a linking attribute without a value (null, "",
// or an empty dead_letter_policy block list), not unknown: it links nothing, whatever the
// configuration writes.
func shownUnset(p *plannedChange, attribute string) bool {
	change := p.raw["change"]
	after, _ := field(change, "after")
	v, ok := field(after, attribute)
	if ok {
		switch t := v.(type) {
		case nil:
		case string:
			if t != "" {
				return false
			}
		case []any:
			if len(t) != 0 {
				return false
			}
		default:
			return false
		}
	}
	au, _ := field(change, "after_unknown")
	u, _ := field(au, attribute)
	return u != true
}

func outputNode(mi, output string) string { return "o:" + mi + "|" + output }

func scopeNode(mi string) string { return "S:" + mi }

// directTargets is direct_targets: the addresses, sorted, of the resources refs name in
// module instance mi when every reference is one of them (planned there under exactly that
// address) or a traversal of one; ok is false otherwise.
func (x *referenceIndex) directTargets(refs []any, mi string) ([]string, bool) {
	subjects := map[string]bool{}
	for _, r := range refs {
		s, ok := r.(string)
		if !ok {
			return nil, false
		}
		if first, _, _ := strings.Cut(s, "."); x.addresses[prefixed(mi, s)] && !reservedWords[first] {
			subjects[s] = true
		}
	}
	if len(subjects) == 0 {
		return nil, false
	}
	for _, r := range refs {
		s := r.(string)
		if subjects[s] {
			continue
		}
		// split(r, ".") has more than two parts and the first two name a subject.
		if i := strings.IndexByte(s, '.'); i >= 0 {
			if j := strings.IndexByte(s[i+1:], '.'); j >= 0 && subjects[s[:i+1+j]] {
				continue
			}
		}
		return nil, false
	}
	targets := make([]string, 0, len(subjects))
	for s := range subjects {
		targets = append(targets, prefixed(mi, s))
	}
	slices.Sort(targets)
	return targets, true
}

// attributeLink is attribute_link: whether a linking attribute's references name exactly
// one instance, and the instances they name; ok is false when the references do not
// decide the link (the rules read the attribute's value).
func (l *linker) attributeLink(p *plannedChange, attribute string) (exact bool, targets []string, ok bool) {
	if targets, ok := l.direct[attributeKey{p.address, attribute}]; ok {
		exact := len(targets) == 1
		if exact || attributeUnknown(p, attribute) {
			return exact, targets, true
		}
		return false, nil, false
	}
	r, ok := l.linkReach(p, attribute)
	if !ok {
		return false, nil, false
	}
	unknown := attributeUnknown(p, attribute)
	if r.u || r.c && !unknown {
		return false, nil, false
	}
	exact = !r.x && !r.c && len(r.targets) == 1
	if !exact && !unknown {
		return false, nil, false
	}
	return exact, r.targets, true
}

// linkReach is what reached_from(link_start(rc, attribute)) holds: link_start is the
// attribute's node, or its module instance's scope when the configuration does not show
// the expression and the value is unknown.
func (l *linker) linkReach(p *plannedChange, attribute string) (reach, bool) {
	if nodes, ok := l.attributeEdges[attributeKey{p.address, attribute}]; ok {
		if l.allEnds(nodes) {
			// reached_from without the graph.
			return l.summarise(nodes), true
		}
		// The attribute node is reached too, but it is none of what a reach reads, and no
		// edge leads back to it: attributes with the same edges reach the same.
		return l.reachFrom("\x00"+strings.Join(nodes, "\x00"), nodes), true
	}
	if attributeUnknown(p, attribute) && p.moduleOK {
		start := scopeNode(p.module)
		return l.reachFrom(start, []string{start}), true
	}
	return reach{}, false
}

// attributeUnknown is attribute_unknown: the plan shows the attribute (for a dead-letter
// policy, its topic) known only after apply.
func attributeUnknown(p *plannedChange, attribute string) bool {
	au, _ := field(p.raw["change"], "after_unknown")
	if v, ok := field(au, attribute); ok && v == true {
		return true
	}
	if attribute == "dead_letter_policy" {
		block, _ := field(au, "dead_letter_policy")
		for _, e := range elements(block) {
			if v, ok := field(e, "dead_letter_topic"); ok && v == true {
				return true
			}
		}
	}
	return false
}

// reachFrom is the reach of graph.reachable(reference_graph, initial), memoised by key.
func (l *linker) reachFrom(key string, initial []string) reach {
	if r, ok := l.reached[key]; ok {
		return r
	}
	r := l.summarise(l.reachable(initial))
	l.reached[key] = r
	return r
}

// allEnds reports whether every node is an end (graph_end).
func (l *linker) allEnds(nodes []string) bool {
	for _, n := range nodes {
		if !l.isInstanceNode(n) && n != "C" && n != "U" && n != "X" {
			return false
		}
	}
	return true
}

func (l *linker) isInstanceNode(n string) bool {
	return strings.HasPrefix(n, "r:") && l.addresses[n[2:]]
}

func (l *linker) summarise(nodes []string) reach {
	var r reach
	for _, n := range nodes {
		switch {
		case n == "U":
			r.u = true
		case n == "C":
			r.c = true
		case n == "X":
			r.x = true
		case strings.HasPrefix(n, "r:"):
			r.targets = append(r.targets, n[2:])
		}
	}
	r.targets = sortedDistinct(r.targets)
	return r
}

// reachable is graph.reachable(reference_graph, initial): every node reached from the
// initial ones that the graph has (a node it does not have is never reached).
func (l *linker) reachable(initial []string) []string {
	graph := l.referenceGraph()
	seen := map[string]bool{}
	var out []string
	queue := slices.Clone(initial)
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if seen[n] {
			continue
		}
		edges, ok := graph[n]
		if !ok {
			continue
		}
		seen[n] = true
		out = append(out, n)
		for _, e := range edges {
			if !seen[e] {
				queue = append(queue, e)
			}
		}
	}
	return out
}

// referenceGraph is reference_graph: expression edges (attributes, for_each expressions,
// module variables and outputs), the planned instances, the scopes, the ends C, U and X,
// and the undescribed nodes (leading to U).
func (l *linker) referenceGraph() map[string][]string {
	if l.graph != nil {
		return l.graph
	}
	x := l.referenceIndex
	// The attribute nodes are left out: no edge leads to them, and reachFrom starts from
	// their edges. Only what they name counts (as undescribed nodes).
	expression := map[string][]string{}
	for n, e := range l.resourceEach {
		expression[n] = e
	}
	// module_each_edges win over resource_each_edges (object.union).
	for n, e := range x.moduleEachEdges() {
		expression[n] = e
	}
	variables := x.variableEdges()
	for n, e := range variables {
		expression[n] = e
	}
	for n, e := range x.outputEdges() {
		expression[n] = e
	}
	graph := make(map[string][]string, len(expression)+len(x.addresses)+len(x.modules)+3)
	for n, e := range expression {
		graph[n] = e
	}
	for a := range x.addresses {
		graph["r:"+a] = nil
	}
	for n, e := range x.scopeEdges(variables) {
		graph[n] = e
	}
	graph["C"], graph["U"], graph["X"] = nil, nil, nil
	undescribed := func(nodes []string) {
		for _, n := range nodes {
			if _, ok := graph[n]; !ok {
				graph[n] = []string{"U"}
			}
		}
	}
	for _, nodes := range expression {
		undescribed(nodes)
	}
	for _, nodes := range l.attributeEdges {
		undescribed(nodes)
	}
	l.graph = graph
	return graph
}

// moduleEachEdges are module_each_edges: the for_each expressions of the calls of planned
// module instances, in the caller's instance.
func (x *referenceIndex) moduleEachEdges() map[string][]string {
	out := map[string][]string{}
	for _, mi := range x.modules {
		if mi == "" {
			continue
		}
		call, ok := x.moduleCall(mi)
		name, named := x.callName(mi)
		if !ok || !named || !truthy(call, "for_each_expression") {
			continue
		}
		parent := x.parent(mi)
		fe, _ := field(call, "for_each_expression")
		out[eachNode(parent, "module."+name)] = x.expressionNodes(fe, parent, noOwner)
	}
	return out
}

// variableEdges are variable_edges: each variable of a planned module instance (those its
// call passes and those its module declares) leads to what the call passes, in the
// caller's instance, or to C.
func (x *referenceIndex) variableEdges() map[string][]string {
	out := map[string][]string{}
	for _, mi := range x.modules {
		if mi == "" {
			continue
		}
		call, ok := x.moduleCall(mi)
		if !ok {
			continue
		}
		expressions, ok := objectGet(call, "expressions", map[string]any{})
		if !ok {
			continue
		}
		exprs, ok := expressions.(map[string]any)
		if !ok {
			continue
		}
		module, _ := objectGet(call, "module", map[string]any{})
		variables, ok := objectGet(module, "variables", map[string]any{})
		if !ok {
			continue
		}
		vars, ok := variables.(map[string]any)
		if !ok {
			continue
		}
		called, ok := x.callName(mi)
		if !ok {
			continue
		}
		parent := x.parent(mi)
		segments := x.segments[mi]
		key := segments[len(segments)-1][2]
		own := owner{each: x.eachNodeOf(parent, "module."+called, call), key: key, eachValue: x.eachValueNode(parent, call, key)}
		names := make(map[string]bool, len(exprs)+len(vars))
		for name := range exprs {
			names[name] = true
		}
		for name := range vars {
			names[name] = true
		}
		for name := range names {
			nodes := []string{"C"}
			if truthy(exprs, name) {
				nodes = x.expressionNodes(exprs[name], parent, own)
			}
			out["v:"+mi+"|"+name] = nodes
		}
	}
	return out
}

// outputEdges are output_edges: each output of a planned module instance leads to what
// its expression names, in that instance.
func (x *referenceIndex) outputEdges() map[string][]string {
	out := map[string][]string{}
	for _, mi := range x.modules {
		if mi == "" {
			continue
		}
		config, ok := x.moduleConfigs[x.configPaths[mi]]
		if !ok {
			continue
		}
		outputs, ok := objectGet(config, "outputs", map[string]any{})
		if !ok {
			continue
		}
		m, _ := outputs.(map[string]any)
		for name, output := range m {
			expr, ok := objectGet(output, "expression", map[string]any{})
			if !ok {
				continue
			}
			out[outputNode(mi, name)] = x.expressionNodes(expr, mi, noOwner)
		}
	}
	return out
}

// scopeEdges are scope_edges: a module instance's scope leads to its resources, X, its
// variables and its planned children's outputs.
func (x *referenceIndex) scopeEdges(variables map[string][]string) map[string][]string {
	out := make(map[string][]string, len(x.modules))
	for _, mi := range x.modules {
		out[scopeNode(mi)] = []string{"X"}
	}
	add := func(mi, node string) {
		if s, ok := out[scopeNode(mi)]; ok {
			out[scopeNode(mi)] = append(s, node)
		}
	}
	for _, p := range x.planned {
		if p.moduleOK && p.hasAddress {
			add(p.module, "r:"+p.address)
		}
	}
	for node := range variables {
		add(node[2:strings.Index(node, "|")], node)
	}
	for _, child := range x.modules {
		if child == "" {
			continue
		}
		parent := x.parent(child)
		for _, name := range x.outputNames(child) {
			add(parent, outputNode(child, name))
		}
	}
	return out
}

// expressionNodes is expression_nodes: the nodes an expression's references lead to from
// module instance mi, written for own, or C.
func (x *referenceIndex) expressionNodes(expr any, mi string, own owner) []string {
	return x.referenceExpressionNodes(expressionReferences(expr), mi, own)
}

// referenceExpressionNodes is reference_expression_nodes: reference_nodes, or C when they
// are none.
func (x *referenceIndex) referenceExpressionNodes(refs []any, mi string, own owner) []string {
	nodes := x.referenceNodes(refs, mi, own)
	if len(nodes) == 0 {
		return []string{"C"}
	}
	return nodes
}

// referenceNodes is reference_nodes: the distinct nodes refs lead to from module instance
// mi, written for own (the instance whose each.key, count.index and each.value they may
// name).
func (x *referenceIndex) referenceNodes(refs []any, mi string, own owner) []string {
	parsed := make([]parsedReference, len(refs))
	for i, r := range refs {
		parsed[i] = parseReference(r)
	}
	index := ownIndex(parsed, own.key)
	set := map[string]bool{}
	var out []string
	add := func(n string) {
		if !set[n] {
			set[n] = true
			out = append(out, n)
		}
	}
	// resource_nodes
	done := map[string]bool{}
	for _, p := range parsed {
		if p.kind != kindResource || done[p.resource] {
			continue
		}
		done[p.resource] = true
		var keyed []string
		unkeyed := 0
		for _, q := range parsed {
			if q.kind != kindResource || q.resource != p.resource {
				continue
			}
			if q.key != "" {
				keyed = append(keyed, q.key)
			} else {
				unkeyed++
			}
		}
		for _, key := range keyed {
			add(x.instanceNode(mi, p.resource, key))
		}
		// whole_targets: a reference indexed by the owner's own key names that instance
		// when the plan holds it and the resource is named unkeyed once beyond the keyed
		// references; any other unkeyed one, every instance.
		if whole := unkeyed - len(keyed); whole > 0 {
			if node := x.instanceNode(mi, p.resource, index); whole == 1 && index != "" && node != "X" {
				add(node)
			} else {
				for _, n := range x.allInstances(mi, p.resource) {
					add(n)
				}
			}
		}
	}
	// module_nodes
	clear(done)
	for _, p := range parsed {
		if p.kind != kindModule || done[p.call] {
			continue
		}
		done[p.call] = true
		var refs []parsedReference
		for _, q := range parsed {
			if q.kind == kindModule && q.call == p.call {
				refs = append(refs, q)
			}
		}
		x.ownModuleTargets(mi, p.call, refs, index, add)
	}
	// variable_nodes and other_nodes
	for _, p := range parsed {
		switch p.kind {
		case kindVariable:
			if mi == "" {
				add("C")
			} else {
				add("v:" + mi + "|" + p.name)
			}
		case kindUnknown:
			add(scopeNode(mi))
		case kindConstant:
			add("C")
		case kindEach:
			// each.value is the owner's instance of the for_each resource it iterates
			// when the plan shows it, else what its for_each expression names.
			switch {
			case own.eachValue != "":
				add(own.eachValue)
			case own.each != "":
				add(own.each)
			default:
				add("U")
			}
		}
	}
	return out
}

// instanceNode is instance_node: the node of the planned instance resource+key in mi, or X.
func (x *referenceIndex) instanceNode(mi, resource, key string) string {
	address := prefixed(mi, resource+key)
	if x.addresses[address] {
		return "r:" + address
	}
	return "X"
}

// allInstances is all_instances: every planned instance of resource in mi, or X when it
// has none.
func (x *referenceIndex) allInstances(mi, resource string) []string {
	x.instanceGroups()
	addresses, ok := x.groups[mi+"|"+resource]
	if !ok {
		return []string{"X"}
	}
	out := make([]string, len(addresses))
	for i, a := range addresses {
		out[i] = "r:" + a
	}
	return out
}

// ownModuleTargets is own_module_targets: a reference to the call's instance of the
// owner's own key (module.topics[each.key].id lists "module.topics" and "each.key") names
// that instance's outputs, when the plan holds it and the expression names the call once,
// unkeyed and without an output; any other, moduleTargets.
func (x *referenceIndex) ownModuleTargets(mi, call string, refs []parsedReference, index string, add func(string)) {
	if index != "" && len(refs) == 1 && refs[0].key == "" && refs[0].output == "" {
		child := prefixed(mi, "module."+call+index)
		if slices.Contains(x.children[mi+"|"+call], child) {
			for _, name := range x.outputNames(child) {
				add(outputNode(child, name))
			}
			return
		}
	}
	x.moduleTargets(mi, call, refs, add)
}

// moduleTargets is module_targets: the outputs that references to module call `call`
// from mi lead to (refs are those references, in order).
func (x *referenceIndex) moduleTargets(mi, call string, refs []parsedReference, add func(string)) {
	children := x.children[mi+"|"+call]
	if len(children) == 0 && slices.ContainsFunc(refs, func(p parsedReference) bool { return p.key == "" }) {
		// The call's instances plan no resource, and it has count or for_each: which
		// instances there are, and so what they output, the plan does not show.
		add("U")
		return
	}
	instance := func(key string) string { return prefixed(mi, "module."+call+key) }
	// Per key: references without an output, less those with one.
	instanceRefs := map[string]int{}
	plain := 0
	for _, p := range refs {
		n := 1
		if p.output != "" {
			n = -1
		}
		if p.key == "" {
			plain += n
		} else {
			instanceRefs[p.key] += n
		}
	}
	for _, p := range refs {
		if p.output == "" {
			continue
		}
		if p.key != "" {
			add(outputNode(instance(p.key), p.output))
			continue
		}
		for _, child := range children {
			add(outputNode(child, p.output))
		}
	}
	sum := 0
	for _, p := range refs {
		// instance_refs holds the keys that have a reference without an output and more
		// of those than of references with one.
		n, ok := instanceRefs[p.key]
		if p.key == "" || p.output != "" || !ok || n <= 0 {
			continue
		}
		delete(instanceRefs, p.key)
		sum += n
		for _, name := range x.outputNames(instance(p.key)) {
			add(outputNode(instance(p.key), name))
		}
	}
	if plain-sum > 0 {
		for _, child := range children {
			for _, name := range x.outputNames(child) {
				add(outputNode(child, name))
			}
		}
	}
}

// sortedDistinct sorts s and drops repeats (Rego's sort of a set).
func sortedDistinct(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
