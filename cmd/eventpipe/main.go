// Command eventpipe is the operator CLI: it renders stacks offline, checks them
// against the policy rules, runs the pipeline locally and replays dead letters.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/eventpipe/eventpipe/internal/release"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}

// exitError carries a process exit code out of a subcommand (conftest's
// convention: 0 clean, 1 policy failures, 2 unusable input or usage).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// run executes the CLI with args and returns the process exit code.
func run(ctx context.Context, args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(os.Stderr, "eventpipe:", err)
	if ee, ok := err.(*exitError); ok {
		return ee.code
	}
	return 2
}

// newRootCmd builds the command tree. Each subcommand lives in its own file.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "eventpipe",
		Short:         "Reliable Pub/Sub -> Cloud Run -> Firestore pipelines, as code",
		Version:       release.ModuleVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("eventpipe {{.Version}}\n")
	root.SetFlagErrorFunc(suggestFlag) // subcommands inherit it
	root.AddCommand(
		&cobra.Command{
			Use:   "version",
			Short: "Print the eventpipe module version this binary was built from",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "eventpipe %s\n", release.ModuleVersion())
				return err
			},
		},
		// Subcommands register here, one line each: newRenderCmd(), newCheckCmd(), ...
		newRenderCmd(),
		newCheckCmd(),
		newDevCmd(),
		newReplayCmd(),
		newAuditCmd(),
	)
	deprecationsToStderr(root)
	return root
}
