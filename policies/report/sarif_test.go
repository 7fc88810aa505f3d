package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/policies/evaluate"
	"github.com/eventpipe/eventpipe/policies/plan"
)

// sarifLog is the part of a SARIF log the code scanning tests read.
type sarifLog struct {
	Runs []struct {
		Tool struct {
			Driver struct {
				Rules []struct {
					ID         string `json:"id"`
					Properties struct {
						SecuritySeverity *string  `json:"security-severity"`
						Tags             []string `json:"tags"`
					} `json:"properties"`
				} `json:"rules"`
			} `json:"driver"`
		} `json:"tool"`
		OriginalURIBaseIDs map[string]struct {
			URI string `json:"uri"`
		} `json:"originalUriBaseIds"`
		AutomationDetails struct {
			ID string `json:"id"`
		} `json:"automationDetails"`
		Results []struct {
			RuleID              string            `json:"ruleId"`
			PartialFingerprints map[string]string `json:"partialFingerprints"`
			Locations           []struct {
				PhysicalLocation struct {
					ArtifactLocation struct {
						URI       string `json:"uri"`
						URIBaseID string `json:"uriBaseId"`
					} `json:"artifactLocation"`
				} `json:"physicalLocation"`
			} `json:"locations"`
		} `json:"results"`
	} `json:"runs"`
}

func decodeSARIF(t *testing.T, r *Report) sarifLog {
	t.Helper()
	out := render(t, SARIF, r)
	validateSARIF(t, sarifSchema(t), out)
	var log sarifLog
	if err := json.Unmarshal([]byte(out), &log); err != nil {
		t.Fatal(err)
	}
	if len(log.Runs) != 1 {
		t.Fatalf("%d runs", len(log.Runs))
	}
	return log
}

// TestSARIFLocationsAreRepositoryRelative: a checked file inside the source root is
// reported by its path from the root with uriBaseId %SRCROOT%, which the run maps to the
// root, whether the check was given an absolute path, a path relative to the working
// directory or a symbolic link; a file outside the root keeps an absolute file URI.
func TestSARIFLocationsAreRepositoryRelative(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "plans", "prod"), 0o755); err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(root, "plans", "prod", "preview plan.json")
	if err := os.WriteFile(inside, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "current.json")
	if err := os.Symlink(inside, link); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "x.json")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	relToWD, err := filepath.Rel(wd, inside)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, file, uri, base string
	}{
		{"absolute path inside", inside, "plans/prod/preview%20plan.json", "%SRCROOT%"},
		{"path relative to the working directory", relToWD, "plans/prod/preview%20plan.json", "%SRCROOT%"},
		{"symbolic link", link, "plans/prod/preview%20plan.json", "%SRCROOT%"},
		{"outside the root", outside, "", ""},
		{"standard input", "stdin", "stdin", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := sample(false)
			r.SourceRoot = root
			r.Findings[1].Location = &plan.Location{File: tt.file, Line: 3}
			run := decodeSARIF(t, r).Runs[0]
			got := run.Results[1].Locations[0].PhysicalLocation.ArtifactLocation
			if tt.uri != "" && tt.base == "" {
				// Not a file: the name stays as it is, resolved against nothing.
				if got.URI != tt.uri || got.URIBaseID != "" {
					t.Fatalf("artifactLocation %+v, want uri %q and no base", got, tt.uri)
				}
				return
			}
			if tt.base == "" {
				// Outside the root nothing resolves the path: it must stay absolute.
				if got.URIBaseID != "" || !strings.HasPrefix(got.URI, "file:///") || !strings.HasSuffix(got.URI, "/x.json") {
					t.Fatalf("artifactLocation %+v, want an absolute file URI of %s", got, tt.file)
				}
				return
			}
			if got.URI != tt.uri || got.URIBaseID != tt.base {
				t.Fatalf("artifactLocation %+v, want uri %q uriBaseId %q", got, tt.uri, tt.base)
			}
			if base := run.OriginalURIBaseIDs["%SRCROOT%"].URI; base != fileURI(root)+"/" {
				t.Fatalf("originalUriBaseIds[%%SRCROOT%%] = %q, want %q", base, fileURI(root)+"/")
			}
			// Workflow annotations resolve against the repository root too.
			if ann := render(t, GitHub, r); !strings.Contains(ann, "file=plans/prod/preview plan.json,line=3,") {
				t.Fatalf("annotation not repository-relative:\n%s", ann)
			}
		})
	}
}

