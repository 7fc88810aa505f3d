// Command dlq-cases writes the generated cases — the dead-letter combination cases (dlq-*,
// tffixtures.DLQCaseFiles) and the module-shape cases (shape-*, tffixtures.ShapeCaseFiles)
// — and the modules they call into the Terraform fixtures folder; then
// scripts/terraform-fixtures.sh plans them.
//
// Usage: go run ./internal/testing/tffixtures/cmd/dlq-cases [FIXTURES]
// (default policies/testdata/terraform, run from the repository's root).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/eventpipe/eventpipe/internal/testing/tffixtures"
)

func main() {
	root := filepath.Join("policies", "testdata", "terraform")
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	if err := write(root); err != nil {
		fmt.Fprintln(os.Stderr, "dlq-cases:", err)
		os.Exit(1)
	}
}

func write(root string) error {
	files, err := tffixtures.DLQCaseFiles()
	if err != nil {
		return err
	}
	shapes, err := tffixtures.ShapeCaseFiles()
	if err != nil {
		return err
	}
	for name, data := range shapes {
		files[name] = data
	}
	for name, data := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	return nil
}
