package evaluate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/tffixtures"
)

// TestTerraformFixtureVerdicts holds the engine to the verdicts of every plan the real
// terraform and tofu CLIs made of the Terraform fixtures (policies/testdata/terraform):
// each judged (rule, address) pair is reported exactly when the case lists it. The
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
				got := map[tffixtures.Verdict]string{}
				for _, f := range check(t, e, data).Findings {
					if c.Expected.Judged(f.Rule.ID, f.URN) {
						got[tffixtures.Verdict{Rule: f.Rule.ID, Address: f.URN}] = f.Message
					}
				}
				for _, want := range c.Expected.Findings {
					key := tffixtures.Verdict{Rule: want.Rule, Address: want.Address}
					if _, ok := got[key]; !ok {
						t.Errorf("%s on %s not reported (%s)", want.Rule, want.Address, want.Why)
					}
					delete(got, key)
				}
				for v, msg := range got {
					t.Errorf("%s on %s reported; the case does not list it: %s", v.Rule, v.Address, msg)
				}
			})
		}
	}
}
