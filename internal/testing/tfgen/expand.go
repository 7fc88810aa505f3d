package tfgen

import (
	"fmt"
	"strconv"
	"strings"
)

// Expansion: the configuration's module calls and resources become module and resource
// instances, each resource instance a resource change with its planned values.

// plannedModule is a module instance of planned_values and prior_state.
type plannedModule struct {
	children  []string
	resources []any
	// data are the data sources prior_state holds for it.
	data []any
}

// actions are the planned actions, weighted.
var actions = []weight[[]any]{
	{[]any{"create"}, 40}, {[]any{"no-op"}, 20}, {[]any{"update"}, 15}, {[]any{"delete"}, 6},
	{[]any{"delete", "create"}, 6}, {[]any{"create", "delete"}, 4}, {[]any{"forget"}, 2},
	{[]any{"read"}, 1}, {[]any{"create", "forget"}, 1},
}

func join(mi, address string) string {
	if mi == "" {
		return address
	}
	return mi + "." + address
}

func (g *gen) plannedAt(mi string) *plannedModule {
	pm := g.planned[mi]
	if pm == nil {
		pm = &plannedModule{}
		g.planned[mi] = pm
	}
	return pm
}

// expand plans the instances of module m at module instance mi.
func (g *gen) expand(m *module, mi string) {
	g.plannedAt(mi)
	// The resources a linking attribute names are planned first, so their ids are known
	// when the attribute's value is written.
	order := func(r *resource) int {
		switch r.typ {
		case topicType:
			return 0
		case subscriptionType:
			return 1
		}
		return 2
	}
	childrenFirst := g.chance(0.5)
	if childrenFirst {
		g.expandCalls(m, mi)
	}
	for pass := 0; pass < 3; pass++ {
		for _, r := range m.resources {
			if order(r) != pass || r.mode != "managed" {
				continue
			}
			keys := r.inst.keys
			if r.inst.kind == single {
				keys = []string{""}
			}
			for i, key := range keys {
				if g.budget <= 0 {
					return
				}
				g.budget--
				g.instance(m, mi, r, key, i)
			}
		}
	}
	g.dataChanges(m, mi)
	if !childrenFirst {
		g.expandCalls(m, mi)
	}
}

func (g *gen) expandCalls(m *module, mi string) {
	for _, c := range m.calls {
		keys := c.inst.keys
		if c.inst.kind == single {
			keys = []string{""}
		}
		for _, key := range keys {
			child := join(mi, "module."+c.name+key)
			parent := g.plannedAt(mi)
			parent.children = append(parent.children, child)
			g.expand(c.child, child)
		}
	}
}

// dataChanges adds, now and then, the read of a data source Terraform defers to apply.
func (g *gen) dataChanges(m *module, mi string) {
	for _, r := range m.resources {
		if r.mode != "data" || !g.chance(0.2) {
			continue
		}
		address := join(mi, "data."+r.address())
		rc := map[string]any{
			"address": address, "mode": "data", "type": r.typ, "name": r.name,
			"provider_name": "registry.terraform.io/hashicorp/google",
			"change": map[string]any{
				"actions": []any{"read"}, "before": nil, "after": map[string]any{"name": r.name},
				"after_unknown": map[string]any{"id": true}, "before_sensitive": false, "after_sensitive": map[string]any{},
			},
			"action_reason": "read_because_dependency_pending",
		}
		if mi != "" {
			rc["module_address"] = mi
		}
		g.changes = append(g.changes, rc)
	}
}

