package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/eventpipe/eventpipe/policies/evaluate"
	"github.com/eventpipe/eventpipe/policies/plan"
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
		Use:   "check [FILE|-] [--stack ENV]",
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
	f.StringVar(&opts.stack, "stack", "", "render this stack (dev, staging, prod) offline and check it; also the environment for thresholds")
	stackFileFlag(f, &opts.stackFile)
	stackDirFlag(f, &opts.stackDir)
	f.StringVar(&opts.env, "env", "", "environment whose thresholds apply when checking a FILE (default: the --stack name)")
	opts.policyFlags.register(f)
	return cmd
}

func usageError(format string, a ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, a...)}
}

func runCheck(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, args []string, opts checkOptions) error {
	if len(args) == 0 && opts.stack == "" && !opts.infoOnly() {
		return usageError("nothing to check: give a plan FILE (- for standard input) or --stack ENV")
	}
	env := opts.env
	if env == "" {
		env = opts.stack
	}
	run, err := startPolicyRun(ctx, "check", opts.policyFlags, env)
	if err != nil {
		return err
	}
	// The rules compile while the plan is read and parsed.
	var (
		p       *plan.Plan
		source  string
		planErr error
	)
	if !opts.infoOnly() {
		if len(args) == 1 {
			source = args[0]
			p, planErr = readPlan(stdin, args[0])
		} else {
			source = "stack " + opts.stack
			p, planErr = renderPlan(ctx, opts)
		}
	}
	if done, err := run.info(stdout); done || err != nil {
		return err
	}
	if planErr != nil {
		return &exitError{code: 2, err: planErr}
	}
	res, err := run.check(ctx, p)
	if errors.Is(err, evaluate.ErrUnusableDocument) {
		return &exitError{code: 2, err: fmt.Errorf("%w; produce one with `pulumi preview --json --show-sames`, `pulumi stack export` or `terraform show -json PLANFILE`", err)}
	}
	if err != nil {
		return err
	}
	rep := run.report(source, res.Format, res.Resources, res.Findings)
	return run.finish(ctx, stdout, stderr, rep, slog.String("source", source), slog.String("format", res.Format),
		slog.Bool("complete", res.Complete), slog.Int("resources", res.Resources))
}

// readPlan reads and decodes a plan file (or standard input for "-"); each resource is
// located at the line of the file that names it.
func readPlan(stdin io.Reader, name string) (*plan.Plan, error) {
	var (
		data []byte
		err  error
	)
	if name == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading plan: %w", err)
	}
	file := name
	if name == "-" {
		file = "stdin"
	}
	p, err := plan.Parse(data, file)
	if err != nil {
		if errors.Is(err, plan.ErrUnrecognised) {
			return nil, fmt.Errorf("%w; produce one with `pulumi preview --json --show-sames`, `pulumi stack export` or `terraform show -json PLANFILE`", err)
		}
		return nil, err
	}
	return p, nil
}

// renderPlan renders the stack offline and points each resource at the line of the stack
// config file that declared it.
func renderPlan(ctx context.Context, opts checkOptions) (*plan.Plan, error) {
	res, err := render.Render(ctx, render.Options{Stack: opts.stack, ConfigFile: opts.stackFile, StackDir: opts.stackDir})
	if err != nil {
		return nil, fmt.Errorf("rendering stack %s: %w", opts.stack, err)
	}
	p, err := plan.Parse(res.JSON, "stack "+opts.stack)
	if err != nil {
		return nil, fmt.Errorf("reading the rendered plan of %s: %w", opts.stack, err)
	}
	p.Locations = make(map[string]plan.Location, len(res.Sources))
	for urn, loc := range res.Sources {
		p.Locations[urn] = plan.Location{File: relative(loc.File), Line: loc.Line}
	}
	return p, nil
}

// relative makes a stack config path relative to the working directory, as every location
// of a report is (the reports locate files from the repository root themselves).
func relative(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	if rel, err := filepath.Rel(wd, abs); err == nil {
		return rel
	}
	return path
}

func listRules(w io.Writer, rules []evaluate.Rule) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tLEVEL\tSEVERITY\tRULE\tTITLE")
	for _, r := range rules {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Level, r.Severity, r.Name, r.Title)
	}
	return tw.Flush()
}
