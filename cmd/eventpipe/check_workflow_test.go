package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// cliBinary puts an eventpipe command at dir/eventpipe, the test binary
// itself (see asCLIEnv), and returns the environment a process running it
// needs.
func cliBinary(t *testing.T, dir string) []string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(dir, "eventpipe")); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), asCLIEnv+"=1")
}

// TestPolicyCheckWorkflow runs the shell of the pull-request workflow's check step
// (.github/workflows/policy-check.yml) against the eventpipe command (package main as
// an executable, see cliBinary), in a scratch checkout of the project: every stack is
// rendered and checked once, passes, and leaves a SARIF file whose run the SARIF upload
// accepts beside the others.
func TestPolicyCheckWorkflow(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the workflow step's shell")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, ".github", "workflows", "policy-check.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []struct {
				Name string `yaml:"name"`
				Run  string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		t.Fatalf("workflow YAML: %v", err)
	}
	script := ""
	for _, s := range wf.Jobs["check"].Steps {
		if s.Name == "Render and check every stack" {
			script = s.Run
		}
	}
	if script == "" {
		t.Fatal("workflow has no 'Render and check every stack' step")
	}

	runnerTemp := t.TempDir()
	env := cliBinary(t, runnerTemp)
	work := t.TempDir()
	pulumiYAML, err := os.ReadFile(filepath.Join(root, "Pulumi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "Pulumi.yaml"), pulumiYAML, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "stacks"), filepath.Join(work, "stacks")); err != nil {
		t.Fatal(err)
	}
	output := filepath.Join(work, "github-output")
	cmd := exec.Command("bash", "-eo", "pipefail", "-c", script)
	cmd.Dir = work
	cmd.Env = append(env, "RUNNER_TEMP="+runnerTemp, "GITHUB_OUTPUT="+output)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("workflow step failed: %v\n%s", err, out)
	}
	got, err := os.ReadFile(output)
	if err != nil || strings.TrimSpace(string(got)) != "status=0" {
		t.Fatalf("step output %q (%v)\n%s", got, err, out)
	}
	stacks, _ := filepath.Glob(filepath.Join(root, "stacks", "Pulumi.*.yaml"))
	// The upload action rejects runs of one tool sharing a category (automationDetails.id).
	categories := map[string]string{}
	for _, config := range stacks {
		stack := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(config), "Pulumi."), ".yaml")
		data, err := os.ReadFile(filepath.Join(work, "sarif", stack+".sarif"))
		if err != nil {
			t.Fatalf("no SARIF for %s: %v", stack, err)
		}
		var log struct {
			Version string `json:"version"`
			Runs    []struct {
				Tool struct {
					Driver struct {
						Name string `json:"name"`
					} `json:"driver"`
				} `json:"tool"`
				AutomationDetails struct {
					ID string `json:"id"`
				} `json:"automationDetails"`
				Results []any `json:"results"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(data, &log); err != nil || log.Version != "2.1.0" || len(log.Runs) != 1 || len(log.Runs[0].Results) != 0 {
			t.Fatalf("%s SARIF: %v %+v", stack, err, log)
		}
		key := log.Runs[0].Tool.Driver.Name + " " + log.Runs[0].AutomationDetails.ID
		if other, dup := categories[key]; dup || log.Runs[0].AutomationDetails.ID == "" {
			t.Errorf("%s and %s SARIF runs share the category %q", other, stack, key)
		}
		categories[key] = stack
		// One render and one evaluation per stack, whatever the number of formats.
		if n := strings.Count(string(out), `"msg":"check finished","source":"stack `+stack+`"`); n != 1 {
			t.Errorf("stack %s checked %d times, want once:\n%s", stack, n, out)
		}
	}
	if n := strings.Count(string(out), "0 denies, 0 warnings, 0 waived: PASS"); n != len(stacks) {
		t.Errorf("%d text reports in the step log, want %d:\n%s", n, len(stacks), out)
	}
	if n := strings.Count(string(out), ": 0 denies, 0 warnings, 0 waived\n"); n != len(stacks) {
		t.Errorf("%d annotation summaries in the step log, want %d:\n%s", n, len(stacks), out)
	}
}
