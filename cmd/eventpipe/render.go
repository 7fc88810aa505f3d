package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/eventpipe/eventpipe/internal/cli"
	"github.com/eventpipe/eventpipe/render"
)

// newRenderCmd builds `eventpipe render`: the offline plan of one stack.
func newRenderCmd() *cobra.Command {
	var opts render.Options
	var out string
	cmd := &cobra.Command{
		Use:   "render --stack NAME [--out FILE]",
		Short: "Render a stack's plan offline, in the shape of `pulumi preview --json`",
		Long: "render runs the stack's Pulumi program (the same one `pulumi up` runs) with mocks and the\n" +
			"stack's config file, and prints the planned resources as `pulumi preview --json` does.\n" +
			"No Pulumi CLI, plugin or credentials are needed. An invalid config prints every problem\n" +
			"with its location and fix, and no plan; the exit code is then 2.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cli.HumanFirst(cmd.ErrOrStderr(), func(error) int { return 2 }, func(log io.Writer) error {
				return runRender(cmd.Context(), cmd.OutOrStdout(), log, opts, out)
			})
		},
	}
	cli.StackFlag(cmd.Flags(), &opts.Stack, "", "the stack to render (required)")
	cmd.Flags().StringVar(&out, "out", "", "write the plan to FILE instead of standard output")
	cli.StackFileFlag(cmd.Flags(), &opts.ConfigFile)
	cli.DeprecatedAlias(cmd.Flags(), &opts.ConfigFile, "config", "stack-file")
	cli.StackDirFlag(cmd.Flags(), &opts.StackDir)
	_ = cmd.MarkFlagRequired("stack")
	return cmd
}

// runRender writes the plan of opts to out ("" or "-": stdout) and one log line to logOut.
func runRender(ctx context.Context, stdout, logOut io.Writer, opts render.Options, out string) error {
	log := slog.New(slog.NewJSONHandler(logOut, nil))
	res, err := render.Render(ctx, opts)
	if err != nil {
		log.LogAttrs(ctx, slog.LevelError, "render failed", slog.String("stack", opts.Stack), slog.String("error_type", "configuration"))
		return &cli.ExitError{Code: 2, Err: err}
	}
	if out == "" || out == "-" {
		_, err = stdout.Write(res.JSON)
	} else if err = os.WriteFile(out, res.JSON, 0o644); err != nil {
		err = &cli.ExitError{Code: 2, Err: fmt.Errorf("write plan: %w", err)}
	}
	if err != nil {
		return err
	}
	log.LogAttrs(ctx, slog.LevelInfo, "rendered", slog.String("stack", opts.Stack), slog.String("config", res.File.Path),
		slog.Int("steps", len(res.Plan.Steps)), slog.Int("pipelines", len(res.Stack.Pipelines)), slog.String("out", outName(out)))
	return nil
}

// outName names where the plan went, for the log.
func outName(out string) string {
	if out == "" || out == "-" {
		return "stdout"
	}
	return out
}
