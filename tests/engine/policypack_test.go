package engine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/components"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/pubsub"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// TestPolicyPackUnderTheRealEngine runs policies/ as a real policy pack (`pulumi preview
// --policy-pack`, with the analyzer plugin found on PATH as users install it): the dev
// stack previews clean, and the same program plus one subscription declared without a
// dead-letter policy (as a team's own program might) is denied.
func TestPolicyPackUnderTheRealEngine(t *testing.T) {
	plugins := pulumiEngine(t).analyzerDir
	pack, err := filepath.Abs(filepath.Join(repo, "policies"))
	if err != nil {
		t.Fatal(err)
	}
	env := projectsOf(t, filepath.Join(repo, "stacks", "Pulumi.dev.yaml"))
	env["PATH"] = plugins + string(os.PathListSeparator) + os.Getenv("PATH")
	config := filepath.Join(repo, "stacks", "Pulumi.dev.yaml")
	shared := components.Program(components.ProgramOptions{})

	t.Run("compliant", func(t *testing.T) {
		t.Parallel()
		d := deploy(t, "dev", config, shared, env)
		if _, err := d.stack.Preview(t.Context(), optpreview.PolicyPacks(pack)); err != nil {
			t.Fatalf("the dev stack under the policy pack: %v", err)
		}
	})
	t.Run("no dead-letter policy", func(t *testing.T) {
		t.Parallel()
		withRaw := func(ctx *pulumi.Context) error {
			if err := shared(ctx); err != nil {
				return err
			}
			_, err := pubsub.NewSubscription(ctx, "raw-no-dlq", &pubsub.SubscriptionArgs{
				Project: pulumi.String("eventpipe-dev"),
				Name:    pulumi.String("raw-no-dlq"),
				Topic:   pulumi.String("projects/eventpipe-dev/topics/raw"),
			})
			return err
		}
		d := deploy(t, "dev", config, withRaw, env)
		_, err := d.stack.Preview(t.Context(), optpreview.PolicyPacks(pack))
		if err == nil {
			t.Fatal("a subscription without a dead-letter policy passed the policy pack")
		}
		if msg := err.Error(); !strings.Contains(msg, "raw-no-dlq") || !strings.Contains(msg, "mandatory") {
			t.Errorf("the denial does not name the subscription and a mandatory policy:\n%s", msg)
		}
	})
}