// instance adds the resource change of one instance of r (key "" for a resource without
// count or for_each) in module instance mi.
func (g *gen) instance(m *module, mi string, r *resource, key string, index int) {
	address := join(mi, r.address()+key)
	act := weighted(g, actions)
	project := pick(g, g.projects...)
	name := strings.ReplaceAll(strings.Trim(strings.ReplaceAll(address, ".", "-"), "-"), `"`, "")
	v := g.values(r.typ, name, project)
	created := act[0] == "create" || len(act) == 2 && act[0] == "delete"
	id := fmt.Sprintf("projects/%s/%s/%s", project, map[bool]string{true: "topics", false: "subscriptions"}[r.typ == topicType], name)
	for _, attribute := range sortedKeys(linkingAttributes[r.typ]) {
		target := linkingAttributes[r.typ][attribute]
		g.linkValue(mi, r, address, attribute, target, v)
	}
	if !created {
		// An unchanged resource's values are known; an updated one's mostly.
		if act[0] != "update" || g.chance(0.8) {
			v = resolve(v).(map[string]any)
		}
		v["id"] = id
	}
	if r.typ == topicType || r.typ == subscriptionType {
		g.ids[mi+"|"+r.address()+key] = v["id"]
	}
	after, _, afterUnknown, afterSensitive := split(v)
	var before any
	if act[0] != "create" {
		b := g.values(r.typ, name, project)
		for _, attribute := range sortedKeys(linkingAttributes[r.typ]) {
			g.linkValue(mi, r, address, attribute, linkingAttributes[r.typ][attribute], b)
		}
		before, _, _, _ = split(resolve(b))
		before.(map[string]any)["id"] = id
	}
	change := map[string]any{"actions": act, "before": before, "before_sensitive": false}
	switch {
	case act[0] == "delete" && len(act) == 1, act[0] == "forget", act[0] == "read" && g.chance(0.5):
		change["after"] = nil
		change["after_unknown"] = map[string]any{}
		change["after_sensitive"] = false
	default:
		change["after"] = after
		change["after_unknown"] = afterUnknown
		change["after_sensitive"] = afterSensitive
		if g.chance(0.02) {
			change["after_sensitive"] = true
			g.trace.features["sensitive-object"] = true
		}
		if g.chance(0.01) {
			change["after_unknown"] = true
			g.trace.features["unknown-object"] = true
		}
		if g.chance(0.01) {
			// Terraform always writes both; another tool may not.
			delete(change, pick(g, "after_unknown", "after_sensitive"))
			g.trace.features["missing-marks"] = true
		}
	}
	if before != nil {
		bs := map[string]any{}
		if g.chance(0.1) {
			bs["labels"] = true
		}
		change["before_sensitive"] = bs
	}
	rc := map[string]any{
		"address": address, "type": r.typ, "name": r.name,
		"provider_name": "registry.terraform.io/hashicorp/google", "change": change,
	}
	if !g.chance(0.05) {
		rc["mode"] = "managed"
	}
	if mi != "" {
		rc["module_address"] = mi
	}
	switch r.inst.kind {
	case counted:
		rc["index"] = index
	case forEach:
		k, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(key, "["), "]"))
		if err != nil {
			k = key
		}
		rc["index"] = k
	}
	if len(act) == 2 {
		rc["action_reason"] = "replace_because_cannot_update"
	}
	if g.chance(0.03) {
		rc["previous_address"] = join(mi, r.typ+"."+g.fresh("old"))
	}
	g.changes = append(g.changes, rc)
	if act[0] == "delete" && len(act) == 2 && g.chance(0.2) {
		// A deposed object left by an earlier create_before_destroy: same address.
		deposed := map[string]any{}
		for k, x := range rc {
			deposed[k] = x
		}
		deposed["deposed"] = "0badc0de"
		deposed["change"] = map[string]any{"actions": []any{"delete"}, "before": before, "after": nil, "after_unknown": map[string]any{}, "before_sensitive": false, "after_sensitive": false}
		g.changes = append(g.changes, deposed)
		g.trace.features["deposed"] = true
	}
	if change["after"] != nil && !(act[0] == "delete" && len(act) == 1) {
		pv := map[string]any{
			"address": address, "mode": "managed", "type": r.typ, "name": r.name,
			"provider_name": "registry.terraform.io/hashicorp/google", "schema_version": 0,
			"values": after, "sensitive_values": afterSensitive,
		}
		if idx, ok := rc["index"]; ok {
			pv["index"] = idx
		}
		pm := g.plannedAt(mi)
		pm.resources = append(pm.resources, pv)
	}
	for attribute, shape := range g.shapes(r) {
		g.trace.link(address, attribute, shape)
	}
	if r.typ == subscriptionType {
		g.trace.dlq[address] = r.dlq + "/" + dlqValueShape(v["dead_letter_policy"])
	}
}

// shapes are the trace's shapes of r's linking attributes.
func (g *gen) shapes(r *resource) map[string]string {
	out := map[string]string{}
	for attribute := range linkingAttributes[r.typ] {
		switch e := r.links[attribute]; {
		case e != nil:
			out[attribute] = e.shape
		case attribute == "dead_letter_policy":
			out[attribute] = r.dlq
		default:
			out[attribute] = "none"
		}
	}
	return out
}

func dlqValueShape(v any) string {
	switch x := v.(type) {
	case unknownValue:
		return "unknown-block"
	case nil:
		return "null"
	case []any:
		if len(x) == 0 {
			return "empty"
		}
		if b, ok := x[0].(map[string]any); ok && b["dead_letter_topic"] == unknown {
			return "unknown-topic"
		}
		return "known"
	}
	return "other"
}

// resolve replaces every unknown in v by null (the values of a resource as it is).
func resolve(v any) any {
	switch x := v.(type) {
	case unknownValue:
		return nil
	case sensitive:
		return sensitive{resolve(x.v)}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = resolve(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = resolve(e)
		}
		return out
	}
	return v
}

