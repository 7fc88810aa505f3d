package components_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/render"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// TestGrantsToTheAgentWaitForIt: every grant naming the Pub/Sub service
// agent waits for the agent's ServiceIdentity, which makes sure it exists.
func TestGrantsToTheAgentWaitForIt(t *testing.T) {
	plan := declareStack(t, baseStack)
	identity := one(t, plan, tIdentity, "orders-pubsub-agent")
	if input(identity, "service") != "pubsub.googleapis.com" || input(identity, "project") != "acme-dev" {
		t.Errorf("service identity = %v", identity.Inputs)
	}
	n := 0
	for _, typ := range []string{tTopicIAM, tSubIAM, tAccountIAM} {
		for name, g := range custom(plan, typ) {
			if input(g, "member") != agentMember {
				continue
			}
			n++
			if !slices.Contains(g.Dependencies, identity.URN) {
				t.Errorf("grant %s to the agent does not wait for it: %v", name, g.Dependencies)
			}
		}
	}
	if n != 5 { // two DLQ publishers, two agent subscribers, one token creator
		t.Errorf("%d grants to the agent, want 5", n)
	}
}

// TestProjectNumberIsChecked: a configured project number other than the
// project's own fails the deployment, naming the key and the number to set.
func TestProjectNumberIsChecked(t *testing.T) {
	for _, number := range []string{"123456789012", "999999999999"} {
		mocks := render.NewMocks(render.Project, "dev", &spec.Stack{Project: "acme-dev", ProjectNumber: number})
		err := pulumi.RunErr(func(ctx *pulumi.Context) error {
			_, err := components.NewPipeline(ctx, "orders", minimalArgs())
			return err
		}, pulumi.WithMocks(render.Project, "dev", mocks))
		wrong := number != "123456789012"
		switch {
		case !wrong && err != nil:
			t.Errorf("matching project number refused: %v", err)
		case wrong && (err == nil || !strings.Contains(err.Error(), "projectNumber") || !strings.Contains(err.Error(), `"`+number+`"`)):
			t.Errorf("project number 123456789012 for a project numbered %s: err = %v, want one naming projectNumber and the number", number, err)
		}
	}
	// The render of a stack checks its own number against itself.
	if _, err := render.RunProgram(context.Background(), "dev", spec.MapSource{}, &spec.Stack{Project: "acme-dev", ProjectNumber: "123456789012"},
		func(ctx *pulumi.Context) error {
			_, err := components.NewPipeline(ctx, "orders", minimalArgs())
			return err
		}); err != nil {
		t.Error(err)
	}
}

// TestRenamedMetricsAreReplaced: a log-based metric's name holds the
// environment; changing eventpipe:env must replace it (deleting the old
// one), not rename it in place (which leaves the old metric behind).
func TestRenamedMetricsAreReplaced(t *testing.T) {
	err, registered := runErr(func(ctx *pulumi.Context) error {
		_, err := components.NewPipeline(ctx, "orders", minimalArgs())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range registered {
		if r.Type != tMetric {
			continue
		}
		n++
		if !slices.Contains(r.ReplaceOnChanges, "name") {
			t.Errorf("metric %s: replaceOnChanges = %v, want name", r.Name, r.ReplaceOnChanges)
		}
		if name := r.Inputs["name"].StringValue(); !strings.Contains(name, "/dev/") {
			t.Errorf("metric name %s does not hold the environment", name)
		}
	}
	if n == 0 {
		t.Fatal("no metrics")
	}
}
