package docblock_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/docblock"
)

// TestBlocks reads blocks from a document written here: by marker, by language (skipping
// blocks of other languages), by first line, and an empty block.
func TestBlocks(t *testing.T) {
	dir := t.TempDir()
	doc := "# Title\n\n<!-- example: a -->\n```sh\necho a\necho b\n```\n\n## Other\n\n```ts\nts\n```\n\n```yaml\nname: y\nx: 1\n```\n\n<!-- example: empty -->\n```\n```\n"
	if err := os.WriteFile(filepath.Join(dir, "DOC.md"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(docblock.Root(t), filepath.Join(dir, "DOC.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, got, want string }{
		{"example", docblock.Example(t, rel, "a"), "echo a\necho b\n"},
		{"marker and language", docblock.After(t, rel, "\n## Other\n", "yaml"), "name: y\nx: 1\n"},
		{"first language after a heading", docblock.After(t, rel, "\n## Other\n", ""), "ts\n"},
		{"empty block", docblock.After(t, rel, "<!-- example: empty -->", ""), ""},
		{"starting line", docblock.Starting(t, rel, "echo b"), "echo b\n"},
		{"starting first line", docblock.Starting(t, rel, "name: y"), "name: y\nx: 1\n"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(docblock.Root(t), "go.mod")); err != nil {
		t.Errorf("Root has no go.mod: %v", err)
	}
}
