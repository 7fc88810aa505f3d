package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/internal/cli"
	"github.com/eventpipe/eventpipe/render/program"
	"github.com/eventpipe/eventpipe/spec"
)

// TestCheckATeamsProgram follows the README's route for a team's own program: its
// test renders it with render/program (writing $EVENTPIPE_PLAN), and `eventpipe check
// PLAN --env dev` judges the plan with the rules eventpipe's stacks get, offline.
func TestCheckATeamsProgram(t *testing.T) {
	one := 1
	run := func(ctx *pulumi.Context) error {
		cfg := config.New(ctx, "")
		_, err := components.NewPipeline(ctx, "orders", &components.PipelineArgs{
			Project:       pulumi.String(cfg.Require("project")),
			ProjectNumber: pulumi.String(cfg.Require("projectNumber")),
			Consumer:      spec.Consumer{Image: pulumi.String(cfg.Require("consumerImage")), StoreSecret: cfg.RequireSecret("storeUrl"), MinInstances: &one},
			Subscriptions: map[string]spec.Subscription{"materializer": {Delivery: "push"}, "warehouse": {Delivery: "pull"}},
		})
		return err
	}
	plan := filepath.Join(t.TempDir(), "plan.json")
	t.Setenv(program.PlanEnv, plan)
	program.Test(t, "../../render/program/testdata/team/Pulumi.dev.yaml", run)
	out, errOut, err := executeLog(t, "check", plan, "--env", "dev")
	if err != nil {
		t.Fatalf("eventpipe check %s --env dev: exit %d, %v\n%s\n%s", plan, cli.ExitCode(err), err, out, errOut)
	}
	if !strings.Contains(errOut, `"passed":true`) || strings.Contains(errOut, `"resources":0`) {
		t.Errorf("check did not judge the team's plan:\n%s\n%s", out, errOut)
	}
}
