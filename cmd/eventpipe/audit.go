package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/eventpipe/eventpipe/audit/cai"
	"github.com/eventpipe/eventpipe/audit/drift"
	"github.com/eventpipe/eventpipe/audit/inventory"
	"github.com/eventpipe/eventpipe/audit/live"
	"github.com/eventpipe/eventpipe/audit/model"
	"github.com/eventpipe/eventpipe/audit/ownership"
	"github.com/eventpipe/eventpipe/audit/summary"
	"github.com/eventpipe/eventpipe/policies/report"
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
		if err := checkReachable(ctx, pubsubEndpoints(true), reachTimeout); err != nil {
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
	f.StringVar(&opts.stack, "stack", "", "compare with this stack (dev, staging, prod) rendered offline; its project is audited when no --project is given")
	stackFileFlag(f, &opts.stackFile)
	stackDirFlag(f, &opts.stackDir)
	f.StringVar(&opts.env, "env", "", "environment whose thresholds apply (default: the --stack name; else each resource's eventpipe_env label)")
	opts.policyFlags.register(f)
	f.StringArrayVar(&opts.summaries, "summary", nil, "also write a summary for people to `FILE`: .md for Markdown, .html for HTML (repeatable)")
	f.StringVar(&opts.modelOut, "model", "", "also write the audited estate to `FILE` as a pulumi stack export document (for conftest or opa eval)")
	f.DurationVar(&opts.backlogWindow, "backlog-window", 10*time.Minute, "how far back the oldest unacked message age is read from Cloud Monitoring")
	return cmd
}

func runAudit(ctx context.Context, stdout, stderr io.Writer, opts auditOptions) error {
	for _, s := range opts.summaries {
		if ext := strings.ToLower(filepath.Ext(s)); ext != ".md" && ext != ".html" {
			return usageError("--summary %q: name a .md or .html file", s)
		}
	}
	fromCAI := len(opts.caiResources)+len(opts.caiIAM)+len(opts.caiSearch) > 0
	if fromCAI && len(opts.projects) > 0 {
		return usageError("--project reads live projects and --cai-* read exports: give one or the other")
	}
	if !fromCAI && len(opts.projects) == 0 && opts.stack == "" && !opts.infoOnly() {
		return usageError("nothing to audit: give --project ID (repeatable), --cai-resources/--cai-iam/--cai-search files, or --stack ENV")
	}
	env := opts.env
	if env == "" {
		env = opts.stack
	}
	run, err := startPolicyRun(ctx, "audit", opts.policyFlags, env)
	if err != nil {
		return err
	}
	if done, err := run.info(stdout); done || err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(stderr, nil))

	var stack *render.Result
	if opts.stack != "" {
		if stack, err = render.Render(ctx, render.Options{Stack: opts.stack, ConfigFile: opts.stackFile, StackDir: opts.stackDir}); err != nil {
			return &exitError{code: 2, err: fmt.Errorf("rendering stack %s: %w", opts.stack, err)}
		}
		if !fromCAI && len(opts.projects) == 0 {
			opts.projects = []string{stack.Stack.Project}
		}
	}
	inv, err := readInventory(ctx, opts, fromCAI, logger)
	if err != nil {
		return err
	}
	source := inv.Source
	doc := model.Build(inv)
	locate := func(string) (string, int) { return "", 0 }
	if stack != nil {
		for _, d := range drift.Compare(declared(stack.Plan), doc, inv) {
			doc.Drift = append(doc.Drift, model.Drift{URN: d.URN, Type: d.Type, Message: d.Message()})
		}
		locate = stackLocator(stack)
	}
	if opts.modelOut != "" {
		if err := writeModel(opts.modelOut, doc); err != nil {
			return err
		}
	}
	ev, err := evaluateAudit(ctx, run, doc, source, locate)
	if err != nil {
		return err
	}
	estate := ownership.Classify(inv, doc)
	annotate(ev.findings, func(urn, ruleID string) (string, string) {
		o, fix, ok := estate.Fix(urn, ruleID)
		if !ok {
			return "", ""
		}
		return o.String(), fix
	})
	inputFormat := "live"
	if fromCAI {
		inputFormat = "cloud-asset-inventory"
	}
	rep := run.report(source, inputFormat, ev.resources, ev.findings)
	if err := writeSummaries(opts, inv, doc, estate, stack, rep); err != nil {
		return err
	}
	return run.finish(ctx, stdout, stderr, rep, slog.String("source", source), slog.Int("projects", len(inv.Projects)),
		slog.Int("resources", ev.resources))
}

