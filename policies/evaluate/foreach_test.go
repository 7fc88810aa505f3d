package evaluate

import (
	"maps"
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/benchgen"
)

// TestForEachBenchDocumentsAgree: the benchmark's for_each plan (references indexed by
// each.key, each.value of a for_each over resources, module instances) and the preview of
// the same resources get the same findings, rule by rule: EP001 denies exactly on the
// pipelines without dead-lettering and no EP001 warning, so every link of the plan was
// resolved to its instance (a link left to one of several instances would show as
// warnings here, and as quadratic time in BenchmarkForEach).
func TestForEachBenchDocumentsAgree(t *testing.T) {
	e := allRules(t, nil)
	const n = 1120 // 200 pipelines, two module instances
	plain := 0
	for i := range benchgen.ForEachPipelines(n) {
		if i%10 == 0 {
			plain++
		}
	}
	counts := map[string]map[string]int{}
	for name, generate := range map[string]func(int) ([]byte, error){"terraform": benchgen.GenerateForEachTerraform, "preview": benchgen.GenerateForEachPreview} {
		data, err := generate(n)
		if err != nil {
			t.Fatal(err)
		}
		counts[name] = map[string]int{}
		for _, f := range check(t, e, data).Findings {
			counts[name][string(f.Level)+":"+f.Rule.ID]++
		}
	}
	if got := counts["terraform"]["deny:EP001"]; got != plain || counts["terraform"]["warn:EP001"] != 0 {
		t.Errorf("plan: %d EP001 denies and %d warnings, want %d and none", got, counts["terraform"]["warn:EP001"], plain)
	}
	if !maps.Equal(counts["terraform"], counts["preview"]) {
		t.Errorf("the plan's findings %v differ from the preview's %v", counts["terraform"], counts["preview"])
	}
}
