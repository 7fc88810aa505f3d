// Package check runs eventpipe's policy rules for a command: it loads the check
// configuration, compiles the rules with one environment's thresholds, evaluates them on
// plan documents, judges waivers, and writes the report in every output format asked for.
// Check is `eventpipe check` (a plan file or a stack rendered offline); the audit package
// runs the same Run on what exists in Google Cloud. The CLI only parses flags, calls these
// and turns the error into an exit code: a *FailedError is 1, any other error 2.
package check

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/eventpipe/eventpipe/internal/release"
	"github.com/eventpipe/eventpipe/policies"
	"github.com/eventpipe/eventpipe/policies/checkconfig"
	"github.com/eventpipe/eventpipe/policies/evaluate"
	"github.com/eventpipe/eventpipe/policies/plan"
	"github.com/eventpipe/eventpipe/policies/report"
)

// Options are what every command that runs the rules is given (its flags).
type Options struct {
	// Outputs are the report outputs: FORMAT to the standard output or FORMAT=FILE
	// (report.ParseOutputs).
	Outputs []string
	// ConfigFile is the check configuration (thresholds per environment, waivers); empty
	// for the defaults.
	ConfigFile string
	// Env is the environment whose thresholds apply.
	Env string
	// EnvFlag is whether the user named Env (--env), rather than a stack name giving it:
	// a named environment no rule or configuration knows that is a misspelling of one
	// they do is refused.
	EnvFlag bool
	// FailOnWarn fails the report on warnings too.
	FailOnWarn bool
	// ListRules asks for the rules instead of a verdict.
	ListRules bool
	// PrintData asks for the data document the rules get (conftest --data, opa eval -d)
	// instead of a verdict.
	PrintData bool
	// Now is the date waivers are judged on (time.Now when nil).
	Now func() time.Time
}

// InfoOnly reports whether the options ask for information (the rules, the data
// document) instead of a verdict.
func (o Options) InfoOnly() bool { return o.ListRules || o.PrintData }

// FailedError is the verdict of a report that fails: a deny, a warning with FailOnWarn,
// or an expired waiver (exit code 1).
type FailedError struct {
	// Command is the command that judged ("check", "audit").
	Command string
	// Denies and Warnings count the failing findings.
	Denies, Warnings int
	// FailOnWarn is whether warnings fail.
	FailOnWarn bool
}

func (e *FailedError) Error() string {
	return fmt.Sprintf("%s failed: %s (fail-on-warn %v)", e.Command, report.Tally(e.Denies, e.Warnings), e.FailOnWarn)
}

// Run is one run of the rules by a command: the parsed outputs and configuration, and
// the rules compiled with one environment's thresholds.
type Run struct {
	// command is the subcommand (check, audit); reports say "eventpipe <command>".
	command string
	opts    Options
	outputs []report.Output
	cfg     *checkconfig.Config
	// data is data.config as conftest and opa eval users pass it (without "today").
	data map[string]any
	// ready is closed once the rules are compiled: eng, or engErr.
	ready  chan struct{}
	eng    *evaluate.Engine
	engErr error
	// profile is how the rules judge opts.Env; set with the rules.
	profile Profile
}

// embeddedRules are the embedded rule files (policies.Modules) compiled once per process:
// every Run prepares its own Engine on them with its configuration, so a process that runs
// the rules more than once (the CLI's and audit's in-process tests) compiles them once.
// Compiling is 36 MB and 575,000 allocations; preparing an Engine on the compiled rules
// 41 kB and 574 (BenchmarkNew, BenchmarkEngine in policies/evaluate).
var embeddedRules = sync.OnceValues(func() (*evaluate.Compiled, error) {
	mods, err := policies.Modules()
	if err != nil {
		return nil, err
	}
	return evaluate.Compile(mods, policies.Package)
})

