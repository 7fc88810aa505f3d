// Package tfgen generates random but realistic Terraform plans (`terraform show -json
// PLANFILE`, format_version 1.2) for fuzz tests of the rules' model of a plan
// (policies/model*.rego): module trees with count and
// for_each instances, the resource types the model converts and a few it does not, every
// planned action, unknown and sensitive values at any depth, and linking attributes
// (topic, subscription, dead_letter_policy) whose configuration names a resource, a keyed
// instance, a variable, a local, a module output, a data source, each.value, a literal, a
// dynamic block or nothing, with the reference lists real Terraform writes (and, now and
// then, references to what the plan does not hold). A small share of plans have malformed
// resource changes, errored or incomplete plans, and google_project data sources in
// prior_state give project numbers.
//
// Now and then a plan holds what Terraform never writes but a model must bear: a
// dead_letter_policy block written as an object, a change without after_unknown or
// after_sensitive, "resource_changes": null, a module call passed its own output (a
// cycle), a key on a resource without count. Kept out: two attribute names of one object
// that the model converts to one name (a__b and a_B, env and envs), on which the Rego
// model fails with a conflict and which no provider schema has.
//
// A plan depends only on its seed.
package tfgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// Plan returns the plan of seed as the model code decodes one: encoding/json with
// UseNumber into map[string]any ([]any, json.Number, string, bool and nil below).
func Plan(seed uint64) map[string]any {
	doc, err := Decode(PlanJSON(seed))
	if err != nil {
		// PlanJSON writes what encoding/json produced; failing to read it back is a bug here.
		panic(fmt.Sprintf("tfgen: decoding the plan of seed %d: %v", seed, err))
	}
	return doc
}

// PlanJSON returns the plan of seed as `terraform show -json` prints it.
func PlanJSON(seed uint64) []byte {
	data, _ := generate(seed)
	return data
}

// Decode reads a plan as the model code does: encoding/json with UseNumber, into
// map[string]any.
func Decode(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("decoding a Terraform plan: %w", err)
	}
	return doc, nil
}

// generate builds the plan of seed and the trace of the shapes it used.
func generate(seed uint64) ([]byte, *trace) {
	g := newGen(seed)
	doc := g.plan()
	data, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		// Every value the generator builds is plain JSON.
		panic(fmt.Sprintf("tfgen: encoding the plan of seed %d: %v", seed, err))
	}
	return data, g.trace
}

// trace records, per planned address, how its linking attributes were written, so tests
// can hold the model's outputs to the shapes a plan holds.
type trace struct {
	// links maps address → attribute → the expression's shape: its kinds, outermost
	// first, joined by ">" (variable>output>resource: a variable passed a module output
	// whose expression names a resource).
	links map[string]map[string]string
	// dlq maps a subscription's address to how the configuration writes its
	// dead_letter_policy (literal, dynamic, absent, object) and how its planned value shows
	// it (known, unknown-topic, unknown-block, empty, null), joined by "/".
	dlq map[string]string
	// features are plan-wide shapes: "errored", "incomplete", "malformed", "deposed",
	// "deep-value", "camel-edge", "two-numbers", "no-configuration", "deep-module" ...
	features map[string]bool
	// doubleRead are the projects prior_state reads twice with different numbers.
	doubleRead []string
}

func (t *trace) link(address, attribute, shape string) {
	if t.links[address] == nil {
		t.links[address] = map[string]string{}
	}
	t.links[address][attribute] = shape
}

// gen is one plan being generated.
type gen struct {
	r     *rand.Rand
	trace *trace
	// names numbers the names the generator makes up, so they never collide.
	names int
	// projects are the project IDs the plan's resources live in.
	projects []string
	// ids holds the id value of each planned topic and subscription instance by module
	// instance + "|" + address in it: a string, or nil when it is known only after apply.
	ids map[string]any
	// changes are the resource_changes, planned holds planned_values' modules by address.
	changes []any
	planned map[string]*plannedModule
	// budget is how many resource instances the plan may still get.
	budget int
}

func newGen(seed uint64) *gen {
	return &gen{
		r:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		trace:   &trace{links: map[string]map[string]string{}, dlq: map[string]string{}, features: map[string]bool{}},
		ids:     map[string]any{},
		planned: map[string]*plannedModule{},
	}
}

// chance is true with probability p.
func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

// pick returns one of xs.
func pick[T any](g *gen, xs ...T) T { return xs[g.r.IntN(len(xs))] }

