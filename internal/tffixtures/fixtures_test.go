package tffixtures

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/eventpipe/eventpipe/policies"
)

var (
	repo     = filepath.Join("..", "..")
	fixtures = filepath.Join(repo, "policies", "testdata", "terraform")
)

func loadCases(t *testing.T) []Case {
	t.Helper()
	cases, err := Load(fixtures)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatalf("no cases under %s", fixtures)
	}
	return cases
}

// ruleIDs are the ids of eventpipe's rules, from their METADATA.
func ruleIDs(t *testing.T) []string {
	t.Helper()
	modules, err := policies.Modules()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, src := range modules {
		for _, m := range regexp.MustCompile(`(?m)^#\s+id:\s+(EP\d+)\s*$`).FindAllStringSubmatch(src, -1) {
			ids = append(ids, m[1])
		}
	}
	return ids
}

// addresses are the resource_changes addresses of a plan file.
func addresses(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var plan struct {
		FormatVersion   string `json:"format_version"`
		ResourceChanges []struct {
			Address string `json:"address"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal(data, &plan); err != nil || plan.FormatVersion == "" {
		t.Fatalf("%s is no terraform show -json plan: %v", path, err)
	}
	var out []string
	for _, rc := range plan.ResourceChanges {
		out = append(out, rc.Address)
	}
	return out
}

// TestExpectedVerdictsNameRealRulesAndResources checks every case's verdicts against the
// rules and the case's plans, so a typo cannot make a verdict vacuous.
func TestExpectedVerdictsNameRealRulesAndResources(t *testing.T) {
	ids := ruleIDs(t)
	for _, c := range loadCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			e := c.Expected
			if e.Description == "" || len(e.CLIs) == 0 {
				t.Fatal(ExpectedFile + " needs a description and clis")
			}
			var planned [][]string
			for _, cli := range CLIs {
				_, err := os.Stat(c.Plan(cli))
				switch listed := slices.Contains(e.CLIs, cli); {
				case listed && err != nil:
					t.Errorf("no %s plan: %v (run scripts/terraform-fixtures.sh)", cli, err)
				case listed:
					planned = append(planned, addresses(t, c.Plan(cli)))
				case err == nil:
					t.Errorf("%s is not listed in clis", c.Plan(cli))
				}
			}
			for _, r := range e.JudgedRules {
				if !slices.Contains(ids, r) {
					t.Errorf("judged: unknown rule %q", r)
				}
			}
			seen := map[Verdict]bool{}
			check := func(kind string, v Verdict, needWhy bool) {
				if !slices.Contains(ids, v.Rule) {
					t.Errorf("%s: unknown rule %q", kind, v.Rule)
				}
				if needWhy && v.Why == "" {
					t.Errorf("%s %s %s: say why", kind, v.Rule, v.Address)
				}
				for i, addrs := range planned {
					if (v.Address != "" || kind != "unjudged") && !slices.Contains(addrs, v.Address) {
						t.Errorf("%s %s: %q is not a resource of the %s plan", kind, v.Rule, v.Address, e.CLIs[i])
					}
				}
				key := Verdict{Rule: v.Rule, Address: v.Address}
				if seen[key] {
					t.Errorf("%s %s %s: listed twice", kind, v.Rule, v.Address)
				}
				seen[key] = true
				if kind != "unjudged" && !e.Judged(v.Rule, v.Address) {
					t.Errorf("%s %s %s: the rule is unjudged there", kind, v.Rule, v.Address)
				}
			}
			for _, v := range e.Findings {
				check("finding", v, false)
			}
			for _, v := range e.NotReported {
				check("not", v, true)
			}
			for _, v := range e.Unjudged {
				check("unjudged", v, true)
			}
		})
	}
}

// TestFixturePlansAreCurrent regenerates every plan with the real CLIs (installed by
// make deps) and fails when a committed plan differs: the configuration, the stand-in
// provider or a CLI changed without the plans being regenerated.
func TestFixturePlansAreCurrent(t *testing.T) {
	for _, bin := range []string{"terraform", "tofu"} {
		if _, err := os.Stat(filepath.Join(repo, ".tools", "bin", bin)); err != nil {
			t.Skipf("%s is not installed (make deps installs it): %v", bin, err)
		}
	}
	out := t.TempDir()
	cmd := exec.CommandContext(t.Context(), filepath.Join(repo, "scripts", "terraform-fixtures.sh"), out)
	if log, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/terraform-fixtures.sh: %v\n%s", err, log)
	}
	for _, c := range loadCases(t) {
		for _, cli := range c.Expected.CLIs {
			committed, err := os.ReadFile(c.Plan(cli))
			if err != nil {
				t.Error(err)
				continue
			}
			fresh, err := os.ReadFile(filepath.Join(out, c.Name, cli+PlanSuffix))
			if err != nil {
				t.Error(err)
				continue
			}
			if !bytes.Equal(committed, fresh) {
				t.Errorf("%s is stale: run scripts/terraform-fixtures.sh and commit the result", c.Plan(cli))
			}
		}
	}
}

func TestNormaliseKeepsAllButTheVaryingParts(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			name: "timestamp and relevant attributes",
			in:   `{"format_version":"1.2","relevant_attributes":[{"resource":"b","attribute":["id"]},{"resource":"a","attribute":["name"]},{"resource":"a","attribute":["id",0]}],"timestamp":"2026-11-24T16:37:35Z","note":"\u003cx\u003e"}` + "\n",
			want: `{"format_version":"1.2","relevant_attributes":[{"resource":"a","attribute":["id",0]},{"resource":"a","attribute":["name"]},{"resource":"b","attribute":["id"]}],"timestamp":"2000-01-01T00:00:00Z","note":"\u003cx\u003e"}` + "\n",
		},
		{
			name: "nothing to normalise",
			in:   `{"format_version":"1.2","planned_values":{"root_module":{}},"errored":false}` + "\n",
			want: `{"format_version":"1.2","planned_values":{"root_module":{}},"errored":false}` + "\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Normalise([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			again, err := Normalise(got)
			if err != nil || !bytes.Equal(again, got) {
				t.Errorf("normalising twice changes the plan: %s (%v)", again, err)
			}
		})
	}
	for _, bad := range []string{``, `[]`, `{"timestamp":}`, `{"relevant_attributes":{}}`} {
		if _, err := Normalise([]byte(bad)); err == nil {
			t.Errorf("Normalise(%q) gives no error", bad)
		}
	}
}
