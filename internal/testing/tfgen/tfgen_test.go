package tfgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/regoquery"
)

// seeds is how many plans the tests generate and judge.
const seeds = 400

// TestPlanIsDeterministic: a seed always gives the same plan, Plan is PlanJSON decoded
// as the model decodes it, and seeds differ.
func TestPlanIsDeterministic(t *testing.T) {
	distinct := map[string]bool{}
	for seed := range uint64(100) {
		a, b := PlanJSON(seed), PlanJSON(seed)
		if !bytes.Equal(a, b) {
			t.Fatalf("seed %d: two plans differ", seed)
		}
		distinct[string(a)] = true
		doc, err := Decode(a)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(Plan(seed), doc) {
			t.Fatalf("seed %d: Plan is not PlanJSON decoded", seed)
		}
		if err := plainJSON(doc, "plan"); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
	if len(distinct) < 95 {
		t.Errorf("100 seeds gave only %d distinct plans", len(distinct))
	}
}

// plainJSON checks v holds only what encoding/json with UseNumber decodes to.
func plainJSON(v any, path string) error {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if err := plainJSON(e, path+"."+k); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := plainJSON(e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case json.Number, string, bool, nil:
	default:
		return fmt.Errorf("%s: a %T", path, v)
	}
	return nil
}

// The references a configuration lists, by the kind of their subject.
var (
	resourceInstanceRef = regexp.MustCompile(`^((?:data\.)?[A-Za-z_][A-Za-z0-9_-]*\.[A-Za-z_][A-Za-z0-9_-]*)(\[(?:"(?:[^"\\]|\\.)*"|[0-9]+)\])?(\.[A-Za-z_]+)?$`)
	moduleInstanceRef   = regexp.MustCompile(`^(module\.[A-Za-z_][A-Za-z0-9_-]*)\[(?:"(?:[^"\\]|\\.)*"|[0-9]+)\]$`)
	moduleOutputRef     = regexp.MustCompile(`^(module\.[A-Za-z_][A-Za-z0-9_-]*(?:\[(?:"(?:[^"\\]|\\.)*"|[0-9]+)\])?)\.[A-Za-z_][A-Za-z0-9_-]*$`)
)

// TestReferencesAreWrittenAsTerraformWritesThem: every reference list holds, beside a
// traversal, its subject (google_pubsub_topic.t for google_pubsub_topic.t.id,
// module.m[0] for module.m[0].out) and, beside an instance, its resource
// (google_pubsub_topic.t for google_pubsub_topic.t["a"]); every planned change's address
// is its module address, type, name and index; every module instance of the changes has
// a module call in the configuration.
func TestReferencesAreWrittenAsTerraformWritesThem(t *testing.T) {
	for seed := range uint64(seeds) {
		doc := Plan(seed)
		cfg, _ := doc["configuration"].(map[string]any)
		walkReferences(cfg, func(refs []any) {
			has := func(r string) bool { return slices.Contains(refs, any(r)) }
			for _, r := range refs {
				s := r.(string)
				if strings.HasPrefix(s, "var.") || strings.HasPrefix(s, "local.") || strings.HasPrefix(s, "each.") || s == "count.index" {
					if parts := strings.Split(s, "."); len(parts) > 2 && !has(parts[0]+"."+parts[1]) {
						t.Fatalf("seed %d: %q without %s.%s in %v", seed, s, parts[0], parts[1], refs)
					}
					continue
				}
				if m := moduleOutputRef.FindStringSubmatch(s); m != nil {
					if !has(m[1]) {
						t.Fatalf("seed %d: %q without its module %q in %v", seed, s, m[1], refs)
					}
					continue
				}
				if m := moduleInstanceRef.FindStringSubmatch(s); m != nil {
					// module.m[0] is the subject, followed by module.m, unless it is the
					// instance of an output (module.m[0].out, module.m[0]).
					output := slices.ContainsFunc(refs, func(r any) bool { return strings.HasPrefix(r.(string), s+".") })
					if !output && !has(m[1]) {
						t.Fatalf("seed %d: %q without its module call %q in %v", seed, s, m[1], refs)
					}
					continue
				}
				if m := resourceInstanceRef.FindStringSubmatch(s); m != nil && !strings.HasPrefix(s, "module.") {
					if (m[2] != "" || m[3] != "") && !has(m[1]) {
						t.Fatalf("seed %d: %q without %q in %v", seed, s, m[1], refs)
					}
					if m[2] != "" && m[3] != "" && !has(m[1]+m[2]) {
						t.Fatalf("seed %d: %q without %q in %v", seed, s, m[1]+m[2], refs)
					}
				}
			}
		})
		changes, _ := doc["resource_changes"].([]any)
		for _, c := range changes {
			rc := c.(map[string]any)
			address, ok1 := rc["address"].(string)
			typ, ok2 := rc["type"].(string)
			if !ok1 || !ok2 {
				continue
			}
			want := typ + "." + rc["name"].(string)
			if rc["mode"] == "data" {
				want = "data." + want
			}
			switch i := rc["index"].(type) {
			case json.Number:
				want += "[" + i.String() + "]"
			case string:
				want += quoteKey(i)
			}
			if mi, ok := rc["module_address"].(string); ok {
				want = mi + "." + want
			}
			if address != want {
				t.Fatalf("seed %d: address %q, want %q", seed, address, want)
			}
		}
	}
}

// walkReferences calls f with every "references" list under v.
func walkReferences(v any, f func([]any)) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if refs, ok := e.([]any); ok && k == "references" {
				f(refs)
				continue
			}
			walkReferences(e, f)
		}
	case []any:
		for _, e := range x {
			walkReferences(e, f)
		}
	}
}

