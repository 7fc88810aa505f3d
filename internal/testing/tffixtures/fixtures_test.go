package tffixtures

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/policies"
)

var (
	repo     = filepath.Join("..", "..", "..")
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

// TestFixturePlansAreCurrent holds the committed plans to their inputs. The stamp
// (StampFile) records the digest of the inputs the plans were last made from: when it no
// longer matches, a configuration, the stand-in provider, the normaliser, the script or a
// pinned CLI version changed and the plans must be made again. When the real CLIs are
// installed (make deps builds them exactly then) it also regenerates every plan and fails
// when a committed one differs; under -short it checks only the digest.
func TestFixturePlansAreCurrent(t *testing.T) {
	stamp, err := ReadStamp(fixtures)
	if err != nil {
		t.Fatal(err)
	}
	digest, err := InputsDigest(repo, stamp.Versions)
	if err != nil {
		t.Fatal(err)
	}
	stale := digest != stamp.Digest
	if testing.Short() && !stale {
		t.Skip("the plans are current by their inputs' digest; regenerating them runs terraform and tofu: make test runs it")
	}
	for _, bin := range []string{"terraform", "tofu"} {
		if _, err := os.Stat(filepath.Join(repo, ".tools", "bin", bin)); err != nil {
			if stale {
				t.Fatalf("the fixture inputs changed since the plans were made and %s is not installed: run make deps, then scripts/terraform-fixtures.sh", bin)
			}
			t.Logf("the plans are current by their inputs' digest %s (%s not installed, so not regenerated)", digest, bin)
			return
		}
	}
	if stale {
		t.Errorf("%s is stale: the inputs' digest is %s, stamped %s: run scripts/terraform-fixtures.sh and commit the result", filepath.Join(fixtures, StampFile), digest, stamp.Digest)
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

// TestInputsDigestCoversEveryInput changes each kind of input in a copy of the inputs and
// asserts the digest moves, and that an output (a plan, the stamp, a verdict) does not.
func TestInputsDigestCoversEveryInput(t *testing.T) {
	versions := map[string]string{"terraform": "1.5.7", "tofu": "1.9.0"}
	tmp := t.TempDir()
	files := map[string]string{
		"policies/testdata/terraform/case/main.tf":                 "resource \"x\" \"y\" {}\n",
		"policies/testdata/terraform/case/" + ExpectedFile:         "description: d\nclis: [terraform]\nfindings: []\n",
		"policies/testdata/terraform/case/terraform" + PlanSuffix:  "{}\n",
		"policies/testdata/terraform/" + StampFile:                 "terraform 1.5.7\n",
		"internal/testing/tfprovider/provider.go":                  "package tfprovider\n",
		"internal/testing/tffixtures/normalise.go":                 "package tffixtures\n",
		"internal/testing/tffixtures/cmd/tfplan-normalise/main.go": "package main\n",
		"scripts/terraform-fixtures.sh":                            "#!/bin/sh\n",
	}
	write := func(rel, content string) {
		path := filepath.Join(tmp, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for rel, content := range files {
		write(rel, content)
	}
	digest := func() string {
		d, err := InputsDigest(tmp, versions)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	base := digest()
	if again := digest(); again != base {
		t.Fatalf("digest not deterministic: %s then %s", base, again)
	}
	for rel, content := range files {
		isInput := !strings.HasSuffix(rel, PlanSuffix) && !strings.HasSuffix(rel, StampFile)
		t.Run(rel, func(t *testing.T) {
			changed := content + "# changed\n"
			if strings.HasSuffix(rel, ExpectedFile) {
				// Only the clis: line of a verdict file is an input; the rest is judgement.
				changed = content + "not: []\n"
				write(rel, changed)
				if got := digest(); got != base {
					t.Errorf("a verdict change moved the digest")
				}
				changed = strings.Replace(content, "[terraform]", "[terraform, tofu]", 1)
				isInput = true
			}
			write(rel, changed)
			defer write(rel, content)
			if moved := digest() != base; moved != isInput {
				t.Errorf("changing %s moved the digest: %v, want %v", rel, moved, isInput)
			}
		})
	}
	t.Run("versions", func(t *testing.T) {
		for _, cli := range CLIs {
			old := versions[cli]
			versions[cli] = old + ".1"
			if digest() == base {
				t.Errorf("a new %s version did not move the digest", cli)
			}
			versions[cli] = old
		}
	})
}

// TestNormaliseSortsNestedModules: the CLIs print the module instances nested two deep
// in map order (shape-nested planned twice gave two orders); normalised, any order of
// child_modules, at any depth, gives the same bytes.
func TestNormaliseSortsNestedModules(t *testing.T) {
	plan := func(a, b string) []byte {
		return []byte(`{"format_version":"1.2","planned_values":{"root_module":{"child_modules":[{"address":"module.r","child_modules":[` + a + `,` + b + `]}]}},` +
			`"prior_state":{"values":{"root_module":{"child_modules":[` + b + `,` + a + `]}}}}` + "\n")
	}
	x, y := `{"address":"module.r.module.p[\"orders\"]","resources":[]}`, `{"address":"module.r.module.p[\"refunds\"]","resources":[]}`
	one, err := Normalise(plan(x, y))
	if err != nil {
		t.Fatal(err)
	}
	other, err := Normalise(plan(y, x))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(one, other) {
		t.Fatalf("two orders of child_modules normalise differently:\n%s\n%s", one, other)
	}
	if !bytes.HasSuffix(one, []byte("}\n")) || bytes.Index(one, []byte("orders")) > bytes.Index(one, []byte("refunds")) {
		t.Fatalf("not sorted by address: %s", one)
	}
}
