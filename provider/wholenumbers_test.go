package provider_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/spec"
)

// integerInputs are the paths of every input the schema types integer below component
// typ's inputs, found by walking schema.json (objects by $ref, maps with the key "main";
// lists are left out).
func integerInputs(t *testing.T, typ string) []string {
	t.Helper()
	raw, err := os.ReadFile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	type prop struct {
		Type                 string `json:"type"`
		Ref                  string `json:"$ref"`
		AdditionalProperties *prop  `json:"additionalProperties"`
	}
	var pkg struct {
		Resources map[string]struct {
			InputProperties map[string]prop `json:"inputProperties"`
		} `json:"resources"`
		Types map[string]struct {
			Properties map[string]prop `json:"properties"`
		} `json:"types"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(path string, p prop)
	walk = func(path string, p prop) {
		switch {
		case p.Ref != "":
			for k, sub := range pkg.Types[strings.TrimPrefix(p.Ref, "#/types/")].Properties {
				walk(path+"."+k, sub)
			}
		case p.Type == "object" && p.AdditionalProperties != nil:
			walk(path+".main", *p.AdditionalProperties)
		case p.Type == "integer":
			out = append(out, strings.TrimPrefix(path, "."))
		}
	}
	for k, p := range pkg.Resources[typ].InputProperties {
		walk("."+k, p)
	}
	slices.Sort(out)
	return out
}

// setInput sets v at the dotted path of inputs, making the maps on the way.
func setInput(inputs map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	m := inputs
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
}

func pipelineInputs() map[string]any {
	return map[string]any{
		"project": "acme-dev", "projectNumber": "123456789012",
		"consumer":      map[string]any{"image": image},
		"subscriptions": map[string]any{"main": map[string]any{"delivery": "push"}},
	}
}

// TestConstructRefusesNumbersNoIntHolds: every input the schema types integer, given a
// number with a fraction or one beyond an int, is refused by Construct naming its path and
// the value as sent, where the Pulumi SDK used to cut it to an int silently (5.5 delivery
// attempts became 5); nothing is declared.
func TestConstructRefusesNumbersNoIntHolds(t *testing.T) {
	paths := integerInputs(t, components.TypePipeline)
	if !slices.Contains(paths, "subscriptions.main.maxDeliveryAttempts") || !slices.Contains(paths, "consumer.concurrency") {
		t.Fatalf("the schema walk missed the counts: %v", paths)
	}
	type input struct{ typ, path string }
	var inputs []input
	for _, path := range paths {
		inputs = append(inputs, input{components.TypePipeline, path})
	}
	// The other components are refused before their arguments are read at all, so an
	// integer input alone is enough.
	for _, typ := range []string{components.TypeTopic, components.TypeSubscription, components.TypeConsumer, components.TypeFirestoreTTL} {
		for _, path := range integerInputs(t, typ) {
			inputs = append(inputs, input{typ, path})
		}
	}
	for _, in := range inputs {
		path := in.path
		for _, n := range []float64{2.5, -0.5, 1e20} {
			t.Run(fmt.Sprintf("%s/%s=%g", in.typ, path, n), func(t *testing.T) {
				inputs := map[string]any{}
				if in.typ == components.TypePipeline {
					inputs = pipelineInputs()
				}
				setInput(inputs, path, n)
				_, regs, err := construct(t, in.typ, "orders", inputs)
				want := fmt.Sprintf("%s = %s: allowed a whole number", path, strconv.FormatFloat(n, 'g', -1, 64))
				if n == 1e20 {
					want = fmt.Sprintf("%s = %s: allowed ", path, strconv.FormatFloat(n, 'g', -1, 64))
				}
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("Construct with %s = %g: %v, want a refusal containing %q", path, n, err, want)
				}
				if len(regs) != 0 {
					t.Errorf("Construct declared %d resources with a refused input", len(regs))
				}
			})
		}
	}
}

// TestConstructAgreesWithStackFileOnCounts: for every bounded count a Pipeline takes
// (spec.Bounds) and values at, half a step and a step either side of each end, Construct
// accepts exactly what a stack file accepts (spec.CountError is nil), and refuses the rest
// naming the input and the range in the words of spec.Bound.Allowed. The case that broke:
// maxDeliveryAttempts 100.9 was constructed as 100.
func TestConstructAgreesWithStackFileOnCounts(t *testing.T) {
	checked := 0
	for _, b := range spec.Bounds() {
		rest, ok := strings.CutPrefix(b.Path, "pipelines.*.")
		if !ok || b.Kind != spec.Count {
			continue
		}
		path := strings.Replace(rest, "*", "main", 1)
		for _, n := range []float64{float64(b.Min) - 1, float64(b.Min) - 0.5, float64(b.Min), float64(b.Min) + 0.5, float64(b.Max) - 0.5, float64(b.Max), float64(b.Max) + 0.5, float64(b.Max) + 1} {
			t.Run(fmt.Sprintf("%s=%g", path, n), func(t *testing.T) {
				checked++
				in := pipelineInputs()
				setInput(in, path, n)
				if b.Key() == "minInstances" {
					setInput(in, "consumer.maxInstances", spec.MaxMaxInstances)
				}
				_, _, err := construct(t, components.TypePipeline, "orders", in)
				if accept := spec.CountError(b, n) == nil; accept != (err == nil) {
					t.Fatalf("Construct with %s = %g: %v; a stack file accepts it: %v", path, n, err, accept)
				}
				if err != nil && (!strings.Contains(err.Error(), path+" = ") || !strings.Contains(err.Error(), b.Allowed())) {
					t.Errorf("refusal %q does not name %s and %s", err, path, b.Allowed())
				}
			})
		}
	}
	if checked == 0 {
		t.Fatal("no bounded count below pipelines.*")
	}
}

// TestConstructAgreesWithStackFileOnDurations: for every bounded duration a Pipeline takes,
// at each end, a second past it and half a second inside it, Construct accepts exactly what
// a stack file accepts (whole seconds in the range), so a program in another language cannot
// get 10.5s cut to 10s either; a refusal names the input and the range.
func TestConstructAgreesWithStackFileOnDurations(t *testing.T) {
	checked := 0
	for _, b := range spec.Bounds() {
		rest, ok := strings.CutPrefix(b.Path, "pipelines.*.")
		if !ok || b.Kind != spec.Span {
			continue
		}
		path := strings.Replace(rest, "*", "main", 1)
		sec, half := int64(time.Second), int64(time.Second/2)
		for _, n := range []int64{b.Min - sec, b.Min, b.Min + half, b.Max - half, b.Max, b.Max + sec} {
			if n < 0 {
				continue
			}
			text := spec.FormatDuration(time.Duration(n))
			t.Run(path+"="+text, func(t *testing.T) {
				checked++
				in := pipelineInputs()
				setInput(in, path, text)
				switch b.Key() {
				case "ackDeadline": // a push subscription's equals the request timeout
					setInput(in, "consumer.requestTimeout", text)
				case "maxBackoff":
					setInput(in, "subscriptions.main.minBackoff", "0s")
				}
				_, _, err := construct(t, components.TypePipeline, "orders", in)
				if accept := n%sec == 0 && n >= b.Min && n <= b.Max; accept != (err == nil) {
					t.Fatalf("Construct with %s = %s: %v; a stack file accepts it: %v", path, text, err, accept)
				}
				if err != nil && (!strings.Contains(err.Error(), path+" = ") || !strings.Contains(err.Error(), b.Allowed())) {
					t.Errorf("refusal %q does not name %s and %s", err, path, b.Allowed())
				}
			})
		}
	}
	if checked == 0 {
		t.Fatal("no bounded duration below pipelines.*")
	}
}
