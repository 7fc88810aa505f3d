package spec_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/eventpipe/eventpipe/internal/testing/ruletest"
	"github.com/eventpipe/eventpipe/policies/checkconfig"
	"github.com/eventpipe/eventpipe/policies/evaluate"
	"github.com/eventpipe/eventpipe/policies/plan"
	"github.com/eventpipe/eventpipe/render"
	"github.com/eventpipe/eventpipe/spec"
)

// boundsStack is a production stack with one pipeline (orders) and one push subscription
// (main), which renders and passes every rule; each bounds case sets one setting on it.
func boundsStack() map[string]any {
	return map[string]any{
		"gcp:project":                    "acme-prod",
		"eventpipe:project":              "acme-prod",
		"eventpipe:projectNumber":        "123456789012",
		"eventpipe:env":                  "prod",
		"eventpipe:notificationChannels": []any{"projects/acme-prod/notificationChannels/1"},
		"eventpipe:alerts":               map[string]any{"team": "platform"},
		"eventpipe:pipelines": map[string]any{
			"orders": map[string]any{
				"consumer":      map[string]any{"image": "europe-west1-docker.pkg.dev/acme-prod/eventpipe/consumer:1.0.0"},
				"subscriptions": map[string]any{"main": map[string]any{"delivery": "push"}},
			},
		},
	}
}

// setBound writes v at a Bounds path of a boundsStack config (* is orders, then main).
func setBound(config map[string]any, path string, v any) {
	key, rest, _ := strings.Cut(path, ".")
	rest = strings.Replace(strings.Replace(rest, "*", "orders", 1), "*", "main", 1)
	set(config, spec.Namespace+":"+key, rest, v)
}

// companions are the settings a value of b needs beside it to be valid on its own: a
// range that must hold it, a setting that must equal it.
func companions(b spec.Bound, v int64) map[string]int64 {
	switch b.Path {
	case "defaults.maxBackoff", "pipelines.*.subscriptions.*.maxBackoff":
		return map[string]int64{strings.Replace(b.Path, "max", "min", 1): 0}
	case "defaults.minInstances":
		return map[string]int64{"defaults.maxInstances": spec.MaxMaxInstances}
	case "pipelines.*.consumer.minInstances":
		return map[string]int64{"pipelines.*.consumer.maxInstances": spec.MaxMaxInstances}
	case "pipelines.*.subscriptions.*.ackDeadline": // a push subscription's equals the request timeout
		return map[string]int64{"pipelines.*.consumer.requestTimeout": v}
	}
	return nil
}

// configValue is v as the stack config writes b's setting.
func configValue(b spec.Bound, v int64) any {
	if b.Kind == spec.Span {
		return spec.FormatDuration(time.Duration(v))
	}
	return v
}

// planValue is v as a plan's resource input holds b's Field: a number, or "600s".
func planValue(b spec.Bound, v int64) any {
	if b.Kind == spec.Span {
		return fmt.Sprintf("%ds", v/int64(time.Second))
	}
	return float64(v)
}

// renderWith renders boundsStack with b at v (and its companions).
func renderWith(t *testing.T, b spec.Bound, v int64) (*render.Result, error) {
	t.Helper()
	config := boundsStack()
	setBound(config, b.Path, configValue(b, v))
	for path, cv := range companions(b, v) {
		setBound(config, path, configValue(spec.BoundAt(path), cv))
	}
	data, err := yaml.Marshal(map[string]any{"config": config})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "Pulumi.prod.yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return render.Render(context.Background(), render.Options{Stack: "prod", ConfigFile: file})
}

