package tffixtures

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDLQCasesAreCurrent: the committed dlq-* cases and modules are what DLQCaseFiles
// generates (go run ./internal/testing/tffixtures/cmd/dlq-cases rewrites them).
func TestDLQCasesAreCurrent(t *testing.T) {
	files, err := DLQCaseFiles()
	if err != nil {
		t.Fatal(err)
	}
	if want := len(DLQPlacements)*2 + 3; len(files) != want {
		t.Fatalf("%d files, want %d", len(files), want)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(fixtures, filepath.FromSlash(name)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not what DLQCaseFiles generates (%v): run go run ./internal/testing/tffixtures/cmd/dlq-cases", name, err)
		}
	}
}

// TestShapeCasesAreCurrent: the committed shape-* cases and modules are what
// ShapeCaseFiles generates (go run ./internal/testing/tffixtures/cmd/dlq-cases rewrites
// them), and every address of their ground truth is a planned resource of their plans.
func TestShapeCasesAreCurrent(t *testing.T) {
	files, err := ShapeCaseFiles()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(fixtures, filepath.FromSlash(name)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not what ShapeCaseFiles generates (%v): run go run ./internal/testing/tffixtures/cmd/dlq-cases", name, err)
		}
	}
	for _, c := range Shapes() {
		for _, cli := range CLIs {
			planned := map[string]bool{}
			for _, a := range addresses(t, filepath.Join(fixtures, c.Case, cli+PlanSuffix)) {
				planned[a] = true
			}
			for _, p := range c.Pipelines {
				for _, a := range append([]string{p.Subscription, p.DeadLetterTopic}, p.DLQSubscriptions...) {
					if !planned[a] {
						t.Errorf("%s/%s: %s is not in the plan", c.Case, cli, a)
					}
				}
			}
		}
	}
}

// plannedSubscription is what a plan shows of a subscription's dead-letter policy.
type plannedSubscription struct {
	Address string `json:"address"`
	Type    string `json:"type"`
	Change  struct {
		After struct {
			DeadLetterPolicy []json.RawMessage `json:"dead_letter_policy"`
			Labels           map[string]string `json:"labels"`
		} `json:"after"`
		AfterUnknown map[string]json.RawMessage `json:"after_unknown"`
	} `json:"change"`
}

// TestDLQCaseVerdictsFollowThePlans: in every case that judges EP001 on every
// subscription through a judged list (the dlq-* cases), EP001 is expected exactly on the
// subscriptions whose plan shows dead_letter_policy = [] (known) and that carry no
// eventpipe_role=dlq label: the verdicts follow from the plans' own values, on every CLI,
// and every block shape and source of DLQBlocks x DLQSources is planned at every
// placement.
func TestDLQCaseVerdictsFollowThePlans(t *testing.T) {
	judging := 0
	for _, c := range loadCases(t) {
		// The shape-* cases exempt dead-letter subscriptions by the link the plan shows,
		// not by a label: TestModuleShapeVerdictInvariant (policies/evaluate) holds their verdicts.
		if !strings.HasPrefix(c.Name, "dlq-") || !slices.Equal(c.Expected.JudgedRules, []string{"EP001"}) {
			continue
		}
		judging++
		want := map[string]bool{}
		for _, f := range c.Expected.Findings {
			want[f.Address] = true
		}
		for _, cli := range c.Expected.CLIs {
			data, err := os.ReadFile(c.Plan(cli))
			if err != nil {
				t.Fatal(err)
			}
			var plan struct {
				ResourceChanges []plannedSubscription `json:"resource_changes"`
			}
			if err := json.Unmarshal(data, &plan); err != nil {
				t.Fatalf("%s: %v", c.Plan(cli), err)
			}
			denied := map[string]bool{}
			subscriptions := map[string]bool{}
			for _, rc := range plan.ResourceChanges {
				if rc.Type != "google_pubsub_subscription" {
					continue
				}
				subscriptions[rc.Address] = true
				after := rc.Change.After
				unknown := string(rc.Change.AfterUnknown["dead_letter_policy"]) == "true"
				if after.DeadLetterPolicy != nil && len(after.DeadLetterPolicy) == 0 && !unknown && after.Labels["eventpipe_role"] != "dlq" {
					denied[rc.Address] = true
				}
			}
			for a := range denied {
				if !want[a] {
					t.Errorf("%s/%s: %s shows no dead-letter policy, but EP001 is not expected on it", c.Name, cli, a)
				}
			}
			for a := range want {
				if !denied[a] {
					t.Errorf("%s/%s: EP001 is expected on %s, but its plan shows a dead-letter policy, or none is known", c.Name, cli, a)
				}
			}
			if strings.HasPrefix(c.Name, "dlq-") {
				for _, p := range DLQPlacements {
					if p.Case != c.Name {
						continue
					}
					for _, mi := range p.Instances {
						for _, b := range DLQBlocks {
							for _, s := range DLQSources {
								a := strings.TrimPrefix(mi+".google_pubsub_subscription."+DLQSubscription(b, s), ".")
								if !subscriptions[a] {
									t.Errorf("%s/%s: %s is not planned", c.Name, cli, a)
								}
							}
						}
					}
				}
			}
		}
	}
	if judging < len(DLQPlacements) {
		t.Fatalf("%d cases judge EP001 alone, want at least the %d dlq-* placements", judging, len(DLQPlacements))
	}
}
