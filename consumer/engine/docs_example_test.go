package engine_test

import (
	"os"
	"strings"
	"testing"
)

// TestDocExample keeps the engine snippet of docs/consumer.md in step with Example,
// which go test runs and checks.
func TestDocExample(t *testing.T) {
	readme, err := os.ReadFile("../../docs/consumer.md")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "<!-- example: engine -->\n```go\n")
	if !ok {
		t.Fatal("docs/consumer.md has no engine example block")
	}
	snippet, _, _ := strings.Cut(after, "```")
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	// Every snippet line appears in Example, in order (the page may leave lines out).
	lines := strings.Split(string(example), "\n")
	at := 0
	for _, want := range strings.Split(snippet, "\n") {
		want = strings.TrimSpace(want)
		if want == "" {
			continue
		}
		for at < len(lines) && strings.TrimSpace(lines[at]) != want {
			at++
		}
		if at == len(lines) {
			t.Fatalf("docs/consumer.md engine snippet line %q is not in Example (example_test.go), in order", want)
		}
		at++
	}
}