// TestEveryBoundHoldsInConfigAndCheck walks every bounded setting of spec.Bounds, at each
// end of its range: the stack with the setting at the bound renders and `eventpipe check`
// (its rules, default settings, environment prod) finds nothing; one step past the bound
// (1, or a second) is refused by validation, naming the setting and the range, and, for a
// setting a rule judges, by that rule on the rendered plan with the value moved past the
// bound, naming the plan's field and the same bound.
func TestEveryBoundHoldsInConfigAndCheck(t *testing.T) {
	eng := ruletest.Engine(t, (*checkconfig.Config)(nil).Data("prod"))
	check := func(t *testing.T, doc any) []evaluate.Finding { return checkDocument(t, eng, doc) }
	checked := 0
	for _, b := range spec.Bounds() {
		for _, end := range []struct {
			name     string
			at, past int64
			upper    bool
		}{{name: "min", at: b.Min, past: b.Min - step(b)}, {name: "max", at: b.Max, past: b.Max + step(b), upper: true}} {
			t.Run(b.Path+"/"+end.name, func(t *testing.T) {
				res, err := renderWith(t, b, end.at)
				if err != nil {
					t.Fatalf("%s = %s does not render: %v", b.Path, b.Format(end.at), err)
				}
				doc := planDocument(t, res)
				if fs := check(t, doc); len(fs) != 0 {
					t.Fatalf("%s = %s renders, but the check finds %v", b.Path, b.Format(end.at), messages(fs))
				}

				_, err = renderWith(t, b, end.past)
				var errs spec.Errors
				if !errors.As(err, &errs) {
					t.Fatalf("%s = %s renders (err %v), want a validation error", b.Path, b.Format(end.past), err)
				}
				var refusal string
				for _, e := range errs {
					if strings.HasSuffix(e.Path, "."+b.Key()) && strings.Contains(e.Error(), b.Allowed()) {
						refusal = e.Error()
					}
				}
				if refusal == "" {
					t.Fatalf("%s = %s: no error naming %s and %s: %v", b.Path, b.Format(end.past), b.Key(), b.Allowed(), err)
				}

				for _, c := range b.Checks {
					if c.Upper != end.upper {
						continue
					}
					checked++
					moved := movePast(t, doc, b, end.at, end.past)
					field := b.Field[strings.LastIndex(b.Field, ".")+1:]
					var found bool
					for _, f := range check(t, doc) {
						if f.Rule.Name == c.Rule && strings.Contains(f.Message, field) && strings.Contains(f.Message, b.Format(end.at)) {
							found = true
						}
					}
					if !found {
						t.Errorf("%s moved past %s on %d resources: no %s finding naming %s and %s (validation says %q)",
							b.Field, b.Format(end.at), moved, c.Rule, field, b.Format(end.at), refusal)
					}
				}
			})
		}
	}
	if checked == 0 {
		t.Fatal("no bound has a check")
	}
}

// checkDocument is the findings of eng, the check's rules, on the plan document doc.
func checkDocument(t *testing.T, eng *evaluate.Engine, doc any) []evaluate.Finding {
	t.Helper()
	p, err := plan.FromDocument(doc, "plan.json")
	if err != nil {
		t.Fatal(err)
	}
	fs, err := eng.Evaluate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// step is one unit past a bound: 1, or a second.
func step(b spec.Bound) int64 {
	if b.Kind == spec.Span {
		return int64(time.Second)
	}
	return 1
}

// planDocument is the rendered plan as the check's input document.
func planDocument(t *testing.T, res *render.Result) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(res.JSON, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// movePast sets b.Field from at to past on every step of doc holding at; it fails the test
// when none does (the plan does not carry the value as expected).
func movePast(t *testing.T, doc map[string]any, b spec.Bound, at, past int64) int {
	t.Helper()
	n := 0
	steps, _ := doc["steps"].([]any)
	for _, s := range steps {
		state, _ := s.(map[string]any)["newState"].(map[string]any)
		inputs, _ := state["inputs"].(map[string]any)
		parts := strings.Split(b.Field, ".")
		m := inputs
		for _, p := range parts[:len(parts)-1] {
			m, _ = m[p].(map[string]any)
		}
		key := parts[len(parts)-1]
		if m != nil && fmt.Sprint(m[key]) == fmt.Sprint(planValue(b, at)) {
			m[key] = planValue(b, past)
			n++
		}
	}
	if n == 0 {
		t.Fatalf("no resource input %s = %v in the plan", b.Field, planValue(b, at))
	}
	return n
}

func messages(fs []evaluate.Finding) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Rule.ID + ": " + f.Message
	}
	return out
}

// TestAttemptsTwentyPassesTheCheck is the case that broke: maxDeliveryAttempts 20 validated
// and rendered (the config accepts 5–100), and the check denied it (its range was 5–10).
func TestAttemptsTwentyPassesTheCheck(t *testing.T) {
	res, err := renderWith(t, spec.BoundAt("pipelines.*.subscriptions.*.maxDeliveryAttempts"), 20)
	if err != nil {
		t.Fatal(err)
	}
	eng := ruletest.Engine(t, (*checkconfig.Config)(nil).Data("prod"))
	p, err := plan.Parse(res.JSON, "plan.json")
	if err != nil {
		t.Fatal(err)
	}
	fs, err := eng.Evaluate(context.Background(), p)
	if err != nil || len(fs) != 0 {
		t.Fatalf("check: %v %v", messages(fs), err)
	}
}
