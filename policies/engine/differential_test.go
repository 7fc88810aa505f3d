package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/policies"
	"github.com/eventpipe/eventpipe/policies/internal/benchgen"
	"github.com/eventpipe/eventpipe/policies/plan"
	"github.com/eventpipe/eventpipe/policies/plantest"
	"github.com/eventpipe/eventpipe/render"
)

// The differential tests hold the IR interpreter to OPA's reference evaluator: on every
// plan below, both evaluators must give identical findings (rule, level, message,
// resource), with every rule file and with several configurations.

// evaluatorPair is one engine per evaluator over the same rules and configuration.
type evaluatorPair struct {
	ir, topdown *Engine
}

func newPair(t testing.TB, cfg map[string]any) evaluatorPair {
	t.Helper()
	mods, err := policies.Modules()
	if err != nil {
		t.Fatal(err)
	}
	var pair evaluatorPair
	for _, ev := range []struct {
		e   **Engine
		sel Evaluator
	}{{&pair.ir, EvaluatorIR}, {&pair.topdown, EvaluatorTopdown}} {
		if *ev.e, err = New(context.Background(), Options{Modules: mods, Package: policies.Package, Config: cfg, Evaluator: ev.sel}); err != nil {
			t.Fatal(err)
		}
	}
	return pair
}

// configs are the configurations every plan is checked with: none, prod thresholds,
// and tightened thresholds in dev.
var configs = []map[string]any{
	nil,
	{"environment": "prod"},
	{
		"environment":                               "dev",
		"deny_dead_letter_attempts_out_of_range":    map[string]any{"min": 7, "max": 8},
		"deny_retry_policy":                         map[string]any{"minimumBackoffSeconds": 30},
		"deny_subscription_expires":                 map[string]any{"enforce": true},
		"stack_warn_dlq_retention_short":            map[string]any{"minimumDays": 10},
		"stack_deny_subscription_without_dlq_alert": map[string]any{"environments": []any{"dev"}},
	},
}

// same evaluates p with both engines and fails on any difference; it returns how many
// findings they agreed on.
func (pair evaluatorPair) same(t *testing.T, what string, p *plan.Plan) int {
	t.Helper()
	ctx := context.Background()
	got, err := pair.ir.Evaluate(ctx, p)
	if err != nil {
		t.Fatalf("%s: IR evaluator: %v", what, err)
	}
	want, err := pair.topdown.Evaluate(ctx, p)
	if err != nil {
		t.Fatalf("%s: topdown evaluator: %v", what, err)
	}
	if !reflect.DeepEqual(got, want) {
		for i := 0; i < max(len(got), len(want)); i++ {
			var g, w string
			if i < len(got) {
				g = fmt.Sprintf("%s %s %s: %s", got[i].Level, got[i].Rule.ID, got[i].URN, got[i].Message)
			}
			if i < len(want) {
				w = fmt.Sprintf("%s %s %s: %s", want[i].Level, want[i].Rule.ID, want[i].URN, want[i].Message)
			}
			if g != w {
				t.Logf("finding %d: IR %q, topdown %q", i, g, w)
			}
		}
		t.Fatalf("%s: the evaluators differ (%d findings from IR, %d from topdown)", what, len(got), len(want))
	}
	return len(got)
}

func parsePlan(t testing.TB, data []byte, name string) *plan.Plan {
	t.Helper()
	p, err := plan.Parse(data, name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return p
}

func TestEvaluatorsAgreeOnStacksAndFixtures(t *testing.T) {
	stacks, err := filepath.Glob(filepath.Join("..", "..", "stacks", "Pulumi.*.yaml"))
	if err != nil || len(stacks) == 0 {
		t.Fatalf("no stack config files found: %v", err)
	}
	fixtures, err := filepath.Glob(filepath.Join("..", "plan", "testdata", "*.json.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var plans []*plan.Plan
	var names []string
	for _, file := range stacks {
		stack := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(file), "Pulumi."), ".yaml")
		res, err := render.Render(context.Background(), render.Options{Stack: stack, StackDir: filepath.Dir(file)})
		if err != nil {
			t.Fatalf("rendering stack %s: %v", stack, err)
		}
		plans = append(plans, parsePlan(t, res.JSON, "stack "+stack))
		names = append(names, "stack "+stack)
	}
	for _, file := range fixtures {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		p, err := plan.Parse(data, file)
		if err != nil {
			continue // the malformed and foreign fixtures
		}
		plans = append(plans, p)
		names = append(names, filepath.Base(file))
	}
	for _, want := range []string{"stack prod", "preview_show_sames.json.txt", "preview_changes_only.json.txt", "stack_export.json.txt", "terraform_plan.json.txt"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Fatalf("%s is missing from the compared plans %v", want, names)
		}
	}
	total := 0
	for ci, cfg := range configs {
		pair := newPair(t, cfg)
		for i, p := range plans {
			total += pair.same(t, fmt.Sprintf("%s, config %d", names[i], ci), p)
		}
	}
	if total == 0 {
		t.Fatal("no plan had any finding: the comparison proves nothing")
	}
}

