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
	"github.com/eventpipe/eventpipe/internal/testing/docblock"
	"github.com/eventpipe/eventpipe/render"
	"github.com/eventpipe/eventpipe/spec"
)

// TestReadmeExamples renders the README's configuration examples: the valid
// one must plan, the broken one must print exactly the README's output.
func TestReadmeExamples(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{"stack.yaml": docblock.Example(t, "README.md", "stack"), "broken.yaml": docblock.Example(t, "README.md", "broken")} {
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
	want := strings.TrimSpace(docblock.Example(t, "README.md", "broken-output"))
	if got := "eventpipe: " + err.Error(); got != want {
		t.Errorf("README broken-example output is stale.\ngot:\n%s\nREADME:\n%s", got, want)
	}
}

// TestReadmeSizingFigure keeps the sizing example of docs/deploy.md true to the
// consumer's memory model, which its owners may retune.
func TestReadmeSizingFigure(t *testing.T) {
	readme, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("a default 512Mi instance takes\n%d maximum-size messages at once", limits.MaxConcurrency(512<<20, limits.MaxMessageBytes, spec.DefaultConcurrency))
	if !strings.Contains(string(readme), want) {
		t.Errorf("docs/deploy.md does not say %q", want)
	}
}