// The Rego model's values the coverage test reads.
const (
	unknownText = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
	secretText  = "[secret]"
)

// propertyNames maps a linking attribute to its property in the model.
var propertyNames = map[string]string{"topic": "topic", "dead_letter_policy": "deadLetterPolicy", "subscription": "subscription"}

// TestRegoModelAcceptsPlans: the rules' Rego model (data.eventpipe.model, and the
// expression it names for each linking property) evaluates without error on every
// generated plan, and across the plans every shape the generator is for reaches the
// model: counted on the model's own outputs, so a generator that stops producing a shape
// fails here.
func TestRegoModelAcceptsPlans(t *testing.T) {
	q := regoquery.Prepare(t, modelQuery)
	ctx := context.Background()
	seen := map[string]int{}
	for seed := range uint64(seeds) {
		data, tr := generate(seed)
		doc, err := Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		m, err := evalModel(ctx, q, doc)
		if err != nil {
			t.Fatalf("seed %d: the Rego model fails: %v", seed, err)
		}
		for _, c := range coverage {
			if n := c.count(m, tr); n > 0 {
				seen[c.name] += n
			}
		}
	}
	for _, c := range coverage {
		t.Logf("%5d %s", seen[c.name], c.name)
		if seen[c.name] < c.min {
			t.Errorf("%s: %d times in %d plans, want at least %d", c.name, seen[c.name], seeds, c.min)
		}
	}
}

// shape is one thing the generated plans must show the model, counted per plan.
type shape struct {
	name  string
	min   int
	count func(m *modelOf, tr *trace) int
}

func resources(m *modelOf) []map[string]any {
	var out []map[string]any
	rs, _ := m.Model["resources"].([]any)
	for _, r := range rs {
		out = append(out, r.(map[string]any))
	}
	return out
}

// linked counts the resources whose attribute's trace shape satisfies match and whose
// model links it as kind (propertyDependencies or possibleDependencies).
func linked(kind string, match func(attribute, shape string) bool) func(*modelOf, *trace) int {
	return func(m *modelOf, tr *trace) int {
		n := 0
		for _, r := range resources(m) {
			deps, _ := r[kind].(map[string]any)
			for attribute, s := range tr.links[r["urn"].(string)] {
				if _, ok := deps[propertyNames[attribute]]; ok && match(attribute, s) {
					n++
				}
			}
		}
		return n
	}
}

// properties counts the resources whose properties satisfy match.
func properties(match func(typ string, props map[string]any) bool) func(*modelOf, *trace) int {
	return func(m *modelOf, _ *trace) int {
		n := 0
		for _, r := range resources(m) {
			if p, _ := r["properties"].(map[string]any); match(r["type"].(string), p) {
				n++
			}
		}
		return n
	}
}

// at reads a path of keys and indexes in v, nil where it leads nowhere.
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func contains(v any, want string) bool {
	b, _ := json.Marshal(v)
	return bytes.Contains(b, []byte(want))
}

// planned counts the subscriptions in the model whose dead_letter_policy the trace shows
// written and planned as dlq.
func planned(dlq string) func(*modelOf, *trace) int {
	return func(m *modelOf, tr *trace) int {
		n := 0
		for _, r := range resources(m) {
			if tr.dlq[r["urn"].(string)] == dlq {
				n++
			}
		}
		return n
	}
}

func feature(f string) func(*modelOf, *trace) int {
	return func(_ *modelOf, tr *trace) int {
		if tr.features[f] {
			return 1
		}
		return 0
	}
}

func is(want string) func(string, string) bool {
	return func(_, s string) bool { return s == want }
}