// Start parses the outputs and the configuration file and starts compiling the rules with
// the thresholds of opts.Env, so the caller can read its input meanwhile.
func Start(ctx context.Context, command string, opts Options) (*Run, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	outputs, err := report.ParseOutputs(opts.Outputs)
	if err != nil {
		return nil, fmt.Errorf("--output %w", err)
	}
	r := &Run{command: command, opts: opts, outputs: outputs, ready: make(chan struct{})}
	if opts.ConfigFile != "" {
		if r.cfg, err = checkconfig.Load(opts.ConfigFile); err != nil {
			return nil, err
		}
	}
	r.data = r.cfg.Data(opts.Env)
	// The run judges waivers on opts.Now's date; conftest and opa eval users' rules judge
	// them on today's.
	config := maps.Clone(r.data)
	config["today"] = opts.Now().Format(time.DateOnly)
	go func() {
		rules, err := embeddedRules()
		if err != nil {
			r.engErr = err
		} else {
			r.eng, r.engErr = rules.Engine(ctx, config)
		}
		close(r.ready)
	}()
	return r, nil
}

// Profile is how the rules judge the run's environment; it follows Info or Check.
func (r *Run) Profile() Profile { return r.profile }

// Now is the date the run judges waivers on.
func (r *Run) Now() time.Time { return r.opts.Now() }

// rules waits for the compiled rules and checks the configuration against them.
func (r *Run) rules() (*evaluate.Engine, error) {
	<-r.ready
	if r.engErr != nil {
		return nil, fmt.Errorf("loading policy rules: %w", r.engErr)
	}
	if err := r.cfg.Validate(r.eng.Rules()); err != nil {
		return nil, fmt.Errorf("%s: %w", r.opts.ConfigFile, err)
	}
	p, err := profile(r.opts.Env, r.opts.EnvFlag, r.cfg, r.data, r.eng.Rules())
	if err != nil {
		return nil, err
	}
	r.profile = p
	return r.eng, nil
}

// Info answers ListRules and PrintData; done says whether it did. It waits for the
// compiled rules, so every later call (Check, Report) finds them.
func (r *Run) Info(w io.Writer) (done bool, err error) {
	eng, err := r.rules()
	if err != nil {
		return true, err
	}
	switch {
	case r.opts.ListRules:
		return true, ListRules(w, eng.Rules())
	case r.opts.PrintData:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return true, enc.Encode(map[string]any{"config": r.data})
	}
	return false, nil
}

// Check evaluates the rules on p; each waived finding names the file of its waiver. A
// document the rules cannot judge is an error wrapping evaluate.ErrUnusableDocument.
func (r *Run) Check(ctx context.Context, p *plan.Plan) (*evaluate.Result, error) {
	eng, err := r.rules()
	if err != nil {
		return nil, err
	}
	res, err := eng.Check(ctx, p)
	if err != nil {
		return nil, err
	}
	for i := range res.Findings {
		if w := res.Findings[i].Waiver; w != nil {
			w.Source = r.cfg.Path()
		}
	}
	return res, nil
}

// Report is the report of findings on source (a document of inputFormat with resources
// judged resources), under the command's name. It follows Info or Check.
func (r *Run) Report(source, inputFormat string, resources int, findings []evaluate.Finding) *report.Report {
	return &report.Report{
		Command: "eventpipe " + r.command, Source: source, InputFormat: inputFormat, Resources: resources, Environment: r.profile.String(),
		Rules: r.eng.Rules(), Findings: findings, FailOnWarn: r.opts.FailOnWarn, Version: release.ModuleVersion(),
	}
}

// Finish writes rep to every output (the standard ones to stdout), logs the verdict with
// attrs to stderr, and returns a *FailedError when the report fails.
func (r *Run) Finish(ctx context.Context, stdout, stderr io.Writer, rep *report.Report, attrs ...slog.Attr) error {
	if err := report.WriteOutputs(stdout, r.outputs, rep); err != nil {
		return err
	}
	denies, warnings, waived := rep.Counts()
	attrs = append(attrs, slog.Int("denies", denies), slog.Int("warnings", warnings),
		slog.Int("waived", waived), slog.Bool("passed", !rep.Failed()))
	slog.New(slog.NewJSONHandler(stderr, nil)).LogAttrs(ctx, slog.LevelInfo, r.command+" finished", attrs...)
	if rep.Failed() {
		return &FailedError{Command: r.command, Denies: denies, Warnings: warnings, FailOnWarn: r.opts.FailOnWarn}
	}
	return nil
}

// ListRules writes the rules as a table: id, level, severity, rule and title.
func ListRules(w io.Writer, rules []evaluate.Rule) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tLEVEL\tSEVERITY\tRULE\tTITLE")
	for _, r := range rules {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Level, r.Severity, r.Name, r.Title)
	}
	return tw.Flush()
}
