// Package audit judges what exists in Google Cloud with the policy rules `eventpipe check`
// runs: it reads the estate (live projects through audit/live, or Cloud Asset Inventory
// exports through audit/cai), builds the document the rules read (audit/model), compares
// it with a stack rendered offline (audit/drift), runs the rules one group of projects at
// a time (policies/check), names who manages each finding's resource (audit/ownership),
// and writes the report, the model and summaries for people (audit/summary). The CLI only
// parses flags and turns Run's error into an exit code (check.FailedError is 1).
package audit

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

	"github.com/eventpipe/eventpipe/audit/cai"
	"github.com/eventpipe/eventpipe/audit/drift"
	"github.com/eventpipe/eventpipe/audit/inventory"
	"github.com/eventpipe/eventpipe/audit/live"
	"github.com/eventpipe/eventpipe/audit/model"
	"github.com/eventpipe/eventpipe/audit/ownership"
	"github.com/eventpipe/eventpipe/audit/summary"
	"github.com/eventpipe/eventpipe/policies/check"
	"github.com/eventpipe/eventpipe/policies/report"
	"github.com/eventpipe/eventpipe/render"
)

// Options say what one audit reads, judges and writes.
type Options struct {
	// Check are the options of the rules (outputs, configuration, thresholds, waivers'
	// date). Without Check.Env, the stack's name is the environment; without either,
	// each resource's eventpipe_env label.
	Check check.Options
	// Projects are the projects read live. Empty with a Stack: the stack's project.
	Projects []string
	// CAI are Cloud Asset Inventory exports to read instead of live projects.
	CAI cai.Files
	// Stack, when its Stack is set, is rendered offline: what it declares is compared
	// with the live settings, and findings on it cite its config lines.
	Stack render.Options
	// Summaries are files to write a summary for people to: .md or .html.
	Summaries []string
	// ModelOut, when set, is where the audited estate is written as a pulumi stack
	// export document (for conftest or opa eval).
	ModelOut string
	// BacklogWindow is how far back the oldest unacked message age is read.
	BacklogWindow time.Duration
	// Dial makes the Google clients of a live audit (live.Dial, after a reachability
	// check, outside tests).
	Dial func(ctx context.Context) (*live.Clients, error)
}

// FromCAI reports whether the audit reads Cloud Asset Inventory exports.
func (o Options) FromCAI() bool {
	return len(o.CAI.Resources)+len(o.CAI.IAM)+len(o.CAI.Search) > 0
}

// Run audits what opts names and writes the report to stdout (and the files of
// opts.Check.Outputs), or answers opts.Check.ListRules and PrintData. A failing report is
// a *check.FailedError; any other error means the input could not be used.
func Run(ctx context.Context, stdout, stderr io.Writer, opts Options) error {
	if opts.Check.Now == nil {
		opts.Check.Now = time.Now
	}
	if opts.Check.Env == "" {
		opts.Check.Env = opts.Stack.Stack
	}
	run, err := check.Start(ctx, "audit", opts.Check)
	if err != nil {
		return err
	}
	if done, err := run.Info(stdout); done || err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(stderr, nil))

	var stack *render.Result
	if opts.Stack.Stack != "" {
		if stack, err = render.Render(ctx, opts.Stack); err != nil {
			return fmt.Errorf("rendering stack %s: %w", opts.Stack.Stack, err)
		}
		if !opts.FromCAI() && len(opts.Projects) == 0 {
			opts.Projects = []string{stack.Stack.Project}
		}
	}
	inv, err := readInventory(ctx, opts, logger)
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
		locate = func(urn string) (string, int) { return check.Locate(stack, urn) }
	}
	if opts.ModelOut != "" {
		if err := writeModel(opts.ModelOut, doc); err != nil {
			return err
		}
	}
	ev, err := Evaluate(ctx, run, doc, source, locate)
	if err != nil {
		return err
	}
	estate := ownership.Classify(inv, doc)
	Annotate(ev.Findings, func(urn, ruleID string) (string, string) {
		o, fix, ok := estate.Fix(urn, ruleID)
		if !ok {
			return "", ""
		}
		return o.String(), fix
	})
	inputFormat := "live"
	if opts.FromCAI() {
		inputFormat = "cloud-asset-inventory"
	}
	rep := run.Report(source, inputFormat, ev.Resources, ev.Findings)
	if err := writeSummaries(opts, run.Now(), inv, doc, estate, stack, rep); err != nil {
		return err
	}
	return run.Finish(ctx, stdout, stderr, rep, slog.String("source", source), slog.Int("projects", len(inv.Projects)),
		slog.Int("resources", ev.Resources))
}

// readInventory reads the estate from the Cloud Asset Inventory files or the live projects.
func readInventory(ctx context.Context, opts Options, logger *slog.Logger) (*inventory.Inventory, error) {
	if opts.FromCAI() {
		return cai.Read(opts.CAI)
	}
	clients, err := opts.Dial(ctx)
	if err != nil {
		return nil, err
	}
	defer clients.Close()
	inv, err := live.Read(ctx, clients, live.Options{
		Projects: opts.Projects, Now: opts.Check.Now, BacklogWindow: opts.BacklogWindow, Logger: logger,
	})
	if err != nil {
		return nil, fmt.Errorf("reading live projects: %w", err)
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

func writeModel(path string, doc *model.Document) error {
	data, err := doc.JSON()
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("writing the audit model: %w", err)
	}
	return nil
}

// writeSummaries writes the summary, generated at now, to each of opts.Summaries.
func writeSummaries(opts Options, now time.Time, inv *inventory.Inventory, doc *model.Document, estate *ownership.Estate, stack *render.Result, rep *report.Report) error {
	if len(opts.Summaries) == 0 {
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
		Source: inv.Source, Generated: now, Inventory: inv, Owners: subOwners, Failed: rep.Failed(),
		Findings: summaryFindings(rep, func(urn string) string {
			if r, ok := doc.Resource(urn); ok {
				return r.Project
			}
			return stackProject // drift findings are on the stack's URNs
		}),
	})
	for _, path := range opts.Summaries {
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
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing the summary: %w", err)
	}
	return nil
}
