package evaluate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/tffixtures"
	"github.com/eventpipe/eventpipe/policies/plan"
)

// TestTerraformFixtureVerdicts holds the engine to the verdicts of every plan the real
// terraform and tofu CLIs made of the Terraform fixtures (policies/testdata/terraform):
// each judged (rule, address) pair is reported exactly when the case lists it (at the
// level it gives, if any), and a case whose plans are unusable is refused saying why. The
// parity of conftest and opa with these verdicts is cmd/eventpipe's TestTerraformFixtures.
func TestTerraformFixtureVerdicts(t *testing.T) {
	cases, err := tffixtures.Load(filepath.Join("..", "testdata", "terraform"))
	if err != nil {
		t.Fatal(err)
	}
	e := allRules(t, nil)
	for _, c := range cases {
		for _, cli := range c.Expected.CLIs {
			t.Run(c.Name+"/"+cli, func(t *testing.T) {
				data, err := os.ReadFile(c.Plan(cli))
				if err != nil {
					t.Fatal(err)
				}
				if c.Expected.Problem != "" {
					p, err := plan.Parse(data, "plan.json")
					if err != nil {
						t.Fatal(err)
					}
					_, err = e.Check(context.Background(), p)
					if !errors.Is(err, ErrUnusableDocument) || !strings.Contains(err.Error(), c.Expected.Problem) {
						t.Fatalf("%v, want the document refused: %s", err, c.Expected.Problem)
					}
					return
				}
				got := map[tffixtures.Verdict]Finding{}
				for _, f := range check(t, e, data).Findings {
					if c.Expected.Judged(f.Rule.ID, f.URN) {
						got[tffixtures.Verdict{Rule: f.Rule.ID, Address: f.URN}] = f
					}
				}
				for _, want := range c.Expected.Findings {
					key := tffixtures.Verdict{Rule: want.Rule, Address: want.Address}
					f, ok := got[key]
					if !ok {
						t.Errorf("%s on %s not reported (%s)", want.Rule, want.Address, want.Why)
					} else if want.Level != "" && string(f.Level) != want.Level {
						t.Errorf("%s on %s is a %s, want a %s (%s): %s", want.Rule, want.Address, f.Level, want.Level, want.Why, f.Message)
					}
					delete(got, key)
				}
				for v, f := range got {
					t.Errorf("%s on %s reported; the case does not list it: %s", v.Rule, v.Address, f.Message)
				}
			})
		}
	}
}
