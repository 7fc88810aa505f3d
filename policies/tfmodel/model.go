package tfmodel

import (
	"fmt"
	"strings"
)

// Model is the rules' model of the Terraform plan doc (decoded JSON: maps, slices,
// strings, json.Number or float64, booleans and nil), as a JSON object the rules read at
// input[Key]: "resources", "complete", "removals", "problems", "refresh_only",
// "project_numbers" and "link_expressions" (by address, then linking property, the
// expression a finding names when a link cannot be decided). doc must be a Terraform plan
// (IsPlan).
func Model(doc map[string]any) map[string]any {
	d := newDocument(doc)
	problems := d.problems()
	if len(problems) > 0 {
		// The rules judge nothing on a document with problems; they only report them.
		return map[string]any{"resources": []any{}, "complete": d.complete(), "removals": []any{},
			"problems": problems, "refresh_only": d.refreshOnly(), "project_numbers": map[string]any{},
			"link_expressions": map[string]any{}}
	}
	x := newReferenceIndex(d)
	return map[string]any{
		"resources":        d.resources(x.links()),
		"complete":         d.complete(),
		"removals":         d.removals(),
		"problems":         problems,
		"refresh_only":     d.refreshOnly(),
		"project_numbers":  d.projectNumbers(),
		"link_expressions": x.linkExpressions(),
	}
}

// refreshOnly is terraform_refresh_only (model.rego): the plan changes no managed resource
// while prior_state (to maxModuleDepth levels) holds one, as `terraform plan
// -refresh-only` plans.
func (d *document) refreshOnly() bool {
	for _, rc := range elements(d.raw["resource_changes"]) {
		if mode, ok := objectGet(rc, "mode", "managed"); ok && mode == "managed" {
			return false
		}
	}
	found := false
	d.priorStateModules(func(module map[string]any) {
		resources, _ := objectGet(module, "resources", []any{})
		for _, r := range elements(resources) {
			if mode, ok := objectGet(r, "mode", "managed"); ok && mode == "managed" {
				found = true
			}
		}
	})
	return found
}

// priorStateModules calls visit with each module of prior_state that is an object, level
// by level to maxModuleDepth levels (prior_state_modules: the root module, or {} when
// the plan has none, and the child_modules below).
func (d *document) priorStateModules(visit func(map[string]any)) {
	root := lookup(d.raw, "prior_state", "values", "root_module")
	if root == nil {
		root = map[string]any{}
	}
	level := []any{root}
	for depth := 0; depth < maxModuleDepth && len(level) > 0; depth++ {
		var next []any
		for _, m := range level {
			module, ok := m.(map[string]any)
			if !ok {
				continue
			}
			visit(module)
			children, _ := objectGet(module, "child_modules", []any{})
			next = append(next, elements(children)...)
		}
		level = next
	}
}

// resources is terraform_resources: every planned managed resource, in document order,
// with its links (links by address).
func (d *document) resources(all map[string]links) []any {
	out := make([]any, 0, len(d.planned))
	for _, c := range d.planned {
		// Model calls this only when every change has a string address and type.
		// Terraform before 0.15 writes no after_sensitive: no value is marked sensitive.
		unknown, _ := objectGet(c.body, "after_unknown", false)
		sensitive, _ := objectGet(c.body, "after_sensitive", false)
		l := all[c.address]
		exact, possible := map[string]any{}, map[string]any{}
		for p, t := range l.exact {
			exact[p] = t
		}
		for p, t := range l.possible {
			possible[p] = t
		}
		out = append(out, map[string]any{
			"urn":                  c.address,
			"type":                 pulumiType(c.typ),
			"op":                   strings.Join(c.actions, "+"),
			"properties":           properties(c.typ, c.body["after"], unknown, sensitive),
			"dependencies":         l.dependencies,
			"propertyDependencies": exact,
			"possibleDependencies": possible,
		})
	}
	return out
}

// statefulTypes hold messages: replacing or deleting one loses them (model_pulumi.rego's
// stateful_types).
var statefulTypes = set("gcp:pubsub/subscription:Subscription", "gcp:pubsub/topic:Topic")

// removals is terraform_removals: every subscription and topic the plan deletes or
// replaces, with its properties before. Like resources, it runs only on a plan without
// problems.
func (d *document) removals() []any {
	out := []any{}
	for _, c := range d.changes {
		if stringOr(c.raw, "mode", "managed") != "managed" || !c.actionsOK {
			continue
		}
		action := removalAction(c.actions)
		if action == "" || !statefulTypes[pulumiType(c.typ)] {
			continue
		}
		sensitive, _ := objectGet(c.body, "before_sensitive", false)
		out = append(out, map[string]any{
			"urn":        c.address,
			"type":       pulumiType(c.typ),
			"action":     action,
			"properties": properties(c.typ, c.body["before"], false, sensitive),
		})
	}
	return out
}

// removalAction is "delete" or "replace" for the actions that delete or replace a resource
// in the cloud, "" for any other.
func removalAction(actions []string) string {
	switch {
	case len(actions) == 1 && actions[0] == "delete":
		return "delete"
	case len(actions) == 2 && (actions[0] == "delete" && actions[1] == "create" || actions[0] == "create" && actions[1] == "delete"):
		return "replace"
	}
	return ""
}

// complete is terraform_complete: false when Terraform says the plan is partial (it
// stopped on an error, or deferred changes).
func (d *document) complete() bool {
	return d.raw["errored"] != true && d.raw["complete"] != false
}

// problems is terraform_problems: one message per malformed resource change.
func (d *document) problems() []any {
	out := []any{}
	for i, c := range d.changes {
		_, okA := c.raw["address"].(string)
		_, okT := c.raw["type"].(string)
		if !okA || !okT || !c.actionsArray {
			out = append(out, fmt.Sprintf(`resource_changes[%d]: a resource change needs "address", "type" and "change" with "actions" (%s)`,
				i, "is this terraform show -json output?"))
		}
	}
	return out
}

// projectNumbers is terraform_project_numbers: the project_id of each google_project data
// source read while planning (prior_state holds them, to maxModuleDepth levels, as the
// configuration is read) mapped to
// its number, when the plan shows exactly one number for it.
func (d *document) projectNumbers() map[string]any {
	numbers := map[string]map[string]bool{}
	d.priorStateModules(func(mod map[string]any) {
		for _, r := range elements(mod["resources"]) {
			res, _ := r.(map[string]any)
			values, _ := res["values"].(map[string]any)
			id, okI := values["project_id"].(string)
			n, okN := values["number"].(string)
			if res["mode"] == "data" && res["type"] == "google_project" && okI && okN && n != "" {
				if numbers[id] == nil {
					numbers[id] = map[string]bool{}
				}
				numbers[id][n] = true
			}
		}
	})
	out := map[string]any{}
	for id, read := range numbers {
		if len(read) == 1 {
			for n := range read {
				out[id] = n
			}
		}
	}
	return out
}

// lookup is the value at path in nested objects, nil when there is none.
func lookup(v any, path ...string) any {
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}