// linkValue writes the planned value of a linking attribute: the id of the instance a
// direct reference names as that instance shows it, else a known id or unknown.
func (g *gen) linkValue(mi string, r *resource, address, attribute, target string, v map[string]any) {
	e := r.links[attribute]
	var value any
	if e != nil && strings.HasPrefix(e.shape, "resource") && len(e.refs) > 0 {
		subject := e.refs[len(e.refs)-1]
		for _, ref := range e.refs {
			if strings.Contains(ref, "[") && !strings.HasSuffix(ref, ".id") && !strings.HasSuffix(ref, ".name") {
				subject = ref
			}
		}
		if id, ok := g.ids[mi+"|"+subject]; ok {
			value = id
			if value == nil {
				value = unknown
			}
		}
	}
	if value == nil {
		kind := "topics"
		if target == subscriptionType {
			kind = "subscriptions"
		}
		value = pick[any](g, unknown, fmt.Sprintf("projects/%s/%s/%s", pick(g, g.projects...), kind, g.fresh("named")))
	}
	if attribute != "dead_letter_policy" {
		if e == nil && g.chance(0.5) {
			value = nil
		}
		v[attribute] = value
		return
	}
	block := map[string]any{"dead_letter_topic": value, "max_delivery_attempts": g.maybe(5)}
	switch r.dlq {
	case "literal", "object":
		v[attribute] = []any{block}
		if g.chance(0.03) {
			v[attribute] = []any{} // inconsistent with the configuration, which the model must bear
		}
	case "absent":
		v[attribute] = []any{}
		if g.chance(0.05) {
			v[attribute] = nil
		}
	case "dynamic":
		v[attribute] = weighted(g, []weight[any]{{[]any{block}, 3}, {[]any{}, 3}, {unknown, 3}, {[]any{map[string]any{"dead_letter_topic": unknown, "max_delivery_attempts": 5}}, 2}})
	}
}

// plannedValues is planned_values' module mi.
func (g *gen) plannedValues(mi string) map[string]any {
	pm := g.plannedAt(mi)
	out := map[string]any{}
	if len(pm.resources) > 0 {
		out["resources"] = pm.resources
	}
	var children []any
	for _, c := range pm.children {
		child := g.plannedValues(c)
		child["address"] = c
		children = append(children, child)
	}
	if len(children) > 0 {
		out["child_modules"] = children
	}
	return out
}

// priorState is the state the plan was made from: the google_project data sources read
// while planning, at some module instances (two reads of one project with different
// numbers now and then, a number left empty, one below the depth the model reads), and
// nil for a plan with no state.
func (g *gen) priorState() map[string]any {
	if g.chance(0.15) {
		return nil
	}
	for _, mi := range sortedKeys(g.planned) {
		if !g.chance(0.35) {
			continue
		}
		g.trace.features["project-data"] = true
		pm := g.plannedAt(mi)
		project := pick(g, g.projects...)
		number := pick(g, "123456789012", "210987654321")
		switch {
		case g.chance(0.1):
			// Two reads of one project that disagree: the model trusts neither.
			g.trace.features["two-numbers"] = true
			g.trace.doubleRead = append(g.trace.doubleRead, project)
			pm.data = append(pm.data, g.projectData(mi, "[0]", project, number), g.projectData(mi, "[1]", project, "999999999999"))
		case g.chance(0.08):
			pm.data = append(pm.data, g.projectData(mi, "", project, pick[any](g, "", nil)))
		default:
			pm.data = append(pm.data, g.projectData(mi, "", project, number))
		}
	}
	root := g.stateModule("")
	if g.chance(0.03) {
		// A project read nine modules down, deeper than the model looks.
		g.trace.features["deep-project-data"] = true
		deep := map[string]any{"resources": []any{g.projectData("module.deep", "", "deep-project", "555555555555")}, "address": "module.deep"}
		for range 9 {
			deep = map[string]any{"address": "module.deep", "child_modules": []any{deep}}
		}
		children, _ := root["child_modules"].([]any)
		root["child_modules"] = append(children, deep)
	}
	return map[string]any{
		"format_version":    "1.0",
		"terraform_version": "1.9.8",
		"values":            map[string]any{"root_module": root},
	}
}

func (g *gen) projectData(mi, key string, project, number any) map[string]any {
	values := map[string]any{"project_id": project, "number": number, "name": project, "id": fmt.Sprintf("projects/%v", project), "labels": map[string]any{}}
	if number == nil && g.chance(0.5) {
		delete(values, "number")
	}
	r := map[string]any{
		"address": join(mi, "data.google_project.this"+key), "mode": "data", "type": "google_project", "name": "this",
		"provider_name": "registry.terraform.io/hashicorp/google", "schema_version": 0,
		"values": values, "sensitive_values": map[string]any{"labels": map[string]any{}},
	}
	if key != "" {
		r["index"] = 0
		if key == "[1]" {
			r["index"] = 1
		}
	}
	return r
}

// stateModule is prior_state's module mi: its data sources and the planned resources
// that existed before.
func (g *gen) stateModule(mi string) map[string]any {
	pm := g.plannedAt(mi)
	out := map[string]any{}
	if len(pm.data) > 0 {
		out["resources"] = pm.data
	}
	var children []any
	for _, c := range pm.children {
		child := g.stateModule(c)
		if len(child) == 0 {
			continue
		}
		child["address"] = c
		children = append(children, child)
	}
	if len(children) > 0 {
		out["child_modules"] = children
	}
	return out
}
