package tfmodel

import (
	"maps"
	"regexp"
	"slices"
	"strings"
)

// The configuration and the planned instances as model_terraform_references.rego indexes
// them: module configurations by config path (down to maxModuleDepth), module calls,
// resource configurations, planned module instances, instance groups and child modules,
// and the references an expression lists. Every name here mirrors a Rego rule of the same
// meaning; where Rego leaves a value undefined (a missing key, a value of another type), the
// Go code leaves the entry out in the same way.

// linkingAttributes are, by resource type, the attributes by which the rules link
// resources (linking_attributes), each list sorted as Rego iterates a set.
var linkingAttributes = map[string][]string{
	"google_pubsub_subscription":             {"dead_letter_policy", "topic"},
	"google_pubsub_topic_iam_member":         {"topic"},
	"google_pubsub_topic_iam_binding":        {"topic"},
	"google_pubsub_topic_iam_policy":         {"topic"},
	"google_pubsub_subscription_iam_member":  {"subscription"},
	"google_pubsub_subscription_iam_binding": {"subscription"},
	"google_pubsub_subscription_iam_policy":  {"subscription"},
}

// linkingProperties are the linking attributes' names in the model (linking_properties),
// read only.
var linkingProperties = func() map[string]string {
	out := map[string]string{}
	for _, attributes := range linkingAttributes {
		for _, a := range attributes {
			out[a] = camelCase(a)
		}
	}
	return out
}()

// maxModuleDepth is how many levels of module configurations are read (max_module_depth:
// the root and seven levels of calls; the calls of the deepest level are known, not their
// modules).
const maxModuleDepth = 8

// reservedWords start references that do not name a resource (reserved_words).
var reservedWords = map[string]bool{
	"var": true, "local": true, "module": true, "data": true, "each": true, "count": true,
	"path": true, "terraform": true, "self": true, "ephemeral": true, "resource": true,
}

const (
	instanceKeyPattern = `\[(?:"(?:[^"\\]|\\.)*"|[0-9]+)\]`
	namePattern        = `[A-Za-z_][A-Za-z0-9_-]*`
)

// The patterns of model_terraform_references.rego, character for character (OPA's regex
// builtins are Go's regexp).
var (
	moduleSegmentRE     = regexp.MustCompile(`module\.([A-Za-z0-9_-]+)(` + instanceKeyPattern + `)?`)
	resourceReferenceRE = regexp.MustCompile(`^(` + namePattern + `)\.(` + namePattern + `)(` + instanceKeyPattern + `)?$`)
	moduleReferenceRE   = regexp.MustCompile(`^module\.(` + namePattern + `)(` + instanceKeyPattern + `)?(?:\.(` + namePattern + `))?$`)
	variableReferenceRE = regexp.MustCompile(`^var\.(` + namePattern + `)$`)
)

// moduleSegments splits a module instance address into [segment, name, key] triples
// (module_segments).
func moduleSegments(mi string) [][]string {
	return moduleSegmentRE.FindAllStringSubmatch(mi, -1)
}

// joinSegments joins the segments' texts with "." (the prefixes of planned_modules and
// parent_module).
func joinSegments(segments [][]string) string {
	texts := make([]string, len(segments))
	for i, s := range segments {
		texts[i] = s[0]
	}
	return strings.Join(texts, ".")
}

// configPath is the config path of a module instance: its module names without keys, each
// as "module.NAME." (config_path).
func configPath(mi string) string {
	var b strings.Builder
	for _, s := range moduleSegments(mi) {
		b.WriteString("module.")
		b.WriteString(s[1])
		b.WriteString(".")
	}
	return b.String()
}

// prefixed joins a module instance and an address within it.
func prefixed(mi, address string) string {
	if mi == "" {
		return address
	}
	return mi + "." + address
}

// objectGet is Rego's object.get(v, key, def): ok is false (undefined) when v is not an
// object.
func objectGet(v any, key string, def any) (any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	if x, ok := m[key]; ok {
		return x, true
	}
	return def, true
}

// field is Rego's v.key: ok is false when v is not an object or has no key.
func field(v any, key string) (any, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	x, ok := m[key]
	return x, ok
}