func prefix(want string) func(string, string) bool {
	return func(_, s string) bool { return strings.HasPrefix(s, want) }
}

const subscription = "gcp:pubsub/subscription:Subscription"

var coverage = []shape{
	{"exact link to a resource (google_pubsub_topic.t.id)", 50, linked("propertyDependencies", is("resource"))},
	{"exact link to a keyed instance (google_pubsub_topic.t[\"a\"])", 20, linked("propertyDependencies", is("resource-keyed"))},
	{"exact link through each.key or count.index", 3, linked("propertyDependencies", func(_, s string) bool {
		return s == "resource-each-key" || s == "resource-count-index"
	})},
	{"exact link through a module variable", 5, linked("propertyDependencies", is("variable"))},
	{"exact link through a module output (module.m.out)", 5, linked("propertyDependencies", prefix("output>"))},
	{"exact link through a keyed module instance's output (module.m[0].out)", 5, linked("propertyDependencies", prefix("output-keyed>"))},
	{"exact dead-letter link through a module output or variable", 2, linked("propertyDependencies", func(a, s string) bool {
		return a == "dead_letter_policy" && (strings.HasPrefix(s, "output") || s == "variable")
	})},
	{"possible link from a dynamic dead_letter_policy block", 10, linked("possibleDependencies", func(a, s string) bool {
		return a == "dead_letter_policy" && s == "dynamic"
	})},
	{"possible link through a local", 3, linked("possibleDependencies", is("local"))},
	{"possible link through a data source", 3, linked("possibleDependencies", is("data"))},
	{"possible link through each.value", 2, linked("possibleDependencies", is("each"))},
	{"possible link to what the plan does not hold", 10, linked("possibleDependencies", is("ghost"))},
	{"the expression named for a dynamic block", 10, func(m *modelOf, _ *trace) int {
		n := 0
		for _, e := range m.Expressions {
			if strings.HasPrefix(e.(string), `dynamic "dead_letter_policy" block`) {
				n++
			}
		}
		return n
	}},
	{"the expression named for written references", 10, func(m *modelOf, _ *trace) int {
		n := 0
		for _, e := range m.Expressions {
			if strings.HasPrefix(e.(string), "dead_letter_policy.dead_letter_topic = ") {
				n++
			}
		}
		return n
	}},
	{"a dead-letter policy unknown as a whole", 10, properties(func(typ string, p map[string]any) bool {
		return typ == subscription && p["deadLetterPolicy"] == unknownText
	})},
	{"a dead-letter topic unknown in a known block", 10, properties(func(typ string, p map[string]any) bool {
		return typ == subscription && at(p, "deadLetterPolicy", "deadLetterTopic") == unknownText
	})},
	{"an empty dead-letter block (null)", 20, properties(func(typ string, p map[string]any) bool {
		v, ok := p["deadLetterPolicy"]
		return typ == subscription && ok && v == nil
	})},
	{"a dynamic dead_letter_policy block planned empty", 10, planned("dynamic/empty")},
	{"a dynamic dead_letter_policy block planned unknown", 10, planned("dynamic/unknown-block")},
	{"a dynamic dead_letter_policy block planned with an unknown topic", 10, planned("dynamic/unknown-topic")},
	{"a dynamic dead_letter_policy block planned known", 10, planned("dynamic/known")},
	{"a literal dead_letter_policy block planned empty (inconsistent)", 1, planned("literal/empty")},
	{"a sensitive value", 10, properties(func(_ string, p map[string]any) bool { return contains(p, `"`+secretText+`"`) })},
	{"an env list renamed envs, below template.containers", 3, properties(func(_ string, p map[string]any) bool {
		c, _ := at(p, "template", "containers", 0).(map[string]any)
		_, ok := c["envs"]
		return ok
	})},
	{"a value cut at the model's depth (conditions...aggregations.groupByFields)", 3, properties(func(_ string, p map[string]any) bool {
		return at(p, "conditions", 0, "conditionThreshold", "aggregations", 0, "groupByFields") == unknownText
	})},
	{"a made-up attribute nested deeper than the model reads", 3, properties(func(_ string, p map[string]any) bool {
		_, ok := p["xNested"]
		return ok
	})},
	{"attribute names camelCase gets wrong easily (a__b, _lead, UPPER_case)", 3, properties(func(_ string, p map[string]any) bool {
		return contains(p, `"a_B"`) || contains(p, `"Lead"`) || contains(p, `"UPPERCase"`)
	})},
	{"a label name kept as it is", 10, properties(func(_ string, p map[string]any) bool { return contains(p["labels"], `"eventpipe_role"`) })},
	{"a type the model does not know (no properties)", 10, properties(func(typ string, p map[string]any) bool {
		return (typ == "random_id" || typ == "google_storage_bucket") && len(p) == 0
	})},
	{"a resource three modules down", 10, func(m *modelOf, _ *trace) int {
		n := 0
		for _, r := range resources(m) {
			if strings.Count(r["urn"].(string), "module.") >= 3 {
				n++
			}
		}
		return n
	}},
	{"a deletion and a replacement", 10, func(m *modelOf, _ *trace) int {
		rs, _ := m.Model["removals"].([]any)
		actions := map[any]bool{}
		for _, r := range rs {
			actions[r.(map[string]any)["action"]] = true
		}
		if actions["delete"] && actions["replace"] {
			return 1
		}
		return 0
	}},
	{"problems with malformed changes", 5, func(m *modelOf, _ *trace) int {
		p, _ := m.Model["problems"].([]any)
		return min(len(p), 1)
	}},
	{"project numbers", 20, func(m *modelOf, _ *trace) int {
		p, _ := m.Model["project_numbers"].(map[string]any)
		return min(len(p), 1)
	}},
	{"two numbers for one project, which the model trusts neither of", 5, func(m *modelOf, tr *trace) int {
		p, _ := m.Model["project_numbers"].(map[string]any)
		n := 0
		for _, id := range tr.doubleRead {
			if _, ok := p[id]; !ok {
				n++
			}
		}
		return n
	}},
	{"a change without after_unknown or after_sensitive", 1, feature("missing-marks")},
	{"an incomplete plan (errored or complete false)", 10, func(m *modelOf, _ *trace) int {
		if m.Model["complete"] == false {
			return 1
		}
		return 0
	}},
	{"a deposed object", 5, feature("deposed")},
	{"modules nine deep", 1, feature("deep-module")},
	{"a module call passed its own output (a cycle)", 2, feature("cycle")},
	{"a plan without resources", 5, func(m *modelOf, _ *trace) int {
		if len(resources(m)) == 0 {
			return 1
		}
		return 0
	}},
	{"a plan with 25 resources or more", 10, func(m *modelOf, _ *trace) int {
		if len(resources(m)) >= 25 {
			return 1
		}
		return 0
	}},
}

