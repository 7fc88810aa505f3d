// Package tffixtures reads the Terraform plan fixtures of policies/testdata/terraform:
// root configurations planned by the real terraform and tofu CLIs (with the stand-in
// google provider of internal/testing/tfprovider), each with the verdicts a correct policy check
// gives on its plans. scripts/terraform-fixtures.sh regenerates the plans.
package tffixtures

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"gopkg.in/yaml.v3"
)

// CLIs are the command-line tools a case's plans can be made with.
var CLIs = []string{"terraform", "tofu"}

// The files of a case end in .txt because `opa test policies/` and `opa eval -d
// policies/` load every .json and .yaml file below policies/ as data (as
// policies/plan/testdata does).
const (
	// ExpectedFile holds a case's verdicts (Expected, in YAML).
	ExpectedFile = "expected.yaml.txt"
	// PlanSuffix follows the CLI's name in a plan's file name: terraform.plan.json.txt.
	PlanSuffix = ".plan.json.txt"
)

// Case is one fixture: a folder holding a root configuration, its ExpectedFile and one
// plan per CLI (CLI+PlanSuffix).
type Case struct {
	Name     string
	Dir      string
	Expected Expected
}

// Plan is the path of the plan cli made of the case.
func (c Case) Plan(cli string) string { return filepath.Join(c.Dir, cli+PlanSuffix) }

// Expected is a case's ExpectedFile: the verdicts of a correct check on the case's plans.
//
// Judging is per (rule, address) pair, address being a resource_changes address. A pair
// no Unjudged entry covers is judged: the check reports it exactly when Findings lists
// it. NotReported lists judged pairs that must not be reported, with the reason — traps
// a naive reader falls into; they add nothing to what Findings already implies.
//
// JudgedRules, when set, narrows judging to those rules: every other rule is unjudged on
// every resource (the generated dlq-* cases judge only EP001).
type Expected struct {
	Description string    `yaml:"description"`
	CLIs        []string  `yaml:"clis,flow"`
	JudgedRules []string  `yaml:"judged,flow,omitempty"`
	Findings    []Verdict `yaml:"findings"`
	NotReported []Verdict `yaml:"not"`
	Unjudged    []Verdict `yaml:"unjudged,omitempty"`
	// Problem, when set, says the plans are unusable: no rule judges them, and the check's
	// error (EP900's message under conftest and opa) contains Problem.
	Problem string `yaml:"problem,omitempty"`
}

// Verdict names a rule's finding on a resource, and why it is (or is not) given. In
// Unjudged an empty Address covers the rule on every resource.
//
// Level, when set in Findings ("deny" or "warn"), is the level the finding must have.
type Verdict struct {
	Rule    string `yaml:"rule"`
	Address string `yaml:"address"`
	Level   string `yaml:"level,omitempty"`
	Why     string `yaml:"why"`
}

// Judged reports whether the case decides whether rule reports address.
func (e Expected) Judged(rule, address string) bool {
	if len(e.JudgedRules) > 0 && !slices.Contains(e.JudgedRules, rule) {
		return false
	}
	for _, u := range e.Unjudged {
		if u.Rule == rule && (u.Address == "" || u.Address == address) {
			return false
		}
	}
	return true
}

// Load reads every case under root (a folder per case, with an ExpectedFile; other
// folders, such as the shared modules, are skipped), in name order.
func Load(root string) ([]Case, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("reading the fixtures: %w", err)
	}
	var cases []Case
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		data, err := os.ReadFile(filepath.Join(dir, ExpectedFile))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", e.Name(), err)
		}
		c := Case{Name: e.Name(), Dir: dir}
		if err := yaml.Unmarshal(data, &c.Expected); err != nil {
			return nil, fmt.Errorf("case %s: %s: %w", e.Name(), ExpectedFile, err)
		}
		for _, cli := range c.Expected.CLIs {
			if !slices.Contains(CLIs, cli) {
				return nil, fmt.Errorf("case %s: %s: clis: unknown CLI %q (want one of %v)", e.Name(), ExpectedFile, cli, CLIs)
			}
		}
		cases = append(cases, c)
	}
	return cases, nil
}
