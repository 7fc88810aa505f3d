package tests

import (
	"os/exec"
	"strings"
	"testing"
)

// TestProductImportsNoScaffolding holds the module's layout: what only tests use lives under
// internal/testing/ and tests/, and no package outside them imports it in its non-test
// files, directly or through another package (go list's Deps are the non-test closure).
func TestProductImportsNoScaffolding(t *testing.T) {
	const module = "github.com/eventpipe/eventpipe/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{join .Deps \" \"}}", "../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	scaffolding := func(p string) bool {
		rel := strings.TrimPrefix(p, module)
		return strings.HasPrefix(rel, "internal/testing/") || rel == "tests" || strings.HasPrefix(rel, "tests/")
	}
	var product int
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, "\t")
		if scaffolding(pkg) || strings.HasPrefix(pkg, module+"examples/") {
			continue
		}
		product++
		for _, d := range strings.Fields(deps) {
			if scaffolding(d) {
				t.Errorf("%s depends on the test scaffolding %s", pkg, d)
			}
		}
	}
	if product < 30 {
		t.Fatalf("go list found only %d product packages:\n%s", product, out)
	}
}
