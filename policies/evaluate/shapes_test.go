package evaluate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/tffixtures"
)

// TestModuleShapeVerdictInvariant holds EP001 to its invariant on every module shape
// teams write (tffixtures.Shapes: count, for_each over a set and over a map of objects
// with optional() attributes, a dynamic block, modules three deep, outputs passed between
// modules, cross-project dead-letter topics), on the plans the real terraform and tofu CLIs
// made of them:
//
//   - the compliant plan has no EP001 deny, and an EP001 warning exactly on each DLQ
//     subscription whose link the plan cannot show (naming the expression);
//   - for every subscription S with a dead-letter policy, removing it gives exactly one
//     EP001 deny, on S, when the pipeline's DLQ subscriptions are switched off with it;
//     left in place, each of them is denied too (nothing then shows it is a DLQ
//     subscription), and nothing else is.
//
// The removals are derived from the CLIs' plans, not planned again: a per-instance
// removal is what a real plan shows for one instance of a for_each or count resource
// whose dead_letter_policy is dynamic (the block planned as an empty list), but the CLI
// can only plan that by changing the configuration for the whole resource, and every
// instance of every shape is covered here. The derived plan differs from the CLI's only
// in that instance's dead_letter_policy (after, after_unknown, after_sensitive: an empty
// list, as the CLI plans an absent block) and, switched off, in the absent DLQ
// subscriptions' changes.
func TestModuleShapeVerdictInvariant(t *testing.T) {
	e := allRules(t, nil)
	root := filepath.Join("..", "testdata", "terraform")
	for _, c := range tffixtures.Shapes() {
		for _, cli := range tffixtures.CLIs {
			t.Run(c.Case+"/"+cli, func(t *testing.T) {
				data, err := os.ReadFile(filepath.Join(root, c.Case, cli+tffixtures.PlanSuffix))
				if err != nil {
					t.Fatal(err)
				}
				var undecided []string
				for _, p := range c.Pipelines {
					if p.Undecided {
						undecided = append(undecided, p.DLQSubscriptions...)
					}
				}
				denies, warnings := ep001(t, e, data)
				if len(denies) != 0 {
					t.Errorf("compliant plan: EP001 denies on %v", denies)
				}
				if !slices.Equal(warnings, sorted(undecided)) {
					t.Errorf("compliant plan: EP001 warnings on %v, want on %v", warnings, sorted(undecided))
				}
				if len(c.Pipelines) < 2 {
					t.Fatalf("%d pipelines: a removal must leave others beside it", len(c.Pipelines))
				}
				for _, p := range c.Pipelines {
					off := removePolicy(t, data, p.Subscription, p.DLQSubscriptions)
					if denies, _ := ep001(t, e, off); !slices.Equal(denies, []string{p.Subscription}) {
						t.Errorf("%s switched off: EP001 denies on %v, want exactly on it", p.Subscription, denies)
					}
					kept := removePolicy(t, data, p.Subscription, nil)
					want := sorted(append([]string{p.Subscription}, p.DLQSubscriptions...))
					if denies, _ := ep001(t, e, kept); !slices.Equal(denies, want) {
						t.Errorf("%s's policy removed: EP001 denies on %v, want on %v", p.Subscription, denies, want)
					}
				}
			})
		}
	}
}

// ep001 checks a plan and returns the addresses of its EP001 denies and warnings, sorted.
func ep001(t *testing.T, e *Engine, data []byte) (denies, warnings []string) {
	t.Helper()
	for _, f := range check(t, e, data).Findings {
		if f.Rule.ID != "EP001" {
			continue
		}
		if f.Level == Deny {
			denies = append(denies, f.URN)
		} else {
			warnings = append(warnings, f.URN)
		}
	}
	return sorted(denies), sorted(warnings)
}

func sorted(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}

// removePolicy is the plan with subscription's dead_letter_policy planned absent, as a
// CLI plans a dynamic block over an empty list, and the changes of drop left out.
func removePolicy(t *testing.T, data []byte, subscription string, drop []string) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var changes []any
	found := false
	for _, v := range doc["resource_changes"].([]any) {
		rc := v.(map[string]any)
		address := rc["address"].(string)
		if slices.Contains(drop, address) {
			continue
		}
		if address == subscription {
			change := rc["change"].(map[string]any)
			for _, key := range []string{"after", "after_unknown", "after_sensitive"} {
				if m, ok := change[key].(map[string]any); ok {
					m["dead_letter_policy"] = []any{}
				}
			}
			found = true
		}
		changes = append(changes, rc)
	}
	if !found {
		t.Fatalf("no change of %s in the plan", subscription)
	}
	doc["resource_changes"] = changes
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
