package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/internal/cli"
	"github.com/eventpipe/eventpipe/internal/testing/plantest"
	"github.com/eventpipe/eventpipe/render"
)

// checkResult is the outcome of one `eventpipe check` run.
type checkResult struct {
	stdout, stderr string
	code           int
}

// runCheckCLI runs the CLI with stdin and args and returns its output and exit code,
// computed as main does.
func runCheckCLI(t *testing.T, stdin string, args ...string) checkResult {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	code := 0
	if err != nil {
		code = 2
		var ee *cli.ExitError
		if errors.As(err, &ee) {
			code = ee.Code
		}
		errOut.WriteString(err.Error())
	}
	return checkResult{stdout: out.String(), stderr: errOut.String(), code: code}
}

type jsonOut struct {
	Passed   bool `json:"passed"`
	Denies   int  `json:"denies"`
	Warnings int  `json:"warnings"`
	Findings []struct {
		RuleID   string `json:"ruleId"`
		Level    string `json:"level"`
		URN      string `json:"urn"`
		Message  string `json:"message"`
		Location *struct {
			File string `json:"file"`
			Line int    `json:"line"`
		} `json:"location"`
	} `json:"findings"`
}

func decode(t *testing.T, r checkResult) jsonOut {
	t.Helper()
	var out jsonOut
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("decoding json output: %v\nstdout: %s\nstderr: %s", err, r.stdout, r.stderr)
	}
	return out
}

// ids are the distinct level:rule-id pairs of the findings.
func (o jsonOut) ids() []string {
	var ids []string
	seen := map[string]bool{}
	for _, f := range o.Findings {
		id := f.Level + ":" + f.RuleID
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// TestCheckEveryStackPasses is the pull-request check: every stack renders offline and
// passes every rule.
func TestCheckEveryStackPasses(t *testing.T) {
	stacks, err := filepath.Glob(filepath.Join("..", "..", "stacks", "Pulumi.*.yaml"))
	if err != nil || len(stacks) < 3 {
		t.Fatalf("stack configs: %v %v", stacks, err)
	}
	for _, path := range stacks {
		env := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "Pulumi."), ".yaml")
		t.Run(env, func(t *testing.T) {
			r := runCheckCLI(t, "", "check", "--stack", env, "-o", "json")
			out := decode(t, r)
			if r.code != 0 || !out.Passed || len(out.Findings) != 0 {
				t.Fatalf("exit %d, findings %v: %s", r.code, out.Findings, r.stderr)
			}
			if !strings.Contains(r.stderr, `"msg":"check finished"`) || !strings.Contains(r.stderr, `"passed":true`) {
				t.Errorf("no structured log line: %s", r.stderr)
			}
		})
	}
}

// renderedProd is the prod stack rendered offline, once for the test binary: rendering is
// deterministic, and each caller parses its own copy to mutate.
var renderedProd = sync.OnceValues(func() ([]byte, error) {
	return render.Stack(context.Background(), render.Options{Stack: "prod"})
})

// renderProd returns a fresh copy of the rendered prod stack, as a document to mutate.
func renderProd(t *testing.T) plantest.Doc {
	t.Helper()
	data, err := renderedProd()
	if err != nil {
		t.Fatal(err)
	}
	return plantest.Parse(t, data)
}

