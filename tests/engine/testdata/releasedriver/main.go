// Command releasedriver deploys a stack with the components of the release it is built
// in. tests/engine (upgrade_test.go) copies it into an export of the release's commit
// and builds it there, so that the release's own components.Program runs, as an
// Automation API inline program, under the same Pulumi CLI and stand-in plugins as the
// code at HEAD. Usage: releasedriver STACK WORKDIR PULUMI_ROOT; the stack's config is
// WORKDIR/Pulumi.STACK.yaml, and the environment (PULUMI_HOME, PULUMI_BACKEND_URL, the
// stand-in's variables) is the caller's.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/eventpipe/eventpipe/components"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: releasedriver STACK WORKDIR PULUMI_ROOT")
		os.Exit(2)
	}
	if err := up(context.Background(), os.Args[1], os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func up(ctx context.Context, stackName, work, root string) error {
	cmd, err := auto.NewPulumiCommand(&auto.PulumiCommandOptions{Root: root})
	if err != nil {
		return fmt.Errorf("the Pulumi CLI under %s: %w", root, err)
	}
	project := workspace.Project{Name: "eventpipe", Runtime: workspace.NewProjectRuntimeInfo("go", nil)}
	stack, err := auto.UpsertStackInlineSource(ctx, stackName, "eventpipe", components.Program(components.ProgramOptions{}),
		auto.Pulumi(cmd), auto.WorkDir(work), auto.Project(project), auto.PulumiHome(os.Getenv("PULUMI_HOME")),
		auto.SecretsProvider("passphrase"))
	if err != nil {
		return fmt.Errorf("stack %s: %w", stackName, err)
	}
	// The release's stacks did not all come up in one `up` (a pulling consumer's service
	// could be created before its subscription); its users ran `up` again.
	var last error
	for range 2 {
		res, err := stack.Up(ctx)
		if err == nil {
			fmt.Println(res.Summary.Result, *res.Summary.ResourceChanges)
			return nil
		}
		fmt.Fprintf(os.Stderr, "up of %s with the release's code: %v\n", stackName, err)
		last = err
	}
	return fmt.Errorf("up of %s with the release's code, twice: %w", stackName, last)
}
