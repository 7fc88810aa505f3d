package tffixtures

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/benchgen"
)

// TestBenchCaseIsCurrent: the bench-for-each case on disk is what BenchCaseFiles writes
// (the module is benchgen.ForEachModule, the root the generator's call of it).
func TestBenchCaseIsCurrent(t *testing.T) {
	files, err := BenchCaseFiles()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(fixtures, filepath.FromSlash(name)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not what BenchCaseFiles generates (%v): run go run ./internal/testing/tffixtures/cmd/dlq-cases, then scripts/terraform-fixtures.sh", name, err)
		}
	}
}

// TestBenchPlanHasTheCLIsStructure holds the for_each benchmark's generated plan
// (benchgen.GenerateForEachTerraform) to the plans the real terraform and tofu CLIs made
// of the same HCL (the bench-for-each case), so the benchmark measures the shape users'
// plans have: the same resource changes (address, module instance, type, name, instance
// key, actions), the same attributes planned and left unknown, the same planned_values
// tree, and the same configuration (module call, for_each and every attribute's
// references). Values (names, ids, the provider's defaults) are not compared, and the
// generator may leave out top-level keys the rules do not read, never write one the CLIs
// do not.
func TestBenchPlanHasTheCLIsStructure(t *testing.T) {
	data, err := benchgen.GenerateForEachTerraform(BenchChanges)
	if err != nil {
		t.Fatal(err)
	}
	generated := structureOf(t, "generated", data)
	for _, cli := range CLIs {
		t.Run(cli, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(fixtures, BenchCase, cli+PlanSuffix))
			if err != nil {
				t.Fatal(err)
			}
			real := structureOf(t, cli, data)
			for _, key := range slices.Sorted(maps.Keys(real)) {
				if key == "top-level keys" {
					continue
				}
				if !slices.Equal(generated[key], real[key]) {
					t.Errorf("%s differs from %s's plan:\n%s", key, cli, lineDiff(generated[key], real[key]))
				}
			}
			for _, k := range generated["top-level keys"] {
				if !slices.Contains(real["top-level keys"], k) {
					t.Errorf("the generator writes the top-level key %q, which %s's plan has not", k, cli)
				}
			}
		})
	}
}

// structureOf is what TestBenchPlanHasTheCLIsStructure compares of a plan: named sets of
// lines, each sorted.
func structureOf(t *testing.T, name string, data []byte) map[string][]string {
	t.Helper()
	var plan struct {
		ResourceChanges []struct {
			Address, ModuleAddress, Mode, Type, Name string
			Index                                    any
			Change                                   struct {
				Actions      []string
				After        map[string]any
				AfterUnknown map[string]any `json:"after_unknown"`
			}
		} `json:"resource_changes"`
		PlannedValues struct {
			RootModule plannedModule `json:"root_module"`
		} `json:"planned_values"`
		Configuration struct {
			RootModule configModule `json:"root_module"`
		}
	}
	if err := json.Unmarshal(data, &plan); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	s := map[string][]string{"top-level keys": slices.Sorted(maps.Keys(top))}
	add := func(key, line string) { s[key] = append(s[key], line) }
	for _, rc := range plan.ResourceChanges {
		add("resource changes", fmt.Sprintf("%s module=%s %s %s.%s index=%v %v", rc.Address, rc.ModuleAddress, rc.Mode, rc.Type, rc.Name, rc.Index, rc.Change.Actions))
		add("planned attributes", fmt.Sprintf("%s after %v", rc.Type, paths("", rc.Change.After)))
		add("unknown attributes", fmt.Sprintf("%s after_unknown %v", rc.Type, paths("", rc.Change.AfterUnknown)))
	}
	var planned func(m plannedModule)
	planned = func(m plannedModule) {
		for _, r := range m.Resources {
			add("planned_values", fmt.Sprintf("%s in %q", r.Address, m.Address))
		}
		for _, c := range m.ChildModules {
			planned(c)
		}
	}
	planned(plan.PlannedValues.RootModule)
	var config func(at string, m configModule)
	config = func(at string, m configModule) {
		for _, r := range m.Resources {
			add("configuration", fmt.Sprintf("%s%s for_each %v", at, r.Address, r.ForEachExpression["references"]))
			for _, p := range references("", r.Expressions) {
				add("configuration", at+r.Address+" "+p)
			}
		}
		for callName, c := range m.ModuleCalls {
			add("configuration", fmt.Sprintf("%smodule.%s for_each %v", at, callName, c.ForEachExpression["references"]))
			for _, p := range references("", c.Expressions) {
				add("configuration", fmt.Sprintf("%smodule.%s %s", at, callName, p))
			}
			config(at+"module."+callName+".", c.Module)
		}
	}
	config("", plan.Configuration.RootModule)
	for k := range s {
		sort.Strings(s[k])
	}
	return s
}

type plannedModule struct {
	Address   string
	Resources []struct {
		Address string
	}
	ChildModules []plannedModule `json:"child_modules"`
}

type configModule struct {
	Resources []struct {
		Address           string
		ForEachExpression map[string]any `json:"for_each_expression"`
		Expressions       map[string]any
	}
	ModuleCalls map[string]struct {
		ForEachExpression map[string]any `json:"for_each_expression"`
		Expressions       map[string]any
		Module            configModule
	} `json:"module_calls"`
}

// paths are the attribute paths of a planned value: maps' keys and lists' positions, to
// the scalars.
func paths(at string, v any) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out = append(out, paths(at+"."+k, x[k])...)
		}
		if len(x) == 0 {
			out = append(out, at+"{}")
		}
	case []any:
		for i, e := range x {
			out = append(out, paths(fmt.Sprintf("%s[%d]", at, i), e)...)
		}
		if len(x) == 0 {
			out = append(out, at+"[]")
		}
	default:
		out = append(out, at)
	}
	return out
}

// references are an expressions object's attributes with what each holds: its references,
// or that it is a constant.
func references(at string, v any) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		if refs, ok := x["references"]; ok {
			return []string{fmt.Sprintf("%s references %v", at, refs)}
		}
		if _, ok := x["constant_value"]; ok {
			return []string{at + " constant"}
		}
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out = append(out, references(at+"."+k, x[k])...)
		}
	case []any:
		for i, e := range x {
			out = append(out, references(fmt.Sprintf("%s[%d]", at, i), e)...)
		}
	}
	return out
}

// lineDiff names the lines only one side has, once each.
func lineDiff(generated, real []string) string {
	var b strings.Builder
	generated, real = slices.Compact(slices.Clone(generated)), slices.Compact(slices.Clone(real))
	for _, l := range generated {
		if !slices.Contains(real, l) {
			b.WriteString("  only generated: " + l + "\n")
		}
	}
	for _, l := range real {
		if !slices.Contains(generated, l) {
			b.WriteString("  only the CLI's: " + l + "\n")
		}
	}
	return b.String()
}