// writePlan writes a plan document to a temporary file and returns its path.
func writePlan(t *testing.T, p plantest.Doc) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(path, p.JSON(t), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const (
	subType    = plantest.SubscriptionType
	pushSub    = plantest.PushSubscription
	dlqSubName = plantest.DLQSubscription
)

// stackMutations are one break of the rendered prod stack per rule, planned operations
// included.
func stackMutations() []plantest.Mutation {
	return append(plantest.RenderedProdMutations(), plantest.RenderedProdOperationMutations()...)
}

// TestCheckMutationsOfRenderedStack breaks the rendered prod stack one way per rule: each
// mutation must be reported with exactly its rule id and nothing else, and exit 1 for a
// deny (0 for a warning, 1 with --fail-on-warn).
func TestCheckMutationsOfRenderedStack(t *testing.T) {
	for _, tt := range stackMutations() {
		t.Run(tt.Name, func(t *testing.T) {
			p := renderProd(t)
			tt.Apply(t, p)
			path := writePlan(t, p)
			r := runCheckCLI(t, "", "check", path, "--env", "prod", "-o", "json")
			out := decode(t, r)
			if got := out.ids(); !reflect.DeepEqual(got, []string{tt.Want}) {
				t.Fatalf("findings %v, want exactly [%s]\n%s", got, tt.Want, r.stdout)
			}
			wantCode := 1
			if strings.HasPrefix(tt.Want, "warn:") {
				wantCode = 0
				if strict := runCheckCLI(t, "", "check", path, "--env", "prod", "--fail-on-warn", "-o", "json"); strict.code != 1 {
					t.Errorf("--fail-on-warn: exit %d, want 1", strict.code)
				}
			}
			if r.code != wantCode {
				t.Fatalf("exit %d, want %d: %s", r.code, wantCode, r.stderr)
			}
			f := out.Findings[0]
			if f.Location == nil || f.Location.File != path || f.Location.Line < 1 || f.URN == "" {
				t.Errorf("finding not located in the input: %+v", f)
			}
		})
	}
}

// TestCheckRenderedLocations: findings on a rendered stack point at the stack config line
// of the pipeline that declared the resource.
func TestCheckRenderedLocations(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "stacks", "Pulumi.prod.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// A prod-only threshold of at least 20 delivery attempts makes every DLQ policy fail.
	dir := t.TempDir()
	cfg := filepath.Join(dir, "check.yaml")
	if err := os.WriteFile(cfg, []byte("environments:\n  prod:\n    thresholds:\n      deny_dead_letter_attempts_out_of_range: {min: 20, max: 30}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCheckCLI(t, "", "check", "--stack", "prod", "--check-config", cfg, "-o", "json")
	out := decode(t, r)
	if r.code != 1 || out.Denies == 0 {
		t.Fatalf("exit %d denies %d: %s", r.code, out.Denies, r.stderr)
	}
	lines := strings.Split(string(src), "\n")
	for _, f := range out.Findings {
		if f.RuleID != "EP002" {
			t.Fatalf("unexpected finding %+v", f)
		}
		// Locations are relative to the working directory, this package's folder here.
		if f.Location == nil || f.Location.File != filepath.Join("..", "..", "stacks", "Pulumi.prod.yaml") || f.Location.Line < 1 || f.Location.Line > len(lines) {
			t.Fatalf("location %+v", f.Location)
		}
		name := f.URN[strings.LastIndex(f.URN, "::")+2:]
		line := lines[f.Location.Line-1]
		if key := strings.Trim(strings.TrimSpace(line), ":-\" "); key == "" || !strings.Contains(name, key) {
			t.Errorf("%s located at line %d %q, which does not declare it", name, f.Location.Line, line)
		}
	}
	// The same thresholds for another environment do not apply.
	if r := runCheckCLI(t, "", "check", "--stack", "dev", "--check-config", cfg); r.code != 0 {
		t.Fatalf("dev with prod-only thresholds: exit %d: %s", r.code, r.stderr)
	}
}

func TestCheckStdinAndFormats(t *testing.T) {
	p := renderProd(t)
	p.Inputs(t, subType, pushSub)["deadLetterPolicy"].(map[string]any)["maxDeliveryAttempts"] = 3
	data := p.JSON(t)
	for _, tt := range []struct{ format, want string }{
		{"text", "DENY   EP002 [medium] Dead-letter delivery attempts out of range"},
		{"sarif", `"ruleId": "EP002"`},
		{"junit", `<failure message="Subscription &#39;system-events-materializer&#39; dead-letters after 3 delivery attempts`},
		{"github", "::error file=stdin,line="},
	} {
		r := runCheckCLI(t, string(data), "check", "-", "--env", "prod", "-o", tt.format)
		if r.code != 1 || !strings.Contains(r.stdout, tt.want) {
			t.Errorf("%s: exit %d, output lacks %q:\n%s", tt.format, r.code, tt.want, r.stdout)
		}
	}
}

func TestCheckUnusableInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		name  string
		args  []string
		stdin string
		want  string
	}{
		{"kubernetes manifest", []string{"check", write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\n")}, "", "not a pulumi preview --json"},
		{"foreign json", []string{"check", write("x.json", `{"apiVersion":"v1","items":[]}`)}, "", "match no known format"},
		{"truncated", []string{"check", write("t.json", `{"steps":[{"op":"create"`)}, "", "invalid JSON"},
		{"empty stdin", []string{"check", "-"}, "", "empty input"},
		{"missing file", []string{"check", filepath.Join(dir, "nope.json")}, "", "no such file"},
		{"no input", []string{"check"}, "", "nothing to check"},
		{"bad format", []string{"check", "-", "-o", "yaml"}, "{}", `--output "yaml"`},
		{"unknown stack", []string{"check", "--stack", "nosuchenv"}, "", "rendering stack nosuchenv"},
		{"bad config", []string{"check", "-", "--check-config", write("c.yaml", "waivers: [{rule: EP001}]\n")}, "{}", "waivers[0].urn is empty"},
		{"unknown flag", []string{"check", "--frobnicate"}, "", "unknown flag"},
		{"terraform state", []string{"check", write("s.json", `{"format_version":"1.0","values":{"root_module":{}}}`)}, "", "Terraform state"},
		{"malformed step", []string{"check", "-"}, `{"steps":[{"kind":"x"}]}`, `steps[0]: a preview step needs "op"`},
		// The first-hour walk-through: each passed or got a generic message.
		{"terraform plan -refresh-only", []string{"check", "../../policies/testdata/terraform/refresh-only/terraform.plan.json.txt"}, "",
			"this is a refresh-only plan (terraform plan -refresh-only): it plans no change to any resource, so it has nothing to judge"},
		{"binary terraform plan", []string{"check", "../../policies/plan/testdata/terraform_plan.tfplan"}, "", "this is a binary plan file (terraform plan -out), which only terraform reads: check the JSON of it, `terraform show -json ../../policies/plan/testdata/terraform_plan.tfplan > plan.json`"},
		{"misspelt environment", []string{"check", "--stack", "prod", "--env", "prodd"}, "", `--env "prodd": no rule or check configuration names that environment (they name prod); did you mean "prod"?`},
		{"misspelt environment, data", []string{"check", "--print-data", "--env", "prd"}, "", `did you mean "prod"?`},
		{"terraform plan -json log", []string{"check", "../../policies/plan/testdata/terraform_plan_log.jsonl.txt"}, "", "this is the log `terraform plan -json` streams"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCheckCLI(t, tt.stdin, tt.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("exit %d, want 2 with %q; stderr: %s", r.code, tt.want, r.stderr)
			}
			if strings.Contains(r.stdout, "PASS") {
				t.Fatal("unusable input reported as a pass")
			}
		})
	}
}

// TestCheckUnchangedPreviewPasses: `pulumi preview --json` of a stack the change leaves
// unchanged prints only the root stack: the change cannot introduce a violation, so the
// check passes (exit 0), saying nothing changed and how to judge the whole stack.
func TestCheckUnchangedPreviewPasses(t *testing.T) {
	preview := `{"steps":[{"op":"same","urn":"urn:pulumi:prod::eventpipe::pulumi:pulumi:Stack::eventpipe-prod","newState":{"type":"pulumi:pulumi:Stack","custom":false}}],"changeSummary":{"same":130}}`
	r := runCheckCLI(t, preview, "check", "-", "--env", "prod")
	if r.code != 0 || !strings.Contains(r.stdout, "nothing changed: the preview changes no resource") ||
		!strings.Contains(r.stdout, "to judge the whole stack check `pulumi preview --json --show-sames`") || !strings.Contains(r.stdout, "PASS") {
		t.Fatalf("exit %d; stdout: %s; stderr: %s", r.code, r.stdout, r.stderr)
	}
}

func TestCheckWaivers(t *testing.T) {
	p := renderProd(t)
	p.Inputs(t, subType, pushSub)["deadLetterPolicy"].(map[string]any)["maxDeliveryAttempts"] = 3
	path := writePlan(t, p)
	cfg := filepath.Join(t.TempDir(), "check.yaml")
	waiver := func(expires string) {
		body := "waivers:\n  - rule: EP002\n    urn: \"urn:pulumi:prod::eventpipe::*::" + pushSub + "\"\n    reason: load test until the queue is drained\n    expires: " + expires + "\n"
		if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	waiver(time.Now().AddDate(0, 1, 0).Format(time.DateOnly))
	if r := runCheckCLI(t, "", "check", path, "--env", "prod", "--check-config", cfg); r.code != 0 || !strings.Contains(r.stdout, "WAIVED EP002") {
		t.Fatalf("live waiver: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	waiver("2020-01-31")
	r := runCheckCLI(t, "", "check", path, "--env", "prod", "--check-config", cfg, "-o", "json")
	out := decode(t, r)
	if r.code != 1 || !reflect.DeepEqual(out.ids(), []string{"deny:EP000", "deny:EP002"}) {
		t.Fatalf("expired waiver: exit %d findings %v", r.code, out.ids())
	}
	for _, f := range out.Findings {
		if f.RuleID == "EP000" && !strings.Contains(f.Message, "expired on 2020-01-31") {
			t.Errorf("expired waiver message %q does not name it", f.Message)
		}
	}
}

func TestCheckListRules(t *testing.T) {
	r := runCheckCLI(t, "", "check", "--list-rules")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, id := range []string{"EP000", "EP001", "EP005", "EP010", "EP015"} {
		if !strings.Contains(r.stdout, id+" ") {
			t.Errorf("rule list lacks %s:\n%s", id, r.stdout)
		}
	}
}