// truthy is Rego's bare expression v.key as a condition: defined and not false.
func truthy(v any, key string) bool {
	x, ok := field(v, key)
	return ok && x != false
}

// elements are what `some x in v` binds x to: an array's elements, an object's values;
// nothing for a scalar.
func elements(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case map[string]any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			out = append(out, e)
		}
		return out
	}
	return nil
}

// expressionReferences lists every reference in an expression, nested blocks included
// (expression_references): each element of every array found under a key "references",
// at any depth.
func expressionReferences(expr any) []any {
	var refs []any
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if k == "references" {
					if arr, ok := e.([]any); ok {
						refs = append(refs, arr...)
					}
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(expr)
	return refs
}

// referenceKind is what a reference names (parsed_reference's kind).
type referenceKind int

const (
	kindNone referenceKind = iota
	kindResource
	kindModule
	kindVariable
	kindUnknown
	kindConstant
	kindEach
	// kindOwnKey is each.key (form "string") or count.index (form "number"): the key of
	// the instance that writes the expression.
	kindOwnKey
)

// parsedReference is parsed_reference of one entry of an expression's references.
type parsedReference struct {
	kind referenceKind
	// resource ("type.name") and key (`["k"]`, `[0]` or "") for kindResource.
	resource string
	// call, key and output ("" when absent) for kindModule.
	call, output string
	key          string
	// name for kindVariable.
	name string
	// form for kindOwnKey: "string" (each.key) or "number" (count.index).
	form string
}

// parseReference is parsed_reference: an entry that is not a string is of no kind.
func parseReference(e any) parsedReference {
	s, ok := e.(string)
	if !ok {
		return parsedReference{kind: kindNone}
	}
	if m := resourceReferenceRE.FindStringSubmatch(s); m != nil && !reservedWords[m[1]] {
		return parsedReference{kind: kindResource, resource: m[1] + "." + m[2], key: m[3]}
	}
	if m := moduleReferenceRE.FindStringSubmatch(s); m != nil {
		return parsedReference{kind: kindModule, call: m[1], key: m[2], output: m[3]}
	}
	if m := variableReferenceRE.FindStringSubmatch(s); m != nil {
		return parsedReference{kind: kindVariable, name: m[1]}
	}
	switch {
	case strings.HasPrefix(s, "local."), strings.HasPrefix(s, "ephemeral."), strings.HasPrefix(s, "resource."):
		return parsedReference{kind: kindUnknown}
	case strings.HasPrefix(s, "data."):
		return parsedReference{kind: kindConstant}
	case s == "each.value":
		return parsedReference{kind: kindEach}
	case s == "each.key":
		return parsedReference{kind: kindOwnKey, form: "string"}
	case s == "count.index":
		return parsedReference{kind: kindOwnKey, form: "number"}
	}
	return parsedReference{kind: kindNone}
}

// plannedChange is one planned change as the reference model reads it.
type plannedChange struct {
	*change
	// address is the change's address; hasAddress says whether it is a string.
	address    string
	hasAddress bool
	// module is object.get(rc, "module_address", ""); moduleOK says whether it is a
	// string, hasModule whether the key is there.
	module              string
	moduleOK, hasModule bool
	// resource is type.name; hasResource says whether type and name are strings.
	resource    string
	hasResource bool
	hasType     bool
}

func newPlannedChange(c *change) *plannedChange {
	p := &plannedChange{change: c}
	if c.moduleAddress != "" {
		// A string, there (stringOr gives "" otherwise).
		p.module, p.moduleOK, p.hasModule = c.moduleAddress, true, true
	} else {
		mod, has := c.raw["module_address"]
		p.hasModule = has
		p.moduleOK = !has
		if has {
			p.module, p.moduleOK = mod.(string)
		}
	}
	if c.ok {
		// address, type and name are strings.
		p.address, p.hasAddress, p.hasType, p.hasResource = c.address, true, true, true
		p.resource = c.typ + "." + c.name
		return p
	}
	p.address, p.hasAddress = c.raw["address"].(string)
	_, p.hasType = c.raw["type"].(string)
	_, okN := c.raw["name"].(string)
	p.hasResource = p.hasType && okN
	if p.hasResource {
		p.resource = c.typ + "." + c.name
	}
	return p
}

// referenceIndex is what the reference model reads of a plan, indexed.
type referenceIndex struct {
	planned []*plannedChange
	// linking are linking_changes, in document order.
	linking []*plannedChange

	// moduleConfigs maps a config path to the module's configuration (module_configs);
	// moduleCalls to the call that instantiates it (module_calls); configResources maps
	// config path + resource address to the resource's configuration (config_resources).
	moduleConfigs   map[string]any
	moduleCalls     map[string]any
	configResources map[string]any

	// modules are planned_modules, sorted; configPaths maps each to its config path
	// (config_paths); segments to its module_segments.
	modules     []string
	configPaths map[string]string
	segments    map[string][][]string

	// groups maps module instance + "|" + resource to its planned instances' addresses
	// (instances); a group of changes whose addresses are not strings is there, empty.
	// groupOf maps an address to its group (instance_groups). Both are built on first
	// need (instanceGroups): links by direct references never read them.
	groups  map[string][]string
	groupOf map[string]string
	// addresses are the planned addresses (planned_addresses, the instance nodes).
	addresses map[string]bool
	// children maps module instance + "|" + call name to the instances of that call
	// (child_modules).
	children map[string][]string
}

func newReferenceIndex(d *document) *referenceIndex {
	x := &referenceIndex{
		planned:   make([]*plannedChange, 0, len(d.planned)),
		addresses: make(map[string]bool, len(d.planned)),
		children:  map[string][]string{},
	}
	for _, c := range d.planned {
		p := newPlannedChange(c)
		x.planned = append(x.planned, p)
		if p.hasAddress {
			x.addresses[p.address] = true
		}
		if p.hasType && linkingAttributes[p.typ] != nil {
			x.linking = append(x.linking, p)
		}
	}
	x.indexConfigs(d.raw)
	x.indexModules()
	return x
}

// instanceGroups builds groups and groupOf, once.
func (x *referenceIndex) instanceGroups() {
	if x.groups != nil {
		return
	}
	x.groups = map[string][]string{}
	x.groupOf = make(map[string]string, len(x.planned))
	for _, p := range x.planned {
		if !p.moduleOK || !p.hasResource {
			continue
		}
		g := p.module + "|" + p.resource
		if p.hasAddress {
			x.groups[g] = append(x.groups[g], p.address)
			x.groupOf[p.address] = g
		} else if _, ok := x.groups[g]; !ok {
			x.groups[g] = nil
		}
	}
}

// indexModules builds planned_modules, config_paths and child_modules. It follows
// indexConfigs: the calls without count or for_each have their one instance whether or not
// it plans a resource (single_children).
func (x *referenceIndex) indexModules() {
	set := map[string]bool{"": true}
	for _, p := range x.planned {
		if !p.hasModule || !p.moduleOK {
			continue
		}
		segments := moduleSegments(p.module)
		for i := 1; i <= len(segments); i++ {
			set[joinSegments(segments[:i])] = true
		}
	}
	level := slices.Collect(maps.Keys(set))
	for range maxModuleDepth - 1 {
		var next []string
		for _, mi := range level {
			calls, _ := objectGet(x.moduleConfigs[configPath(mi)], "module_calls", map[string]any{})
			m, _ := calls.(map[string]any)
			for name, call := range m {
				if truthy(call, "count_expression") || truthy(call, "for_each_expression") {
					continue
				}
				child := prefixed(mi, "module."+name)
				set[child] = true
				next = append(next, child)
			}
		}
		level = next
	}
	x.modules = make([]string, 0, len(set))
	for mi := range set {
		x.modules = append(x.modules, mi)
	}
	slices.Sort(x.modules)
	x.configPaths = make(map[string]string, len(set))
	x.segments = make(map[string][][]string, len(set))
	for _, mi := range x.modules {
		segments := moduleSegments(mi)
		x.segments[mi] = segments
		x.configPaths[mi] = configPath(mi)
		if name, ok := x.callName(mi); ok && mi != "" {
			g := x.parent(mi) + "|" + name
			x.children[g] = append(x.children[g], mi)
		}
	}
}

// parent is parent_module of a planned module instance other than the root.
func (x *referenceIndex) parent(mi string) string {
	segments := x.segments[mi]
	if len(segments) == 0 {
		// Never for a planned instance (each is made of segments); array.slice gives [].
		return ""
	}
	return joinSegments(segments[:len(segments)-1])
}

// callName is the name of the call that made planned module instance mi; ok is false
// (undefined) for an instance without segments, which no planned one is.
func (x *referenceIndex) callName(mi string) (string, bool) {
	segments := x.segments[mi]
	if len(segments) == 0 {
		return "", false
	}
	return segments[len(segments)-1][1], true
}

// indexConfigs builds module_configs (level by level, as configs_0..configs_7),
// module_calls and config_resources.
func (x *referenceIndex) indexConfigs(raw map[string]any) {
	x.moduleConfigs = map[string]any{}
	x.moduleCalls = map[string]any{}
	x.configResources = map[string]any{}
	configuration, ok := objectGet(raw, "configuration", map[string]any{})
	if !ok {
		return
	}
	root, ok := objectGet(configuration, "root_module", map[string]any{})
	if !ok {
		return
	}
	level := map[string]any{"": root}
	for depth := 0; depth < maxModuleDepth; depth++ {
		next := map[string]any{}
		for path, config := range level {
			x.moduleConfigs[path] = config
			calls, ok := objectGet(config, "module_calls", map[string]any{})
			if !ok {
				continue
			}
			m, _ := calls.(map[string]any)
			for name, call := range m {
				key := path + "module." + name + "."
				x.moduleCalls[key] = call
				if module, ok := objectGet(call, "module", map[string]any{}); ok && depth+1 < maxModuleDepth {
					next[key] = module
				}
			}
			resources, ok := objectGet(config, "resources", []any{})
			if !ok {
				continue
			}
			for _, r := range elements(resources) {
				if address, ok := stringField(r, "address"); ok {
					x.configResources[path+address] = r
				}
			}
		}
		level = next
	}
}

// stringField is v.key when it is a string.
func stringField(v any, key string) (string, bool) {
	x, _ := field(v, key)
	s, ok := x.(string)
	return s, ok
}

// resourceConfig is config_resources[config_paths[mi] + resource] for a planned change.
func (x *referenceIndex) resourceConfig(p *plannedChange) (any, bool) {
	if !p.moduleOK || !p.hasResource {
		return nil, false
	}
	path, ok := x.configPaths[p.module]
	if !ok {
		return nil, false
	}
	config, ok := x.configResources[path+p.resource]
	return config, ok
}

// moduleCall is module_calls[config_paths[mi]] for a planned module instance.
func (x *referenceIndex) moduleCall(mi string) (any, bool) {
	call, ok := x.moduleCalls[x.configPaths[mi]]
	return call, ok
}

// outputNames are the names of the outputs module instance mi's configuration declares
// (all_outputs, without the nodes); none when the configuration is not read.
func (x *referenceIndex) outputNames(mi string) []string {
	path, ok := x.configPaths[mi]
	if !ok {
		path = configPath(mi)
	}
	config, ok := x.moduleConfigs[path]
	if !ok {
		return nil
	}
	outputs, ok := objectGet(config, "outputs", map[string]any{})
	if !ok {
		return nil
	}
	m, _ := outputs.(map[string]any)
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	return names
}

// linkingExpression is linking_expression: the expression a linking attribute's value
// comes from (for dead_letter_policy its block's dead_letter_topic, the block a list of one
// or an object).
func linkingExpression(expressions any, attribute string) (any, bool) {
	if attribute != "dead_letter_policy" {
		return field(expressions, attribute)
	}
	block, ok := field(expressions, "dead_letter_policy")
	if !ok {
		return nil, false
	}
	if list, ok := block.([]any); ok {
		if len(list) == 0 {
			return nil, false
		}
		return field(list[0], "dead_letter_topic")
	}
	return field(block, "dead_letter_topic")
}