// weighted returns one of the choices, each with its weight.
func weighted[T any](g *gen, choices []weight[T]) T {
	total := 0
	for _, c := range choices {
		total += c.w
	}
	n := g.r.IntN(total)
	for _, c := range choices {
		if n < c.w {
			return c.v
		}
		n -= c.w
	}
	return choices[len(choices)-1].v
}

type weight[T any] struct {
	v T
	w int
}

// fresh returns a new name with prefix.
func (g *gen) fresh(prefix string) string {
	g.names++
	return fmt.Sprintf("%s_%d", prefix, g.names)
}

// plan builds the whole document.
func (g *gen) plan() map[string]any {
	g.projects = []string{"acme-prod", pick(g, "acme-dlq", "other-proj", "acme-prod")}
	g.budget = weighted(g, []weight[int]{{0, 1}, {3, 3}, {8, 5}, {16, 5}, {28, 3}, {40, 2}})
	root := g.configure()
	doc := map[string]any{
		"format_version":    "1.2",
		"terraform_version": pick(g, "1.5.7", "1.9.8", "1.10.5", "1.9.0"),
	}
	if g.budget > 0 || g.chance(0.5) {
		g.expand(root, "")
	}
	g.malformed()
	g.sortChanges()
	switch {
	case len(g.changes) > 0:
		doc["resource_changes"] = g.changes
	case g.chance(0.3):
		doc["resource_changes"] = []any{}
	case g.chance(0.1):
		// Terraform leaves the key out; a null is what the model must bear from other tools.
		doc["resource_changes"] = nil
		g.trace.features["null-changes"] = true
	}
	doc["planned_values"] = map[string]any{"root_module": g.plannedValues("")}
	if !g.chance(0.03) {
		doc["configuration"] = map[string]any{
			"provider_config": map[string]any{"google": map[string]any{
				"name": "google", "full_name": "registry.terraform.io/hashicorp/google",
				"expressions": map[string]any{"project": map[string]any{"constant_value": g.projects[0]}},
			}},
			"root_module": root.json(),
		}
		if vars := root.rootVariables(); len(vars) > 0 {
			doc["variables"] = vars
		}
	} else {
		g.trace.features["no-configuration"] = true
	}
	if ps := g.priorState(); ps != nil {
		doc["prior_state"] = ps
	}
	switch {
	case g.chance(0.05):
		doc["errored"] = true
		g.trace.features["errored"] = true
	case g.chance(0.05):
		doc["complete"] = false
		g.trace.features["incomplete"] = true
	case g.chance(0.3):
		doc["errored"] = false
		if g.chance(0.5) {
			doc["complete"] = true
		}
	}
	if g.chance(0.3) {
		doc["timestamp"] = "2026-11-27T12:00:00Z"
	}
	return doc
}

// sortChanges orders the resource changes by address, as Terraform prints them; a change
// without an address stays where it was put.
func (g *gen) sortChanges() {
	var keyed []any
	for _, c := range g.changes {
		if _, ok := c.(map[string]any)["address"].(string); ok {
			keyed = append(keyed, c)
		}
	}
	slices.SortStableFunc(keyed, func(a, b any) int {
		return strings.Compare(a.(map[string]any)["address"].(string), b.(map[string]any)["address"].(string))
	})
	i := 0
	for j, c := range g.changes {
		if _, ok := c.(map[string]any)["address"].(string); ok {
			g.changes[j] = keyed[i]
			i++
		}
	}
}

// malformed adds, to a small share of plans, resource changes the model must name as
// problems: without an address, a type, a change or its actions.
func (g *gen) malformed() {
	if !g.chance(0.08) {
		return
	}
	g.trace.features["malformed"] = true
	for n := 1 + g.r.IntN(2); n > 0; n-- {
		name := g.fresh("broken")
		rc := map[string]any{
			"address": "google_pubsub_topic." + name, "mode": "managed", "type": "google_pubsub_topic", "name": name,
			"change": map[string]any{"actions": []any{"create"}, "before": nil, "after": map[string]any{"name": name}},
		}
		switch g.r.IntN(5) {
		case 0:
			delete(rc, "address")
		case 1:
			delete(rc, "type")
		case 2:
			delete(rc["change"].(map[string]any), "actions")
		case 3:
			delete(rc, "change")
		case 4:
			rc["change"].(map[string]any)["actions"] = "create"
		}
		at := g.r.IntN(len(g.changes) + 1)
		g.changes = slices.Insert(g.changes, at, any(rc))
	}
}
