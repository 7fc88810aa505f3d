package tests

import (
	"os"
	"testing"
)

// runStage runs one stage of a long integration run unless SKIP_<name> is set
// (SKIP_teardown=1 keeps the real-cloud run's stack for debugging). It is
// terratest's test_structure.RunTestStage convention, kept here in a few lines:
// that package imports terratest's AWS and Kubernetes modules, some 540
// packages a cold `make lint` compiled and vetted for this one helper.
func runStage(t *testing.T, name string, stage func()) {
	t.Helper()
	if os.Getenv("SKIP_"+name) != "" {
		t.Logf("SKIP_%s is set: the %s stage is skipped", name, name)
		return
	}
	stage()
}

// TestRunStage: a stage runs exactly when its own SKIP_ variable is unset or
// empty, whatever the other stages' variables hold.
func TestRunStage(t *testing.T) {
	stages := []string{"deploy", "validate", "teardown"}
	for mask := 0; mask < 1<<len(stages); mask++ { // every combination of set variables
		var set []string
		for i, name := range stages {
			value := ""
			if mask&(1<<i) != 0 {
				value = "1"
				set = append(set, "SKIP_"+name)
			}
			t.Setenv("SKIP_"+name, value)
		}
		for i, name := range stages {
			ran := false
			runStage(t, name, func() { ran = true })
			if skipped := mask&(1<<i) != 0; ran == skipped {
				t.Errorf("with %v set, stage %s ran = %v", set, name, ran)
			}
		}
	}
}