// readInventory reads the estate from the Cloud Asset Inventory files or the live projects.
func readInventory(ctx context.Context, opts auditOptions, fromCAI bool, logger *slog.Logger) (*inventory.Inventory, error) {
	if fromCAI {
		inv, err := cai.Read(cai.Files{Resources: opts.caiResources, IAM: opts.caiIAM, Search: opts.caiSearch})
		if err != nil {
			return nil, &exitError{code: 2, err: err}
		}
		return inv, nil
	}
	clients, err := opts.dial(ctx)
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	defer clients.Close()
	inv, err := live.Read(ctx, clients, live.Options{
		Projects: opts.projects, Now: opts.now, BacklogWindow: opts.backlogWindow, Logger: logger,
	})
	if err != nil {
		return nil, &exitError{code: 2, err: fmt.Errorf("reading live projects: %w", err)}
	}
	return inv, nil
}

// declared are the stack's custom resources, for the drift comparison.
func declared(p *render.Plan) []drift.Resource {
	var out []drift.Resource
	for _, s := range p.Steps {
		if s.NewState.Custom {
			out = append(out, drift.Resource{URN: s.URN, Type: s.NewState.Type, Inputs: s.NewState.Inputs})
		}
	}
	return out
}

// stackLocator points a declared URN at the stack config line that declared it.
func stackLocator(res *render.Result) func(string) (string, int) {
	return func(urn string) (string, int) {
		if loc, ok := res.Sources[urn]; ok {
			return relative(loc.File), loc.Line
		}
		return "", 0
	}
}

func writeModel(path string, doc *model.Document) error {
	data, err := doc.JSON()
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return &exitError{code: 2, err: fmt.Errorf("writing the audit model: %w", err)}
	}
	return nil
}

// writeSummaries writes the summary to each --summary file.
func writeSummaries(opts auditOptions, inv *inventory.Inventory, doc *model.Document, estate *ownership.Estate, stack *render.Result, rep *report.Report) error {
	if len(opts.summaries) == 0 {
		return nil
	}
	subOwners := map[string]ownership.Owner{}
	for urn, o := range estate.Owners {
		if r, ok := doc.Resource(urn); ok && r.Type == model.TypeSubscription {
			subOwners[r.Name] = o
		}
	}
	stackProject := ""
	if stack != nil {
		stackProject = stack.Stack.Project
	}
	sum := summary.Build(summary.Input{
		Source: inv.Source, Generated: opts.now(), Inventory: inv, Owners: subOwners, Failed: rep.Failed(),
		Findings: summaryFindings(rep, func(urn string) string {
			if r, ok := doc.Resource(urn); ok {
				return r.Project
			}
			return stackProject // drift findings are on the stack's URNs
		}),
	})
	for _, path := range opts.summaries {
		if err := writeSummary(path, sum); err != nil {
			return err
		}
	}
	return nil
}

func writeSummary(path string, s *summary.Summary) error {
	var buf bytes.Buffer
	write := s.Markdown
	if strings.EqualFold(filepath.Ext(path), ".html") {
		write = s.HTML
	}
	if err := write(&buf); err != nil {
		return &exitError{code: 2, err: err}
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return &exitError{code: 2, err: fmt.Errorf("writing the summary: %w", err)}
	}
	return nil
}
