package render_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/consumer/limits"
	"github.com/eventpipe/eventpipe/render"
	"github.com/eventpipe/eventpipe/spec"
)

// readmeBlock returns the fenced block that follows `<!-- example: name -->` in doc.
func readmeBlock(t *testing.T, doc, name string) string {
	t.Helper()
	_, after, ok := strings.Cut(doc, "<!-- example: "+name+" -->")
	if !ok {
		t.Fatalf("README has no example %q", name)
	}
	_, body, ok := strings.Cut(after, "```")
	if !ok {
		t.Fatalf("example %q has no fenced block", name)
	}
	_, body, _ = strings.Cut(body, "\n") // drop the info string
	block, _, ok := strings.Cut(body, "```")
	if !ok {
		t.Fatalf("example %q is not closed", name)
	}
	return block
}

// TestReadmeExamples renders the README's configuration examples: the valid
// one must plan, the broken one must print exactly the README's output.
func TestReadmeExamples(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(readme)
	dir := t.TempDir()
	for name, content := range map[string]string{"stack.yaml": readmeBlock(t, doc, "stack"), "broken.yaml": readmeBlock(t, doc, "broken")} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)

	res, err := render.Render(context.Background(), render.Options{Stack: "prod", ConfigFile: "stack.yaml"})
	if err != nil {
		t.Fatalf("README stack example: %v", err)
	}
	checkReliable(t, res.Plan)
	if got := len(res.Plan.StepsOfType(components.TypePipeline)); got != 2 {
		t.Errorf("pipelines = %d, want 2", got)
	}
	for _, s := range res.Plan.StepsOfType("gcp:pubsub/subscription:Subscription") {
		in := s.NewState.Inputs
		switch in["name"] {
		case "orders-materializer":
			if in["ackDeadlineSeconds"] != float64(30) || in["deadLetterPolicy"].(map[string]any)["maxDeliveryAttempts"] != float64(10) {
				t.Errorf("orders-materializer: %v", in)
			}
		case "invoices-render.dlq-sub":
			if in["messageRetentionDuration"] != "604800s" {
				t.Errorf("DLQ retention = %v, want 7d", in["messageRetentionDuration"])
			}
		}
	}

	_, err = render.Render(context.Background(), render.Options{Stack: "prod", ConfigFile: "broken.yaml"})
	if err == nil {
		t.Fatal("README broken example rendered")
	}
	want := strings.TrimSpace(readmeBlock(t, doc, "broken-output"))
	if got := "eventpipe: " + err.Error(); got != want {
		t.Errorf("README broken-example output is stale.\ngot:\n%s\nREADME:\n%s", got, want)
	}
}

// TestReadmeSizingFigure keeps the README's sizing example true to the
// consumer's memory model, which its owners may retune.
func TestReadmeSizingFigure(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("a default 512Mi instance takes\n%d maximum-size messages at once", limits.MaxConcurrency(512<<20, limits.MaxMessageBytes, spec.DefaultConcurrency))
	if !strings.Contains(string(readme), want) {
		t.Errorf("README does not say %q", want)
	}
}
