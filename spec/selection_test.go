package spec_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/eventpipe/eventpipe/spec"
)

// TestFindStackDir: the stack folder is the stackConfigDir of the nearest Pulumi.yaml above.
func TestFindStackDir(t *testing.T) {
	dir, err := spec.FindStackDir("../render/testdata")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.Abs("../stacks")
	if dir != want {
		t.Errorf("FindStackDir = %s, want %s", dir, want)
	}
	if _, err := spec.FindStackDir(os.TempDir()); err == nil {
		t.Error("found a Pulumi.yaml above the temp dir")
	}
}