func TestEvaluatorsAgreeOnMutations(t *testing.T) {
	pair := newPair(t, nil)
	for _, m := range mutations() {
		doc := plantest.Parse(t, fixture(t, "preview_show_sames.json.txt"))
		m.mutate(t, doc)
		if n := pair.same(t, m.name, parsePlan(t, doc.JSON(t), m.name)); n == 0 {
			t.Errorf("%s: no findings", m.name)
		}
	}
	// The real-format preview with unknowns and secrets.
	doc := plantest.Parse(t, fixture(t, "preview_show_sames.json.txt"))
	perturb(doc, rand.New(rand.NewPCG(1, 1)), 1)
	pair.same(t, "unknowns and secrets", parsePlan(t, doc.JSON(t), "unknowns"))
}

// TestEvaluatorsAgreeOnGeneratedPlans compares the evaluators on benchmark plans of
// several sizes, as generated and randomly perturbed (a seeded property test).
func TestEvaluatorsAgreeOnGeneratedPlans(t *testing.T) {
	pairs := []evaluatorPair{newPair(t, nil), newPair(t, configs[2])}
	for _, n := range []int{10, 200, 2000} {
		data, err := benchgen.Generate(n)
		if err != nil {
			t.Fatal(err)
		}
		p := parsePlan(t, data, "bench")
		for _, pair := range pairs {
			pair.same(t, fmt.Sprintf("generated %d", n), p)
		}
	}
	data, err := benchgen.Generate(300)
	if err != nil {
		t.Fatal(err)
	}
	seeds := 24
	if testing.Short() {
		seeds = 6
	}
	for seed := range uint64(seeds) {
		doc := plantest.Parse(t, data)
		r := rand.New(rand.NewPCG(seed, 7))
		perturb(doc, r, 0.02+0.2*r.Float64())
		p := parsePlan(t, doc.JSON(t), "perturbed")
		for _, pair := range pairs {
			pair.same(t, fmt.Sprintf("seed %d", seed), p)
		}
	}
}

const unknownValue = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

// perturb breaks a preview document at random, each resource with probability rate:
// dropped dead-letter policies, retry policies or resources (grants, DLQ subscriptions),
// unknown and secret values, duplicate names, self-dead-lettering, out-of-range
// attempts, http push endpoints, public invokers, opt-out labels.
func perturb(doc plantest.Doc, r *rand.Rand, rate float64) {
	steps, _ := doc["steps"].([]any)
	var names []string
	for _, s := range steps {
		if in := inputsOf(s); in != nil {
			if n, ok := in["name"].(string); ok {
				names = append(names, n)
			}
		}
	}
	var keep []any
	for _, s := range steps {
		if r.Float64() >= rate {
			keep = append(keep, s)
			continue
		}
		state, _ := s.(map[string]any)["newState"].(map[string]any)
		in := inputsOf(s)
		if state == nil || in == nil {
			keep = append(keep, s)
			continue
		}
		switch r.IntN(12) {
		case 0:
			continue // the resource is gone
		case 1:
			delete(in, "deadLetterPolicy")
		case 2:
			delete(in, "retryPolicy")
		case 3:
			for k := range in {
				if r.IntN(2) == 0 {
					in[k] = unknownValue
				}
			}
		case 4:
			for k := range in {
				if r.IntN(3) == 0 {
					in[k] = "[secret]"
				}
			}
		case 5:
			if len(names) > 0 {
				in["name"] = names[r.IntN(len(names))]
			}
		case 6:
			if pd, ok := state["propertyDependencies"].(map[string]any); ok && pd["topic"] != nil {
				pd["deadLetterPolicy"] = pd["topic"]
				if dl, ok := in["deadLetterPolicy"].(map[string]any); ok {
					dl["deadLetterTopic"] = in["topic"]
				}
			}
		case 7:
			if dl, ok := in["deadLetterPolicy"].(map[string]any); ok {
				dl["maxDeliveryAttempts"] = r.IntN(15)
			}
		case 8:
			if pc, ok := in["pushConfig"].(map[string]any); ok {
				pc["pushEndpoint"] = "http://insecure.example/push"
				if r.IntN(2) == 0 {
					delete(pc, "oidcToken")
				}
			}
		case 9:
			if _, ok := in["member"]; ok {
				in["member"] = []string{"allUsers", "allAuthenticatedUsers"}[r.IntN(2)]
			}
		case 10:
			if labels, ok := in["labels"].(map[string]any); ok {
				labels["eventpipe_dlq_opt_out"] = "true"
				labels["eventpipe_dlq_opt_out_reason"] = "replayable"
				delete(in, "deadLetterPolicy")
			}
		case 11:
			in["expirationPolicy"] = map[string]any{"ttl": fmt.Sprintf("%ds", 86400*(1+r.IntN(40)))}
			in["messageRetentionDuration"] = fmt.Sprintf("%ds", 3600*(1+r.IntN(300)))
		}
		keep = append(keep, s)
	}
	doc["steps"] = keep
}

func inputsOf(step any) map[string]any {
	s, _ := step.(map[string]any)
	state, _ := s["newState"].(map[string]any)
	in, _ := state["inputs"].(map[string]any)
	return in
}
