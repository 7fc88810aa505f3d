package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/eventpipe/eventpipe/policies/evaluate"
	"github.com/eventpipe/eventpipe/policies/plan"
)

var (
	ep001 = evaluate.Rule{Name: "stack_deny_missing_dead_letter_policy", ID: "EP001", Title: "Subscription without a dead-letter policy", Description: "d1", Severity: "high", Fix: "Add a deadLetterPolicy.", Level: evaluate.Deny, Stack: true}
	ep011 = evaluate.Rule{Name: "warn_subscription_expires", ID: "EP011", Title: "Subscription expires when idle", Description: "d11", Severity: "low", Fix: `Set expirationPolicy.ttl to "".`, Level: evaluate.Warn}
	ep005 = evaluate.Rule{Name: "stack_deny_dead_letter_topic_unread", ID: "EP005", Title: "Dead-letter topic that no subscription reads", Description: "d5", Severity: "high", Fix: "Add a DLQ subscription.", Level: evaluate.Deny, Stack: true}
	ep000 = evaluate.Rule{Name: "deny_expired_waiver", ID: "EP000", Title: "Expired waiver", Description: "d0", Severity: "high", Fix: "Renew it.", Level: evaluate.Deny}
)

const subURN = "urn:pulumi:prod::eventpipe::gcp:pubsub/subscription:Subscription::orders-push"

func sample(failOnWarn bool) *Report {
	loc := &plan.Location{File: "stacks/Pulumi.prod.yaml", Line: 12}
	return &Report{
		Source: "stack prod", InputFormat: "pulumi-preview", Resources: 14, FailOnWarn: failOnWarn, Version: "test", SourceRoot: ".",
		Rules: []evaluate.Rule{ep001, ep005, ep011},
		Findings: []evaluate.Finding{
			{Rule: ep000, Level: evaluate.Deny, URN: "urn:pulumi:dev::*", Message: "the waiver of EP009 for urn:pulumi:dev::* expired on 2026-06-30 (reason given: r)"},
			{Rule: ep001, Level: evaluate.Deny, URN: subURN, Type: "gcp:pubsub/subscription:Subscription", Name: "orders-push", Message: "Subscription 'orders-push' has no dead-letter policy, 100% sure: really", Location: loc},
			{Rule: ep011, Level: evaluate.Warn, URN: subURN, Type: "gcp:pubsub/subscription:Subscription", Name: "orders-push", Message: "Subscription 'orders-push' expires after 86400s", Location: loc},
			{Rule: ep005, Level: evaluate.Warn, URN: subURN, Name: "orders-push", Message: "dead letters would be lost", Note: evaluate.IncompleteNote, Waiver: &evaluate.Waiver{RuleID: "EP005", URN: "urn:pulumi:prod::*", Reason: "migration", Expires: "2027-01-31"}},
		},
	}
}

func render(t *testing.T, f Format, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, f, r); err != nil {
		t.Fatalf("Write(%s): %v", f, err)
	}
	return b.String()
}

func TestFailed(t *testing.T) {
	r := sample(false)
	if d, w, wv := r.Counts(); d != 2 || w != 1 || wv != 1 {
		t.Fatalf("counts %d %d %d", d, w, wv)
	}
	if !r.Failed() {
		t.Fatal("denies must fail")
	}
	r.Findings = r.Findings[2:] // one warning, one waived
	if r.Failed() {
		t.Fatal("a warning alone must pass")
	}
	r.FailOnWarn = true
	if !r.Failed() {
		t.Fatal("--fail-on-warn must fail on a warning")
	}
	r.Findings = r.Findings[1:] // only the waived one
	if r.Failed() {
		t.Fatal("a waived finding must not fail")
	}
}

