package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/tffixtures"
	"github.com/eventpipe/eventpipe/render"
)

// The rules run in three places besides eventpipe check: plain conftest, opa eval and
// opa test. These tests run the real binaries `make deps` installs (conftest v0.71.1,
// opa v1.22.0) on the same documents and hold them to eventpipe check's verdicts.

// policyDir is the rules' folder, as users point conftest and opa at it.
const policyDir = "../../policies"

// tool is the path of a binary `make deps` installs into .tools/bin.
func tool(t *testing.T, name string) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("..", "..", ".tools", "bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s is not installed (%v): run make deps", name, err)
	}
	return path
}

// document is one document to check, and the environment to check it for.
type document struct {
	name, path, env string
}

// dataFile writes the data document `eventpipe check --print-data --env env` prints: what
// conftest and opa users pass with --data / -d.
func dataFile(t *testing.T, env string) string {
	t.Helper()
	args := []string{"check", "--print-data"}
	if env != "" {
		args = append(args, "--env", env)
	}
	r := runCheckCLI(t, "", args...)
	if r.code != 0 {
		t.Fatalf("--print-data: exit %d: %s", r.code, r.stderr)
	}
	path := filepath.Join(t.TempDir(), "data.json")
	if err := os.WriteFile(path, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkVerdicts are eventpipe check's findings on doc as "level:ID urn", sorted.
func checkVerdicts(t *testing.T, doc document) []string {
	t.Helper()
	args := []string{"check", doc.path, "-o", "json"}
	if doc.env != "" {
		args = append(args, "--env", doc.env)
	}
	r := runCheckCLI(t, "", args...)
	if r.code > 1 {
		t.Fatalf("eventpipe check %s: exit %d: %s", doc.name, r.code, r.stderr)
	}
	var out []string
	for _, f := range decode(t, r).Findings {
		out = append(out, f.Level+":"+f.RuleID+" "+f.URN)
	}
	sort.Strings(out)
	return out
}

// result is one element of the eventpipe package's deny and warn sets.
type result struct {
	Msg      string `json:"msg"`
	ID       string `json:"id"`
	URN      string `json:"urn"`
	Metadata struct {
		ID  string `json:"id"`
		URN string `json:"urn"`
	} `json:"metadata"`
}

// conftestVerdicts runs plain conftest once over docs of one environment and returns each
// document's findings as "level:ID urn", sorted, by path.
func conftestVerdicts(t *testing.T, docs []document, env string) map[string][]string {
	t.Helper()
	args := []string{"test", "--policy", policyDir, "--namespace", "eventpipe", "--data", dataFile(t, env), "--parser", "json", "--no-color", "-o", "json"}
	for _, d := range docs {
		args = append(args, d.path)
	}
	cmd := exec.Command(tool(t, "conftest"), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		t.Fatalf("conftest: %v\n%s", err, stderr.String())
	}
	var files []struct {
		Filename  string   `json:"filename"`
		Namespace string   `json:"namespace"`
		Failures  []result `json:"failures"`
		Warnings  []result `json:"warnings"`
	}
	if err := json.Unmarshal(stdout, &files); err != nil {
		t.Fatalf("conftest output: %v\n%s", err, stdout)
	}
	out := map[string][]string{}
	for _, f := range files {
		if f.Namespace != "eventpipe" {
			t.Fatalf("conftest evaluated namespace %q", f.Namespace)
		}
		verdicts := []string{}
		for level, results := range map[string][]result{"deny": f.Failures, "warn": f.Warnings} {
			for _, r := range results {
				if !strings.HasPrefix(r.Msg, r.Metadata.ID+": ") {
					t.Errorf("%s: conftest message %q does not start with its rule id", f.Filename, r.Msg)
				}
				verdicts = append(verdicts, level+":"+r.Metadata.ID+" "+r.Metadata.URN)
			}
		}
		sort.Strings(verdicts)
		out[f.Filename] = verdicts
	}
	if len(out) != len(docs) {
		t.Fatalf("conftest reported on %d files, want %d", len(out), len(docs))
	}
	return out
}

// opaVerdicts evaluates data.eventpipe.deny and data.eventpipe.warn with opa eval.
func opaVerdicts(t *testing.T, doc document) []string {
	t.Helper()
	cmd := exec.Command(tool(t, "opa"), "eval", "--format", "json", "-d", policyDir, "-d", dataFile(t, doc.env), "-i", doc.path,
		"deny := data.eventpipe.deny; warn := data.eventpipe.warn")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("opa eval %s: %v\n%s", doc.name, err, stderr.String())
	}
	var out struct {
		Result []struct {
			Bindings map[string][]result `json:"bindings"`
		} `json:"result"`
	}
	if err := json.Unmarshal(stdout, &out); err != nil || len(out.Result) != 1 {
		t.Fatalf("opa eval output (%v): %s", err, stdout)
	}
	verdicts := []string{}
	for level, results := range out.Result[0].Bindings {
		for _, r := range results {
			verdicts = append(verdicts, level+":"+r.ID+" "+r.URN)
		}
	}
	sort.Strings(verdicts)
	return verdicts
}

// sameVerdicts checks that conftest and opa eval report exactly eventpipe check's findings
// on every document, and returns eventpipe check's by document name.
func sameVerdicts(t *testing.T, docs []document) map[string][]string {
	t.Helper()
	byEnv := map[string][]document{}
	for _, d := range docs {
		byEnv[d.env] = append(byEnv[d.env], d)
	}
	conftest := map[string][]string{}
	for env, ds := range byEnv {
		for path, v := range conftestVerdicts(t, ds, env) {
			conftest[path] = v
		}
	}
	checked := make([][]string, len(docs))
	evaluated := make([][]string, len(docs))
	var wg sync.WaitGroup
	for i, d := range docs {
		checked[i] = checkVerdicts(t, d)
		wg.Add(1)
		go func() {
			defer wg.Done()
			evaluated[i] = opaVerdicts(t, d)
		}()
	}
	wg.Wait()
	out := map[string][]string{}
	for i, d := range docs {
		if want := checked[i]; !reflect.DeepEqual(conftest[d.path], nonNil(want)) || !reflect.DeepEqual(evaluated[i], nonNil(want)) {
			t.Errorf("%s: the runtimes disagree\neventpipe check: %v\nconftest:        %v\nopa eval:        %v", d.name, want, conftest[d.path], evaluated[i])
		}
		out[d.name] = checked[i]
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// TestConftestAndOPAGiveTheCheckVerdicts: every rendered stack and every mutation of the
// rendered prod stack gets the same denials and warnings from plain conftest and opa eval
// as from eventpipe check.
func TestConftestAndOPAGiveTheCheckVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs conftest and opa")
	}
	dir := t.TempDir()
	var docs []document
	for _, stack := range []string{"dev", "staging", "prod"} {
		data, err := render.Stack(context.Background(), render.Options{Stack: stack})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, stack+".json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, document{name: "stack " + stack, path: path, env: stack})
	}
	want := map[string]string{}
	for i, m := range stackMutations() {
		p := renderProd(t)
		m.Apply(t, p)
		path := filepath.Join(dir, strings.ReplaceAll(m.Name, " ", "-")+".json")
		if err := os.WriteFile(path, p.JSON(t), 0o600); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, document{name: m.Name, path: path, env: "prod"})
		want[m.Name] = m.Want
		if i == 0 { // the same break without an environment: the labels decide
			docs = append(docs, document{name: m.Name + " (no --env)", path: path})
		}
	}
	// A preview printed without --show-sames: the absence verdicts are warnings.
	p := renderProd(t)
	delete(p.Inputs(t, subType, pushSub), "deadLetterPolicy")
	delete(p.State(t, subType, pushSub)["propertyDependencies"].(map[string]any), "deadLetterPolicy")
	p.Keep(t, subType, pushSub)
	p.SetOp(t, "pulumi:pulumi:Stack", "eventpipe-prod", "same")
	p["changeSummary"] = map[string]any{"create": 1, "same": 129}
	incomplete := filepath.Join(dir, "incomplete.json")
	if err := os.WriteFile(incomplete, p.JSON(t), 0o600); err != nil {
		t.Fatal(err)
	}
	docs = append(docs, document{name: "incomplete preview", path: incomplete, env: "prod"})

	got := sameVerdicts(t, docs)
	for _, stack := range []string{"dev", "staging", "prod"} {
		if v := got["stack "+stack]; len(v) != 0 {
			t.Errorf("stack %s: %v, want no findings", stack, v)
		}
	}
	for name, w := range want {
		ids := map[string]bool{}
		for _, v := range got[name] {
			ids[strings.Fields(v)[0]] = true
		}
		if len(ids) != 1 || !ids[w] {
			t.Errorf("%s: %v, want only %s", name, got[name], w)
		}
	}
	// The alert policies are left out too: their absence verdicts are warnings as well.
	incompleteIDs := map[string]bool{}
	for _, v := range got["incomplete preview"] {
		incompleteIDs[strings.Fields(v)[0]] = true
	}
	if !reflect.DeepEqual(incompleteIDs, map[string]bool{"warn:EP001": true, "warn:EP103": true}) {
		t.Errorf("incomplete preview: %v, want the EP001 and EP103 denies as warnings", got["incomplete preview"])
	}
}

