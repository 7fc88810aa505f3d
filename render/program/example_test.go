package program_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/render/program"
	"github.com/eventpipe/eventpipe/spec"
)

// checkout is a team's program: one pipeline, its settings from the stack's config.
func checkout(ctx *pulumi.Context) error {
	cfg := config.New(ctx, "")
	_, err := components.NewPipeline(ctx, "orders", &components.PipelineArgs{
		Project:       pulumi.String(cfg.Require("project")),
		ProjectNumber: pulumi.String(cfg.Require("projectNumber")),
		Consumer: spec.Consumer{
			Image:       pulumi.String(cfg.Require("consumerImage")),
			StoreSecret: cfg.RequireSecret("storeUrl"),
		},
		Subscriptions: map[string]spec.Subscription{"materializer": {Delivery: "push"}},
	})
	return err
}

// Example renders a team's program with its dev stack's config file; a team's
// TestPlan does the same with program.Test, which also writes $EVENTPIPE_PLAN.
func Example() {
	res, err := program.Render(context.Background(), "testdata/team/Pulumi.dev.yaml", checkout)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Project, res.Stack, len(res.Plan.StepsOfType(components.TypePipeline)), "pipeline")
	// Output: checkout dev 1 pipeline
}

// TestWritesThePlan: Test writes the plan to $EVENTPIPE_PLAN for eventpipe check.
func TestWritesThePlan(t *testing.T) {
	out := filepath.Join(t.TempDir(), "plan.json")
	t.Setenv(program.PlanEnv, out)
	res := program.Test(t, "testdata/team/Pulumi.dev.yaml", checkout)
	data, err := os.ReadFile(out)
	if err != nil || string(data) != string(res.JSON) {
		t.Fatalf("plan file: %v", err)
	}
	if !strings.Contains(string(data), `"urn:pulumi:dev::checkout::`) {
		t.Errorf("the plan's URNs are not in the team's project and stack")
	}
}

// TestRenderErrors: a misnamed stack file, a stack file outside any project, and a
// program whose component refuses its arguments are errors naming the cause.
func TestRenderErrors(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "Pulumi.dev.yaml")
	if err := os.WriteFile(outside, []byte("config: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	broken := func(ctx *pulumi.Context) error {
		_, err := components.NewPipeline(ctx, "orders", &components.PipelineArgs{
			Project: pulumi.String("acme-shop-dev"), ProjectNumber: pulumi.String("210987654321"),
			Consumer:      spec.Consumer{Image: pulumi.String("europe-west1-docker.pkg.dev/acme-shop-dev/eventpipe/consumer")},
			Subscriptions: map[string]spec.Subscription{"materializer": {Delivery: "push"}},
		})
		return err
	}
	for _, tc := range []struct {
		file string
		run  pulumi.RunFunc
		want string
	}{
		{"testdata/team/dev.yaml", checkout, "Pulumi.<stack>.yaml"},
		{outside, checkout, "no Pulumi.yaml"},
		{"testdata/team/Pulumi.dev.yaml", broken, "add a tag or digest"},
	} {
		if _, err := program.Render(context.Background(), tc.file, tc.run); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.file, err, tc.want)
		}
	}
}
