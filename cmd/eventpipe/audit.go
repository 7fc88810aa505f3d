package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/eventpipe/eventpipe/audit"
	"github.com/eventpipe/eventpipe/audit/cai"
	"github.com/eventpipe/eventpipe/audit/live"
	"github.com/eventpipe/eventpipe/internal/cli"
	"github.com/eventpipe/eventpipe/render"
)

// auditOptions are the flags of `eventpipe audit`.
type auditOptions struct {
	policyFlags
	projects      []string
	caiResources  []string
	caiIAM        []string
	caiSearch     []string
	stack         string
	stackFile     string
	stackDir      string
	env           string
	summaries     []string
	modelOut      string
	backlogWindow time.Duration
	// dial makes the Google clients of a live audit (live.Dial outside tests).
	dial func(ctx context.Context) (*live.Clients, error)
}

// newAuditCmd builds `eventpipe audit`: the policy rules on what exists in Google Cloud.
func newAuditCmd() *cobra.Command {
	return newAuditCmdWith(func(ctx context.Context) (*live.Clients, error) {
		if err := cli.CheckReachable(ctx, cli.PubsubEndpoints(true), cli.ReachTimeout); err != nil {
			return nil, err
		}
		return live.Dial(ctx)
	})
}

// newAuditCmdWith is newAuditCmd with the Google clients of a live audit made by dial.
func newAuditCmdWith(dial func(ctx context.Context) (*live.Clients, error)) *cobra.Command {
	opts := auditOptions{policyFlags: policyFlags{now: time.Now}, dial: dial}
	cmd := &cobra.Command{
		Use:   "audit (--project ID ... | --cai-resources FILE ...) [--stack ENV]",
		Short: "Check what exists in Google Cloud against the policy rules",
		Long: "audit reads the Pub/Sub topics and subscriptions of live projects (with Application Default\n" +
			"Credentials; PUBSUB_EMULATOR_HOST points it at an emulator), or of a whole organisation from\n" +
			"Cloud Asset Inventory exports, and evaluates the rules `eventpipe check` evaluates, with the\n" +
			"same configuration file, output formats and exit codes. Each finding names who manages the\n" +
			"resource (Pulumi, Terraform, Eventarc, Cloud Functions, nobody) and where to fix it.\n" +
			"With --stack, resources the stack declares are also compared with their live settings.\n\n" +
			"Exit codes: 0 no failing findings, 1 a deny (or a warning with --fail-on-warn, or an expired\n" +
			"waiver), 2 unusable input, usage, or a project that could not be read.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAudit(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), opts)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&opts.projects, "project", nil, "project ID to read live (repeat for several)")
	f.StringArrayVar(&opts.caiResources, "cai-resources", nil, "`FILE` written by gcloud asset export --content-type=resource (newline-delimited JSON; repeatable)")
	f.StringArrayVar(&opts.caiIAM, "cai-iam", nil, "`FILE` written by gcloud asset export --content-type=iam-policy (repeatable)")
	f.StringArrayVar(&opts.caiSearch, "cai-search", nil, "`FILE` written by gcloud asset search-all-resources --format=json (repeatable)")
	cli.StackFlag(f, &opts.stack, "", "compare with this stack rendered offline; its project is audited when no --project is given")
	cli.StackFileFlag(f, &opts.stackFile)
	cli.StackDirFlag(f, &opts.stackDir)
	f.StringVar(&opts.env, "env", "", "environment whose thresholds apply (default: the --stack name; else each resource's eventpipe_env label)")
	opts.policyFlags.register(f)
	f.StringArrayVar(&opts.summaries, "summary", nil, "also write a summary for people to `FILE`: .md for Markdown, .html for HTML (repeatable)")
	f.StringVar(&opts.modelOut, "model", "", "also write the audited estate to `FILE` as a pulumi stack export document (for conftest or opa eval)")
	cli.DurationFlag(f, &opts.backlogWindow, "backlog-window", 10*time.Minute, "how far back the oldest unacked message age is read from Cloud Monitoring")
	return cmd
}

func runAudit(ctx context.Context, stdout, stderr io.Writer, opts auditOptions) error {
	for _, s := range opts.summaries {
		if ext := strings.ToLower(filepath.Ext(s)); ext != ".md" && ext != ".html" {
			return usageError("--summary %q: name a .md or .html file", s)
		}
	}
	files := cai.Files{Resources: opts.caiResources, IAM: opts.caiIAM, Search: opts.caiSearch}
	a := audit.Options{
		Check: opts.options(opts.env), Projects: opts.projects, CAI: files,
		Stack:     render.Options{Stack: opts.stack, ConfigFile: opts.stackFile, StackDir: opts.stackDir},
		Summaries: opts.summaries, ModelOut: opts.modelOut, BacklogWindow: opts.backlogWindow, Dial: opts.dial,
	}
	if a.FromCAI() && len(opts.projects) > 0 {
		return usageError("--project reads live projects and --cai-* read exports: give one or the other")
	}
	if !a.FromCAI() && len(opts.projects) == 0 && opts.stack == "" && !opts.infoOnly() {
		return usageError("nothing to audit: give --project ID (repeatable), --cai-resources/--cai-iam/--cai-search files, or --stack ENV")
	}
	return verdict(stderr, func(log io.Writer) error { return audit.Run(ctx, stdout, log, a) })
}