// TestTerraformFixtures runs eventpipe check and plain conftest over every plan the real
// terraform and tofu CLIs made of the Terraform fixtures (policies/testdata/terraform): each
// judged (rule, address) pair is reported exactly when the case's expected verdicts list
// it, and conftest and opa eval report what eventpipe check does; a case whose plans are
// unusable (a refresh-only plan) is refused by all three, saying why.
func TestTerraformFixtures(t *testing.T) {
	if testing.Short() {
		t.Skip("runs conftest and opa")
	}
	cases, err := tffixtures.Load(filepath.Join(policyDir, "testdata", "terraform"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 10 {
		t.Fatalf("%d cases", len(cases))
	}
	var docs, unusable []document
	byName := map[string]tffixtures.Case{}
	for _, c := range cases {
		for _, cli := range c.Expected.CLIs {
			name := c.Name + "/" + cli
			byName[name] = c
			if c.Expected.Problem != "" {
				unusable = append(unusable, document{name: name, path: c.Plan(cli)})
				continue
			}
			docs = append(docs, document{name: name, path: c.Plan(cli)})
		}
	}
	// An unusable plan: eventpipe check exits 2 saying why, conftest and opa eval deny
	// EP900 alone with the same reason.
	for _, d := range unusable {
		problem := byName[d.name].Expected.Problem
		if r := runCheckCLI(t, "", "check", d.path); r.code != 2 || !strings.Contains(r.stderr, problem) || strings.Contains(r.stdout, "PASS") {
			t.Errorf("%s: eventpipe check exit %d, want 2 with %q; stdout %s; stderr %s", d.name, r.code, problem, r.stdout, r.stderr)
		}
		if got := opaVerdicts(t, d); len(got) != 1 || !strings.HasPrefix(got[0], "deny:EP900 ") {
			t.Errorf("%s: opa eval %v, want deny:EP900 alone", d.name, got)
		}
		if got := conftestVerdicts(t, []document{d}, "")[d.path]; len(got) != 1 || !strings.HasPrefix(got[0], "deny:EP900 ") {
			t.Errorf("%s: conftest %v, want deny:EP900 alone", d.name, got)
		}
	}
	for name, verdicts := range sameVerdicts(t, docs) {
		expected := byName[name].Expected
		got := map[string]bool{}
		for _, v := range verdicts {
			rule, address, _ := strings.Cut(strings.SplitN(v, ":", 2)[1], " ")
			if expected.Judged(rule, address) {
				got[rule+" "+address] = true
			}
		}
		for _, f := range expected.Findings {
			if !got[f.Rule+" "+f.Address] {
				t.Errorf("%s: %s on %s not reported (%s)", name, f.Rule, f.Address, f.Why)
			}
			delete(got, f.Rule+" "+f.Address)
		}
		for v := range got {
			t.Errorf("%s: %s reported; the case's expected verdicts do not list it", name, v)
		}
	}
}

// TestOPATestPasses runs the rules' unit tests with the real opa binary, as `opa test
// policies/` does for users.
func TestOPATestPasses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs opa")
	}
	out, err := exec.Command(tool(t, "opa"), "test", policyDir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS: ") || strings.Contains(string(out), "FAIL") {
		t.Fatalf("opa test: %v\n%s", err, out)
	}
}
