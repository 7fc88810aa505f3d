// Command eventpipe-dev is the local pipeline on its own: `eventpipe dev` and
// `eventpipe replay` without the rest of the CLI. It runs a stack's pipelines on this
// machine (pstest, one consumer per pipeline on bbolt, the push bridge) and replays
// their dead letters, and it compiles in a fraction of the full CLI's time on a new
// machine: it links no Pulumi program, no Pulumi GCP SDK and no OPA (the README's run
// command is `go run ./cmd/eventpipe-dev`; scripts/cold-run.sh measures it).
//
//	eventpipe-dev [--stack dev] [--serve] [flags]   the same flags as eventpipe dev
//	eventpipe-dev replay --subscription S --topic T  the same as eventpipe replay
package main

import (
	"github.com/spf13/cobra"

	"github.com/eventpipe/eventpipe/internal/cli"
)

func main() { cli.Run(newRootCmd()) }

// newRootCmd is `eventpipe dev` as the root command, with replay and version beside it.
func newRootCmd() *cobra.Command {
	root := cli.NewDevCmd()
	root.Use = "eventpipe-dev [--stack dev] [--serve]"
	cli.SetVersion(root)
	root.AddCommand(cli.NewReplayCmd(), cli.NewVersionCmd(root.Name()))
	cli.Prepare(root)
	return root
}