// TestSARIFFingerprintsFollowRuleAndResource: a result's partial fingerprint is the same
// when its resource moves to another line or file, differs for another rule or resource,
// and tells apart two findings of one rule on one resource.
func TestSARIFFingerprintsFollowRuleAndResource(t *testing.T) {
	hash := func(mutate func(r *Report)) []string {
		r := sample(false)
		mutate(r)
		var out []string
		for _, res := range decodeSARIF(t, r).Runs[0].Results {
			fp := res.PartialFingerprints["primaryLocationLineHash"]
			if fp == "" {
				t.Fatalf("result %s has no primaryLocationLineHash: %+v", res.RuleID, res.PartialFingerprints)
			}
			out = append(out, fp)
		}
		return out
	}
	base := hash(func(*Report) {})
	moved := hash(func(r *Report) {
		r.Findings[1].Location = &plan.Location{File: "stacks/Pulumi.prod.yaml", Line: 40}
		r.Findings[1].Message = "reworded"
	})
	if base[1] != moved[1] {
		t.Errorf("fingerprint changed when the finding moved: %s -> %s", base[1], moved[1])
	}
	other := hash(func(r *Report) { r.Findings[1].URN += "-b" })
	if base[1] == other[1] {
		t.Errorf("another resource got the same fingerprint %s", base[1])
	}
	if base[1] == base[2] {
		t.Errorf("two rules on one resource share fingerprint %s", base[1])
	}
	twice := hash(func(r *Report) {
		second := r.Findings[1]
		second.Message = "a second message of the same rule"
		r.Findings = append(r.Findings[:2], append([]evaluate.Finding{second}, r.Findings[2:]...)...)
	})
	if twice[1] == twice[2] || strings.Split(twice[1], ":")[0] != strings.Split(twice[2], ":")[0] {
		t.Errorf("two findings of one rule on one resource: %s and %s, want one hash with two occurrence numbers", twice[1], twice[2])
	}
}

// TestSARIFSecuritySeverity: every rule above info carries a numeric security-severity
// in GitHub's band for its severity and the security tag; an informational rule has none.
func TestSARIFSecuritySeverity(t *testing.T) {
	info := evaluate.Rule{Name: "warn_opt_out", ID: "EP015", Title: "Opt-out", Description: "d", Severity: "info", Fix: "f", Level: evaluate.Warn}
	critical := evaluate.Rule{Name: "deny_public", ID: "EP010", Title: "Public", Description: "d", Severity: "critical", Fix: "f", Level: evaluate.Deny}
	r := sample(false)
	r.Rules = append(r.Rules, info, critical)
	bands := map[string][2]float64{"critical": {9.0, 10.0}, "high": {7.0, 8.9}, "medium": {4.0, 6.9}, "low": {0.1, 3.9}}
	severity := map[string]string{}
	for _, rule := range append(r.Rules, ep000) {
		severity[rule.ID] = rule.Severity
	}
	rules := decodeSARIF(t, r).Runs[0].Tool.Driver.Rules
	if len(rules) != 6 {
		t.Fatalf("%d rules", len(rules))
	}
	for _, rule := range rules {
		sev := severity[rule.ID]
		band, security := bands[sev]
		got := rule.Properties.SecuritySeverity
		if !security {
			if got != nil {
				t.Errorf("%s (%s): security-severity %q, want none", rule.ID, sev, *got)
			}
			continue
		}
		var score float64
		if got == nil || json.Unmarshal([]byte(*got), &score) != nil || score < band[0] || score > band[1] {
			t.Errorf("%s (%s): security-severity %v, want a numeric string in %v", rule.ID, sev, got, band)
		}
		if !strings.Contains(strings.Join(rule.Properties.Tags, ","), "security") {
			t.Errorf("%s: tags %v lack security", rule.ID, rule.Properties.Tags)
		}
	}
}

// TestSARIFCategoryNamesTheSource: each checked source is its own code scanning category,
// so the runs of several stacks uploaded together are distinct (the upload action rejects
// runs of one tool that share an automationDetails.id).
func TestSARIFCategoryNamesTheSource(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "plans"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "plans", "p.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	for source, want := range map[string]string{
		"stack prod":                           "eventpipe/stack/prod/",
		"stack dev":                            "eventpipe/stack/dev/",
		"-":                                    "eventpipe/stdin/",
		filepath.Join(root, "plans", "p.json"): "eventpipe/plans/p.json/",
		"/elsewhere/prod.json":                 "eventpipe/prod.json/",
	} {
		r := sample(false)
		r.Source, r.SourceRoot = source, root
		if got := decodeSARIF(t, r).Runs[0].AutomationDetails.ID; got != want {
			t.Errorf("source %q: automationDetails.id %q, want %q", source, got, want)
		}
	}
}

// TestRepositoryRoot finds the enclosing git work tree (a .git directory or a worktree's
// .git file) and falls back to the folder itself.
func TestRepositoryRoot(t *testing.T) {
	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, ".git"), []byte("gitdir: /elsewhere\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(repo, "infra", "stacks")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := RepositoryRoot(deep); err != nil || got != repo {
		t.Fatalf("RepositoryRoot(%s) = %s, %v; want %s", deep, got, err, repo)
	}
	alone := t.TempDir()
	if got, err := RepositoryRoot(alone); err != nil || got != alone {
		t.Fatalf("RepositoryRoot(%s) = %s, %v; want the folder itself", alone, got, err)
	}
}
