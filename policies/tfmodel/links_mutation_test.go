package tfmodel

import (
	"fmt"
	"maps"
	"math/rand"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The real-CLI plans show the shapes users write; the reference model must also agree with
// the Rego one where they do not go: references of every kind (keyed instances, module
// outputs and whole instances, variables, locals, data sources, each.value, entries that
// are not strings) in every place an expression is read (linking attributes, module call
// arguments, outputs, for_each), and every key missing or of another type. Each case is a
// real plan with a few of these edits, drawn by a seeded generator.

// planVocabulary is what a plan's configuration and changes name: the words references
// are made of.
type planVocabulary struct {
	resources, calls, outputs, variables, keys, modules []string
}

var keyInAddress = regexp.MustCompile(instanceKeyPattern)

func vocabularyOf(doc map[string]any) planVocabulary {
	var v planVocabulary
	seen := map[string]bool{}
	add := func(list *[]string, s string) {
		if !seen[s] {
			seen[s] = true
			*list = append(*list, s)
		}
	}
	for _, m := range configModules(doc) {
		for _, r := range elements(m["resources"]) {
			if r, ok := r.(map[string]any); ok {
				if a, ok := r["address"].(string); ok {
					add(&v.resources, a)
				}
			}
		}
		calls, _ := m["module_calls"].(map[string]any)
		for name := range calls {
			add(&v.calls, "call:"+name)
		}
		outputs, _ := m["outputs"].(map[string]any)
		for name := range outputs {
			add(&v.outputs, "output:"+name)
		}
		variables, _ := m["variables"].(map[string]any)
		for name := range variables {
			add(&v.variables, "var:"+name)
		}
	}
	for _, rc := range elements(doc["resource_changes"]) {
		rc, _ := rc.(map[string]any)
		a, _ := rc["address"].(string)
		for _, k := range keyInAddress.FindAllString(a, -1) {
			add(&v.keys, "key:"+k)
		}
		if mi, ok := rc["module_address"].(string); ok {
			add(&v.modules, "module:"+mi)
		}
	}
	strip := func(list []string) []string {
		for i, s := range list {
			if _, rest, ok := strings.Cut(s, ":"); ok {
				list[i] = rest
			}
		}
		return list
	}
	v.calls, v.outputs, v.variables, v.keys, v.modules = strip(v.calls), strip(v.outputs), strip(v.variables), strip(v.keys), strip(v.modules)
	for _, list := range [][]string{v.resources, v.calls, v.outputs, v.variables, v.keys, v.modules} {
		sort.Strings(list)
	}
	v.keys = append(v.keys, `["a"]`, `[0]`, `[7]`)
	return v
}

// configModules are the module configurations of doc (root first), as maps.
func configModules(doc map[string]any) []map[string]any {
	var out []map[string]any
	var visit func(m map[string]any, depth int)
	visit = func(m map[string]any, depth int) {
		if m == nil || depth > 10 {
			return
		}
		out = append(out, m)
		calls, _ := m["module_calls"].(map[string]any)
		for _, name := range sortedKeys(calls) {
			call, _ := calls[name].(map[string]any)
			module, _ := call["module"].(map[string]any)
			visit(module, depth+1)
		}
	}
	configuration, _ := doc["configuration"].(map[string]any)
	root, _ := configuration["root_module"].(map[string]any)
	visit(root, 0)
	return out
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

func pick[T any](r *rand.Rand, list []T) (T, bool) {
	var zero T
	if len(list) == 0 {
		return zero, false
	}
	return list[r.Intn(len(list))], true
}

// randomReference is one entry of an expression's references, of any kind the model
// reads (and some it does not).
func randomReference(r *rand.Rand, v planVocabulary) any {
	word := func(list []string, fallback string) string {
		if s, ok := pick(r, list); ok {
			return s
		}
		return fallback
	}
	resource := word(v.resources, "google_pubsub_topic.t")
	key := word(v.keys, `["a"]`)
	call := "module." + word(v.calls, "m")
	output := word(v.outputs, "id")
	switch r.Intn(20) {
	case 0, 1:
		return resource
	case 2:
		return resource + ".id"
	case 3:
		return resource + key
	case 4:
		return resource + key + ".name"
	case 5:
		return call
	case 6:
		return call + "." + output
	case 7:
		return call + key
	case 8:
		return call + key + "." + output
	case 9:
		return "var." + word(v.variables, "v")
	case 10:
		return "local." + word(v.variables, "l")
	case 11:
		return "data.google_project.p"
	case 12:
		return "data.google_project.p.number"
	case 13:
		return "each.value"
	case 14:
		return pickString(r, "each.key", "count.index", "path.module", "self.id", "terraform.workspace")
	case 15:
		return pickString(r, "ephemeral.x.y", "resource.x", "var.a.b", "module.a.b.c")
	case 16:
		return 42
	case 17:
		return pickString(r, `google_pubsub_topic.t["x.y"].id`, `google_pubsub_topic.t["a|b"]`, "google_pubsub_topic", "1bad.name")
	case 18:
		return strings.Replace(resource, ".", "|", 1)
	}
	return call + "." + output + ".id"
}

func pickString(r *rand.Rand, s ...string) string { return s[r.Intn(len(s))] }

func pickAny(r *rand.Rand, s ...any) any { return s[r.Intn(len(s))] }

func randomExpression(r *rand.Rand, v planVocabulary) any {
	switch r.Intn(10) {
	case 0:
		return map[string]any{"constant_value": "projects/p/topics/t"}
	case 1:
		// references nested in a block, and in a references list.
		return []any{map[string]any{"inner": map[string]any{"references": randomReferences(r, v)}}}
	case 2:
		return pickAny(r, "not an expression", false, nil)
	}
	return map[string]any{"references": randomReferences(r, v)}
}

func randomReferences(r *rand.Rand, v planVocabulary) []any {
	refs := make([]any, 1+r.Intn(4))
	for i := range refs {
		refs[i] = randomReference(r, v)
	}
	// Terraform lists a traversal's shorter steps beside it: often repeat a subject.
	if s, ok := refs[0].(string); ok && r.Intn(2) == 0 {
		if i := strings.LastIndexAny(s, ".["); i > 0 {
			refs = append(refs, s[:i])
		}
	}
	return refs
}

// mutation edits doc in place and says what it did.
type mutation func(r *rand.Rand, doc map[string]any, v planVocabulary) string

var linkingAttributeNames = []string{"topic", "dead_letter_policy", "subscription"}

// mutations are the edits the generator draws from.
var mutations = []mutation{
	// A linking attribute's expression.
	func(r *rand.Rand, doc map[string]any, v planVocabulary) string {
		res := randomConfigResource(r, doc)
		if res == nil {
			return ""
		}
		exprs, ok := res["expressions"].(map[string]any)
		if !ok {
			exprs = map[string]any{}
			res["expressions"] = exprs
		}
		attr := linkingAttributeNames[r.Intn(len(linkingAttributeNames))]
		e := randomExpression(r, v)
		if attr == "dead_letter_policy" {
			switch r.Intn(4) {
			case 0:
				exprs[attr] = map[string]any{"dead_letter_topic": e}
			case 1:
				exprs[attr] = []any{}
			default:
				exprs[attr] = []any{map[string]any{"dead_letter_topic": e}}
			}
		} else {
			exprs[attr] = e
		}
		return fmt.Sprintf("%v.%s = %v", res["address"], attr, exprs[attr])
	},
	// A module call's argument, or its for_each.
	func(r *rand.Rand, doc map[string]any, v planVocabulary) string {
		call := randomCall(r, doc)
		if call == nil {
			return ""
		}
		if r.Intn(3) == 0 {
			call["for_each_expression"] = randomExpression(r, v)
			if exprs, ok := call["expressions"].(map[string]any); ok {
				for _, name := range sortedKeys(exprs) {
					exprs[name] = map[string]any{"references": []any{"each.value"}}
					break
				}
			}
			return fmt.Sprintf("call for_each = %v", call["for_each_expression"])
		}
		exprs, ok := call["expressions"].(map[string]any)
		if !ok {
			exprs = map[string]any{}
			call["expressions"] = exprs
		}
		name, _ := pick(r, append(sortedKeys(exprs), "extra"))
		exprs[name] = randomExpression(r, v)
		return fmt.Sprintf("call argument %s = %v", name, exprs[name])
	},
	// An output's expression.
	func(r *rand.Rand, doc map[string]any, v planVocabulary) string {
		m, _ := pick(r, configModules(doc))
		if m == nil {
			return ""
		}
		outputs, ok := m["outputs"].(map[string]any)
		if !ok {
			outputs = map[string]any{}
			m["outputs"] = outputs
		}
		name, _ := pick(r, append(sortedKeys(outputs), "extra"))
		outputs[name] = map[string]any{"expression": randomExpression(r, v)}
		return fmt.Sprintf("output %s = %v", name, outputs[name])
	},
	// A linking resource's for_each.
	func(r *rand.Rand, doc map[string]any, v planVocabulary) string {
		res := randomConfigResource(r, doc)
		if res == nil {
			return ""
		}
		res["for_each_expression"] = randomExpression(r, v)
		if exprs, ok := res["expressions"].(map[string]any); ok && r.Intn(2) == 0 {
			exprs["topic"] = map[string]any{"references": []any{"each.value", randomReference(r, v)}}
		}
		return fmt.Sprintf("%v for_each = %v", res["address"], res["for_each_expression"])
	},
	// What the plan shows unknown.
	func(r *rand.Rand, doc map[string]any, v planVocabulary) string {
		rc := randomChange(r, doc)
		if rc == nil {
			return ""
		}
		change, _ := rc["change"].(map[string]any)
		if change == nil {
			return ""
		}
		au, ok := change["after_unknown"].(map[string]any)
		if !ok {
			au = map[string]any{}
			change["after_unknown"] = au
		}
		attr := linkingAttributeNames[r.Intn(len(linkingAttributeNames))]
		switch r.Intn(5) {
		case 0:
			delete(au, attr)
		case 1:
			au[attr] = true
		case 2:
			au["dead_letter_policy"] = []any{map[string]any{"dead_letter_topic": true}}
		case 3:
			au["dead_letter_policy"] = map[string]any{"x": map[string]any{"dead_letter_topic": true}}
		default:
			au[attr] = "true"
		}
		return fmt.Sprintf("%v after_unknown = %v", rc["address"], au)
	},
	// A change's keys missing or of another type.
	func(r *rand.Rand, doc map[string]any, v planVocabulary) string {
		rc := randomChange(r, doc)
		if rc == nil {
			return ""
		}
		switch r.Intn(7) {
		case 0:
			delete(rc, "name")
		case 1:
			delete(rc, "module_address")
		case 2:
			rc["module_address"] = 7
		case 3:
			rc["module_address"], _ = pick(r, append(v.modules, "module.elsewhere", ""))
		case 4:
			rc["type"] = 3
		case 5:
			rc["name"] = false
		default:
			rc["mode"] = "data"
		}
		return fmt.Sprintf("%v: %v %v %v", rc["address"], rc["name"], rc["module_address"], rc["type"])
	},
	// A change whose module_address is not its address's module, named by a reference.
	func(r *rand.Rand, doc map[string]any, v planVocabulary) string {
		rc := randomChange(r, doc)
		res := randomConfigResource(r, doc)
		if rc == nil || res == nil {
			return ""
		}
		address, _ := rc["address"].(string)
		if mi, ok := rc["module_address"].(string); ok {
			address = strings.TrimPrefix(address, mi+".")
		}
		rc["module_address"], _ = pick(r, append(v.modules, "module.elsewhere", ""))
		exprs, ok := res["expressions"].(map[string]any)
		if !ok {
			return ""
		}
		refs := []any{address + ".id", address}
		if r.Intn(2) == 0 {
			// Not a direct reference: the graph reads it.
			refs = append(refs, randomReference(r, v))
		}
		exprs["topic"] = map[string]any{"references": refs}
		return fmt.Sprintf("%v moved to %v, named by %v", rc["address"], rc["module_address"], res["address"])
	},
	// The configuration's keys missing or of another type.
	func(r *rand.Rand, doc map[string]any, v planVocabulary) string {
		modules := configModules(doc)
		m, _ := pick(r, modules)
		call := randomCall(r, doc)
		switch r.Intn(12) {
		case 0:
			doc["configuration"] = "none"
		case 1:
			doc["configuration"] = map[string]any{"root_module": 5}
		case 2:
			if m != nil {
				m["outputs"] = []any{map[string]any{"expression": map[string]any{"references": []any{"var.x"}}}}
			}
		case 3:
			if m != nil {
				// resources keyed by address: `some r in` reads an object's values.
				byAddress := map[string]any{}
				for i, res := range elements(m["resources"]) {
					byAddress[fmt.Sprint(i)] = res
				}
				m["resources"] = byAddress
			}
		case 4:
			if m != nil {
				m["module_calls"] = []any{}
			}
		case 5:
			if call != nil {
				delete(call, "expressions")
			}
		case 6:
			if call != nil {
				call["expressions"] = []any{}
			}
		case 7:
			if call != nil {
				call["module"] = "elsewhere"
			}
		case 8:
			if call != nil {
				if module, ok := call["module"].(map[string]any); ok {
					module["variables"] = []any{"x"}
				}
			}
		case 9:
			if call != nil {
				call["for_each_expression"] = []any{false, nil}[r.Intn(2)]
			}
		case 10:
			if m != nil {
				if outputs, ok := m["outputs"].(map[string]any); ok {
					for _, name := range sortedKeys(outputs) {
						outputs[name] = "not an output"
						break
					}
				}
			}
		default:
			if m != nil {
				delete(m, "resources")
			}
		}
		return "configuration edited"
	},
}

func randomChange(r *rand.Rand, doc map[string]any) map[string]any {
	rc, _ := pick(r, elements(doc["resource_changes"]))
	m, _ := rc.(map[string]any)
	return m
}

// randomConfigResource is a resource configuration, a linking one three times in four.
func randomConfigResource(r *rand.Rand, doc map[string]any) map[string]any {
	var all, linking []map[string]any
	for _, m := range configModules(doc) {
		for _, res := range elements(m["resources"]) {
			res, ok := res.(map[string]any)
			if !ok {
				continue
			}
			all = append(all, res)
			if t, ok := res["type"].(string); ok && linkingAttributes[t] != nil {
				linking = append(linking, res)
			}
		}
	}
	if len(linking) > 0 && r.Intn(4) > 0 {
		return linking[r.Intn(len(linking))]
	}
	res, _ := pick(r, all)
	return res
}

func randomCall(r *rand.Rand, doc map[string]any) map[string]any {
	var calls []map[string]any
	for _, m := range configModules(doc) {
		cs, _ := m["module_calls"].(map[string]any)
		for _, name := range sortedKeys(cs) {
			if c, ok := cs[name].(map[string]any); ok {
				calls = append(calls, c)
			}
		}
	}
	c, _ := pick(r, calls)
	return c
}

// TestLinksMatchRegoOnEditedPlans holds links and linkExpressions to the Rego model's on
// real plans edited by the generator: 1 to 4 edits each, the case's seed in its name.
func TestLinksMatchRegoOnEditedPlans(t *testing.T) {
	plans := cliPlanFiles(t)
	names := slices.Sorted(maps.Keys(plans))
	cases := 400
	if testing.Short() {
		cases = 100
	}
	for seed := range cases {
		r := rand.New(rand.NewSource(int64(seed)))
		name := names[r.Intn(len(names))]
		doc := decodePlan(t, plans[name])
		v := vocabularyOf(doc)
		var edits []string
		for range 1 + r.Intn(4) {
			if e := mutations[r.Intn(len(mutations))](r, doc, v); e != "" {
				edits = append(edits, e)
			}
		}
		t.Run(fmt.Sprintf("%d/%s", seed, strings.ReplaceAll(name, "/", "_")), func(t *testing.T) {
			checkLinkParity(t, doc)
			if t.Failed() {
				t.Logf("edits:\n  %s", strings.Join(slices.Clip(edits), "\n  "))
			}
		})
	}
}
