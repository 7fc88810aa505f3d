// Command eventpipe is the operator CLI: it renders stacks offline, checks them
// against the policy rules, runs the pipeline locally and replays dead letters.
package main

import (
	"github.com/spf13/cobra"

	"github.com/eventpipe/eventpipe/internal/cli"
)

func main() { cli.Run(newRootCmd()) }

// newRootCmd builds the command tree. Each subcommand lives in its own file.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "eventpipe",
		Short: "Reliable Pub/Sub -> Cloud Run -> Firestore pipelines, as code",
	}
	cli.SetVersion(root)
	root.AddCommand(
		cli.NewVersionCmd(root.Name()),
		// Subcommands register here, one line each: newRenderCmd(), newCheckCmd(), ...
		newRenderCmd(),
		newCheckCmd(),
		cli.NewDevCmd(),
		cli.NewReplayCmd(),
		newAuditCmd(),
	)
	cli.Prepare(root)
	return root
}