// FuzzRegoModelAcceptsPlan: on the plan of any seed every rule of the Rego model, those
// the rules never read included, evaluates without error (go test
// -fuzz=FuzzRegoModelAcceptsPlan hunts for a plan it fails on).
func FuzzRegoModelAcceptsPlan(f *testing.F) {
	for _, seed := range []uint64{0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 1 << 40, ^uint64(0)} {
		f.Add(seed)
	}
	q := regoquery.Prepare(f, wholeModelQuery)
	f.Fuzz(func(t *testing.T, seed uint64) {
		if _, err := evalModel(context.Background(), q, Plan(seed)); err != nil {
			t.Fatalf("seed %d: the Rego model fails: %v", seed, err)
		}
	})
}

// TestNoTwoAttributesShareAModelName: no object of a planned value (with the names its
// after_unknown marks) holds two names the model converts to one (a__b and a_B, env and
// envs): no provider schema has such names, and the Rego model fails on them with a
// conflict, so the generator keeps them out.
func TestNoTwoAttributesShareAModelName(t *testing.T) {
	var check func(seed uint64, path string, v, u any)
	check = func(seed uint64, path string, v, u any) {
		switch x := v.(type) {
		case map[string]any:
			um, _ := u.(map[string]any)
			names := map[string]string{}
			for _, keys := range []map[string]any{x, um} {
				for k := range keys {
					if other, ok := names[modelName(k)]; ok && other != k {
						t.Fatalf("seed %d: %s holds %q and %q", seed, path, k, other)
					}
					names[modelName(k)] = k
				}
			}
			for k, e := range x {
				check(seed, path+"."+k, e, um[k])
			}
		case []any:
			ul, _ := u.([]any)
			for i, e := range x {
				var ue any
				if i < len(ul) {
					ue = ul[i]
				}
				check(seed, fmt.Sprintf("%s[%d]", path, i), e, ue)
			}
		}
	}
	for seed := range uint64(seeds) {
		changes, _ := Plan(seed)["resource_changes"].([]any)
		for _, c := range changes {
			change, _ := c.(map[string]any)["change"].(map[string]any)
			check(seed, "after", change["after"], change["after_unknown"])
			check(seed, "before", change["before"], nil)
		}
	}
}

// BenchmarkPlan measures generating and decoding one plan.
func BenchmarkPlan(b *testing.B) {
	var seed uint64
	for b.Loop() {
		Plan(seed)
		seed++
	}
}
