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
	"github.com/eventpipe/eventpipe/render"
)

// auditOptions are the flags of `eventpipe audit`.
type auditOptions struct {
	projects      []string
	caiResources  []string
	caiIAM        []string
	caiSearch     []string
	stack         string
	stackDir      string
	env           string
	output        string
	config        string
	failOnWarn    bool
	listRules     bool
	evaluator     string
	summaries     []string
	modelOut      string
	backlogWindow time.Duration
	now           func() time.Time
	// dial makes the Google clients of a live audit (live.Dial outside tests).
	dial func(ctx context.Context) (*live.Clients, error)
}

// newAuditCmd builds `eventpipe audit`: the policy rules on what exists in Google Cloud.
func newAuditCmd() *cobra.Command {
	return newAuditCmdWith(func(ctx context.Context) (*live.Clients, error) { return live.Dial(ctx) })
}

// newAuditCmdWith is newAuditCmd with the Google clients of a live audit made by dial.
func newAuditCmdWith(dial func(ctx context.Context) (*live.Clients, error)) *cobra.Command {
	opts := auditOptions{now: time.Now, dial: dial}
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
	f.StringArrayVar(&opts.caiResources, "cai-resources", nil, "`gcloud asset export --content-type=resource` output (newline-delimited JSON; repeatable)")
	f.StringArrayVar(&opts.caiIAM, "cai-iam", nil, "`gcloud asset export --content-type=iam-policy` output (repeatable)")
	f.StringArrayVar(&opts.caiSearch, "cai-search", nil, "`gcloud asset search-all-resources --format=json` output (repeatable)")
	f.StringVar(&opts.stack, "stack", "", "compare with this stack (dev, staging, prod) rendered offline; its project is audited when no --project is given")
	f.StringVar(&opts.stackDir, "stack-dir", "", "folder of the stack config files (default: found from Pulumi.yaml)")
	f.StringVar(&opts.env, "env", "", "environment whose thresholds apply (default: the --stack name; else each resource's eventpipe_env label)")
	f.StringVarP(&opts.output, "output", "o", "text", "output format: text, json, sarif, junit, github")
	f.StringVar(&opts.config, "config", "", "check configuration file: thresholds per environment and waivers")
	f.BoolVar(&opts.failOnWarn, "fail-on-warn", false, "exit 1 on warnings too")
	f.BoolVar(&opts.listRules, "list-rules", false, "list the rules (id, level, severity, title) and exit")
	f.StringVar(&opts.evaluator, "evaluator", "", "rule evaluator: ir (default) or topdown")
	f.StringArrayVar(&opts.summaries, "summary", nil, "also write a summary for people to this file: .md for Markdown, .html for HTML (repeatable)")
	f.StringVar(&opts.modelOut, "model", "", "also write the audited estate as a `pulumi stack export` document to this file (for conftest or opa eval)")
	f.DurationVar(&opts.backlogWindow, "backlog-window", 10*time.Minute, "how far back the oldest unacked message age is read from Cloud Monitoring")
	return cmd
}

func runAudit(ctx context.Context, stdout, stderr io.Writer, opts auditOptions) error {
	if !validAuditFormat(opts.output) {
		return usageError("--output %q: use one of text, json, sarif, junit, github", opts.output)
	}
	for _, s := range opts.summaries {
		if ext := strings.ToLower(filepath.Ext(s)); ext != ".md" && ext != ".html" {
			return usageError("--summary %q: name a .md or .html file", s)
		}
	}
	fromCAI := len(opts.caiResources)+len(opts.caiIAM)+len(opts.caiSearch) > 0
	if fromCAI && len(opts.projects) > 0 {
		return usageError("--project reads live projects and --cai-* read exports: give one or the other")
	}
	env := opts.env
	if env == "" {
		env = opts.stack
	}
	rules, err := loadAuditRules(ctx, opts.config, env, opts.evaluator, opts.stack != "")
	if err != nil {
		return err
	}
	if opts.listRules {
		return rules.list(stdout)
	}
	logger := slog.New(slog.NewJSONHandler(stderr, nil))

	var stack *render.Result
	if opts.stack != "" {
		if stack, err = render.Render(ctx, render.Options{Stack: opts.stack, StackDir: opts.stackDir}); err != nil {
			return &exitError{code: 2, err: fmt.Errorf("rendering stack %s: %w", opts.stack, err)}
		}
		if !fromCAI && len(opts.projects) == 0 {
			opts.projects = []string{stack.Stack.Project}
		}
	}
	if !fromCAI && len(opts.projects) == 0 {
		return usageError("nothing to audit: give --project ID (repeatable), --cai-resources/--cai-iam/--cai-search files, or --stack ENV")
	}

	inv, err := readInventory(ctx, opts, fromCAI, logger)
	if err != nil {
		return err
	}
	source := inv.Source
	doc := model.Build(inv)
	if opts.modelOut != "" {
		if err := writeModel(opts.modelOut, doc); err != nil {
			return err
		}
	}
	findings, resources, err := rules.evaluate(ctx, doc, source)
	if err != nil {
		return err
	}
	estate := ownership.Classify(inv, doc)
	annotate(findings, func(urn, ruleID string) (string, string) {
		o, fix, ok := estate.Fix(urn, ruleID)
		if !ok {
			return "", ""
		}
		return o.String(), fix
	})
	if stack != nil {
		findings = append(findings, driftFindings(drift.Compare(declared(stack.Plan), doc, inv), stackLocator(stack))...)
	}
	inputFormat := "live"
	if fromCAI {
		inputFormat = "cloud-asset-inventory"
	}
	rep, err := rules.finish(stdout, opts.output, findings, source, inputFormat, resources, opts.failOnWarn, opts.now())
	if err != nil {
		return err
	}
	denies, warnings, waived, failed := verdict(rep)
	if err := writeSummaries(opts, inv, doc, estate, stack, rep, failed); err != nil {
		return err
	}
	logger.LogAttrs(ctx, slog.LevelInfo, "audit finished",
		slog.String("source", source), slog.Int("projects", len(inv.Projects)), slog.Int("resources", resources),
		slog.Int("denies", denies), slog.Int("warnings", warnings), slog.Int("waived", waived), slog.Bool("passed", !failed))
	if failed {
		return &exitError{code: 1, err: fmt.Errorf("audit failed: %d denies, %d warnings (fail-on-warn %v)", denies, warnings, opts.failOnWarn)}
	}
	return nil
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
func writeSummaries(opts auditOptions, inv *inventory.Inventory, doc *model.Document, estate *ownership.Estate, stack *render.Result, rep *auditReport, failed bool) error {
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
		Source: inv.Source, Generated: opts.now(), Inventory: inv, Owners: subOwners, Failed: failed,
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