func TestText(t *testing.T) {
	out := render(t, Text, sample(false))
	for _, want := range []string{
		"eventpipe check: stack prod (pulumi-preview, 14 resources, 3 rules)",
		subURN + " (gcp:pubsub/subscription:Subscription)  stacks/Pulumi.prod.yaml:12",
		"  DENY   EP001 [high] Subscription without a dead-letter policy",
		"         fix: Add a deadLetterPolicy.",
		"  WARN   EP011 [low] Subscription expires when idle",
		"  WAIVED EP005 [high]",
		"         waived until 2027-01-31: migration",
		"         note: " + evaluate.IncompleteNote,
		"2 denies, 1 warning, 1 waived: FAIL",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	// Findings of one resource are grouped under one header.
	if n := strings.Count(out, subURN+" (gcp"); n != 1 {
		t.Errorf("resource header printed %d times", n)
	}
}

func TestJSON(t *testing.T) {
	var got jsonReport
	if err := json.Unmarshal([]byte(render(t, JSON, sample(false))), &got); err != nil {
		t.Fatal(err)
	}
	if got.Passed || got.Denies != 2 || got.Warnings != 1 || got.Waived != 1 || len(got.Findings) != 4 {
		t.Fatalf("summary %+v", got)
	}
	f := got.Findings[1]
	if f.RuleID != "EP001" || f.Level != evaluate.Deny || f.Fix == "" || f.Location.Line != 12 || f.URN != subURN {
		t.Fatalf("finding %+v", f)
	}
}

// TestSARIFValidatesAgainstSchema checks the SARIF output against the SARIF 2.1.0 JSON
// schema.
func TestSARIFValidatesAgainstSchema(t *testing.T) {
	schema := sarifSchema(t)
	out := render(t, SARIF, sample(false))
	validateSARIF(t, schema, out)
	// The schema must also reject a broken log, or the validation above proves nothing.
	broken := map[string]any{"version": "2.1.0", "runs": []any{map[string]any{"tool": map[string]any{}, "results": []any{map[string]any{"level": "fatal"}}}}}
	if err := schema.Validate(broken); err == nil {
		t.Fatal("the schema accepted an invalid log")
	}

	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Rules []struct {
						ID   string `json:"id"`
						Help struct {
							Text string `json:"text"`
						} `json:"help"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				Level     string `json:"level"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
					LogicalLocations []struct {
						FullyQualifiedName string `json:"fullyQualifiedName"`
					} `json:"logicalLocations"`
				} `json:"locations"`
				Suppressions []struct {
					Justification string `json:"justification"`
				} `json:"suppressions"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &log); err != nil {
		t.Fatal(err)
	}
	run := log.Runs[0]
	if len(run.Tool.Driver.Rules) != 4 || run.Tool.Driver.Rules[1].ID != "EP001" || run.Tool.Driver.Rules[1].Help.Text != "Fix: Add a deadLetterPolicy." {
		t.Fatalf("rules %+v", run.Tool.Driver.Rules)
	}
	res := run.Results[1]
	if res.RuleID != "EP001" || res.Level != "error" || res.Locations[0].PhysicalLocation.ArtifactLocation.URI != "stacks/Pulumi.prod.yaml" ||
		res.Locations[0].PhysicalLocation.Region.StartLine != 12 || res.Locations[0].LogicalLocations[0].FullyQualifiedName != subURN {
		t.Fatalf("result %+v", res)
	}
	if run.Results[2].Level != "warning" || len(run.Results[3].Suppressions) != 1 || !strings.Contains(run.Results[3].Suppressions[0].Justification, "migration") {
		t.Fatalf("results %+v", run.Results)
	}
}

// sarifSchema compiles the SARIF 2.1.0 JSON schema (testdata/sarif-2.1.0.schema.json.txt
// is sarif-2.1.0.json from Microsoft's @microsoft/sarif-multitool 5.7.0 npm package; .txt
// keeps `opa test policies/` from loading it as data).
func sarifSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "sarif-2.1.0.schema.json.txt"))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat = true
	if err := c.AddResource("sarif.json", bytes.NewReader(src)); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("sarif.json")
	if err != nil {
		t.Fatalf("compiling the SARIF schema: %v", err)
	}
	return schema
}

// validateSARIF fails t unless out is a valid SARIF 2.1.0 log.
func validateSARIF(t *testing.T, schema *jsonschema.Schema, out string) {
	t.Helper()
	var doc any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(doc); err != nil {
		t.Fatalf("SARIF output is not valid SARIF 2.1.0: %v\n%s", err, out)
	}
}

func TestJUnit(t *testing.T) {
	for _, tt := range []struct {
		failOnWarn bool
		failures   int
	}{{false, 2}, {true, 3}} {
		var doc junitSuites
		if err := xml.Unmarshal([]byte(render(t, JUnit, sample(tt.failOnWarn))), &doc); err != nil {
			t.Fatal(err)
		}
		s := doc.Suites[0]
		// 4 findings + one passing case for the one rule without findings (none: all hit) = 4.
		if s.Failures != tt.failures || s.Skipped != 1 || s.Tests != 4 || doc.Failures != tt.failures {
			t.Fatalf("fail-on-warn %v: suite %+v", tt.failOnWarn, s)
		}
	}
	r := sample(false)
	r.Findings = nil
	var doc junitSuites
	if err := xml.Unmarshal([]byte(render(t, JUnit, r)), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Suites[0].Tests != 3 || doc.Suites[0].Failures != 0 {
		t.Fatalf("clean run: %+v", doc.Suites[0])
	}
}

func TestGitHub(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(render(t, GitHub, sample(false))), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	want := "::error file=stacks/Pulumi.prod.yaml,line=12,title=EP001 Subscription without a dead-letter policy::Subscription 'orders-push' has no dead-letter policy, 100%25 sure: really%0Aresource: " + subURN + "%0Afix: Add a deadLetterPolicy."
	if lines[1] != want {
		t.Fatalf("got  %s\nwant %s", lines[1], want)
	}
	if !strings.HasPrefix(lines[2], "::warning file=") || !strings.HasPrefix(lines[3], "::notice title=EP005") || !strings.HasPrefix(lines[0], "::error title=EP000 Expired waiver::") {
		t.Fatalf("levels:\n%s", strings.Join(lines, "\n"))
	}
	if got := escapeProperty("a:b,c%"); got != "a%3Ab%2Cc%25" {
		t.Fatalf("escapeProperty = %s", got)
	}
}

func TestUnknownFormat(t *testing.T) {
	err := Write(&bytes.Buffer{}, "yaml", sample(false))
	if err == nil || !strings.Contains(err.Error(), "text, json, sarif, junit, github") {
		t.Fatalf("err = %v", err)
	}
}

// TestCountsAgreeInNumber: every output and verdict writes a count of one in the singular
// and any other in the plural, for every pair of counts up to 3 (the walk-through saw
// "1 denies").
func TestCountsAgreeInNumber(t *testing.T) {
	for d := range 4 {
		for w := range 4 {
			findings := make([]evaluate.Finding, 0, d+w)
			for range d {
				findings = append(findings, evaluate.Finding{Rule: ep001, Level: evaluate.Deny, URN: "u", Message: "m"})
			}
			for range w {
				findings = append(findings, evaluate.Finding{Rule: ep011, Level: evaluate.Warn, URN: "u", Message: "m"})
			}
			r := &Report{Source: "plan.json", InputFormat: "pulumi-preview", Findings: findings, SourceRoot: t.TempDir()}
			want := Tally(d, w)
			for _, n := range []struct {
				count      int
				one, other string
			}{{d, "deny", "denies"}, {w, "warning", "warnings"}} {
				word := n.other
				if n.count == 1 {
					word = n.one
				}
				if !strings.Contains(want, fmt.Sprintf("%d %s,", n.count, word)) && !strings.HasSuffix(want, fmt.Sprintf("%d %s", n.count, word)) {
					t.Errorf("Tally(%d, %d) = %q: no %q", d, w, want, fmt.Sprintf("%d %s", n.count, word))
				}
			}
			for _, f := range []Format{Text, GitHub} {
				var out bytes.Buffer
				if err := Write(&out, f, r); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(out.String(), want) {
					t.Errorf("%s output of %d denies and %d warnings does not say %q:\n%s", f, d, w, want, out.String())
				}
			}
		}
	}
}

// TestIncompleteDocumentIsSaid: the text, json and github outputs of a report on an
// incomplete document say so and what to run instead, with and without findings, passing
// or failing; those of a complete document say nothing of it.
func TestIncompleteDocumentIsSaid(t *testing.T) {
	const advice = "printed without --show-sames, the preview leaves out every unchanged resource: for a firm verdict check `pulumi preview --json --show-sames` or `pulumi stack export`"
	for _, findings := range []bool{false, true} {
		for _, incomplete := range []string{"", advice} {
			r := sample(false)
			if !findings {
				r.Findings = nil
			}
			r.Incomplete = incomplete
			r.SourceRoot = t.TempDir()
			text, js, gh, sr := render(t, Text, r), render(t, JSON, r), render(t, GitHub, r), render(t, SARIF, r)
			validateSARIF(t, sarifSchema(t), sr)
			var decoded jsonReport
			if err := json.Unmarshal([]byte(js), &decoded); err != nil {
				t.Fatal(err)
			}
			said := strings.Contains(text, "incomplete document: "+advice) && strings.Contains(text, "(on an incomplete document: see above)") &&
				!decoded.Complete && decoded.Incomplete == advice &&
				strings.Contains(gh, "::warning title=Incomplete document%3A stack prod::"+advice) &&
				strings.Contains(sr, `"text": "incomplete document: printed without --show-sames`)
			if incomplete != "" && !said {
				t.Errorf("findings %v: an incomplete document is not said in every output:\n%s\n%s\n%s", findings, text, js, gh)
			}
			if incomplete == "" && (strings.Contains(text+gh+sr, "ncomplete document") || !decoded.Complete || decoded.Incomplete != "") {
				t.Errorf("findings %v: a complete document is said to be incomplete:\n%s\n%s\n%s", findings, text, js, gh)
			}
		}
	}
}

// TestEnvironmentIsSaid: the text, json and sarif outputs state the environment's profile
// the verdict rests on.
func TestEnvironmentIsSaid(t *testing.T) {
	r := sample(false)
	r.Environment = "qa: the default profile (no rule or check configuration names this environment)"
	text, js, sr := render(t, Text, r), render(t, JSON, r), render(t, SARIF, r)
	var decoded jsonReport
	if err := json.Unmarshal([]byte(js), &decoded); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "\nenvironment: "+r.Environment+"\n") || decoded.Environment != r.Environment || !strings.Contains(sr, `"text": "environment: qa: the default profile`) {
		t.Errorf("the environment's profile is not said:\n%s\n%s\n%s", text, js, sr)
	}
}
