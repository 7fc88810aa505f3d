package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/eventpipe/eventpipe/internal/cli"
	"github.com/eventpipe/eventpipe/policies/check"
	"github.com/eventpipe/eventpipe/render"
)

// checkOptions are the flags of `eventpipe check`.
type checkOptions struct {
	policyFlags
	stack     string
	stackFile string
	stackDir  string
	env       string
}

// newCheckCmd builds `eventpipe check`: the policy rules on a plan file or a rendered stack.
func newCheckCmd() *cobra.Command {
	opts := checkOptions{policyFlags: policyFlags{now: time.Now}}
	cmd := &cobra.Command{
		Use:   "check [FILE|-] [--stack NAME]",
		Short: "Check a plan or a rendered stack against the policy rules",
		Long: "check evaluates eventpipe's OPA rules on a `pulumi preview --json` document (with or\n" +
			"without --show-sames), a `pulumi stack export`, a `terraform show -json` plan, or — with\n" +
			"--stack and no FILE — the stack rendered offline (no cloud credentials needed).\n" +
			"FILE - reads standard input. The same rules run under conftest (--namespace eventpipe)\n" +
			"and opa eval (data.eventpipe.deny): --print-data prints the --data document they need.\n\n" +
			"Exit codes (as conftest): 0 no failing findings, 1 a deny (or a warning with\n" +
			"--fail-on-warn, or an expired waiver), 2 unusable input or usage.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCheck(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args, opts)
		},
	}
	f := cmd.Flags()
	cli.StackFlag(f, &opts.stack, "", "render this stack offline and check it; also the environment for thresholds")
	cli.StackFileFlag(f, &opts.stackFile)
	cli.StackDirFlag(f, &opts.stackDir)
	f.StringVar(&opts.env, "env", "", "environment whose thresholds apply when checking a FILE (default: the --stack name); one the rules do not name gets the default profile, a misspelling of one they do is refused")
	opts.policyFlags.register(f)
	return cmd
}

func usageError(format string, a ...any) error {
	return &cli.ExitError{Code: 2, Err: fmt.Errorf(format, a...)}
}

func runCheck(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, args []string, opts checkOptions) error {
	if len(args) == 0 && opts.stack == "" && !opts.infoOnly() {
		return usageError("nothing to check: give a plan FILE (- for standard input) or --stack NAME")
	}
	in := check.Input{Stdin: stdin, Stack: render.Options{Stack: opts.stack, ConfigFile: opts.stackFile, StackDir: opts.stackDir}}
	if len(args) == 1 {
		in.File = args[0]
	}
	return verdict(stderr, func(log io.Writer) error { return check.Check(ctx, stdout, log, opts.options(opts.env), in) })
}
