package main

// This file is what `eventpipe check` and `eventpipe audit` share: their common flags, the
// configuration file, compiling the rules, evaluating them, waivers, report outputs, the
// closing log line and the exit code. Each command only says what it judges.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"time"

	"github.com/spf13/pflag"

	"github.com/eventpipe/eventpipe/internal/release"
	"github.com/eventpipe/eventpipe/policies"
	"github.com/eventpipe/eventpipe/policies/checkconfig"
	"github.com/eventpipe/eventpipe/policies/evaluate"
	"github.com/eventpipe/eventpipe/policies/plan"
	"github.com/eventpipe/eventpipe/policies/report"
)

// policyFlags are the flags of every command that runs the rules.
type policyFlags struct {
	outputs    []string
	config     string
	failOnWarn bool
	listRules  bool
	printData  bool
	// now is the date waivers are judged on (tests set it).
	now func() time.Time
}

// register adds the flags to fs.
func (f *policyFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVarP(&f.outputs, "output", "o", []string{string(report.Text)}, "output format (text, json, sarif, junit, github) to standard output, or FORMAT=FILE to a file; repeat to write several formats of one evaluation")
	checkConfigFlag(fs, &f.config)
	fs.BoolVar(&f.failOnWarn, "fail-on-warn", false, "exit 1 on warnings too")
	fs.BoolVar(&f.listRules, "list-rules", false, "list the rules (id, level, severity, title) and exit")
	fs.BoolVar(&f.printData, "print-data", false, "print the data document the rules get for --check-config and --env (conftest --data, opa eval -d) and exit")
}

// infoOnly reports whether the flags ask for information (the rules, the data document)
// instead of a verdict.
func (f *policyFlags) infoOnly() bool { return f.listRules || f.printData }

// policyRun is one run of the rules by a command: the parsed outputs and configuration,
// and the rules compiled with one environment's thresholds.
type policyRun struct {
	// name is the subcommand (check, audit); reports say "eventpipe <name>".
	name    string
	flags   policyFlags
	outputs []report.Output
	cfg     *checkconfig.Config
	// data is data.config as conftest and opa eval users pass it (without "today").
	data  map[string]any
	ready chan compiledRules
	eng   *evaluate.Engine
}

type compiledRules struct {
	eng *evaluate.Engine
	err error
}

// startPolicyRun parses the outputs and the configuration file and starts compiling the
// rules with the thresholds of env, so the caller can read its input meanwhile.
func startPolicyRun(ctx context.Context, name string, flags policyFlags, env string) (*policyRun, error) {
	outputs, err := report.ParseOutputs(flags.outputs)
	if err != nil {
		return nil, usageError("--output %v", err)
	}
	r := &policyRun{name: name, flags: flags, outputs: outputs, ready: make(chan compiledRules, 1)}
	if flags.config != "" {
		if r.cfg, err = checkconfig.Load(flags.config); err != nil {
			return nil, &exitError{code: 2, err: err}
		}
	}
	r.data = r.cfg.Data(env)
	mods, err := policies.Modules()
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	// The run judges waivers on flags.now's date; conftest and opa eval users' rules judge
	// them on today's.
	config := maps.Clone(r.data)
	config["today"] = flags.now().Format(time.DateOnly)
	go func() {
		eng, err := evaluate.New(ctx, evaluate.Options{Modules: mods, Package: policies.Package, Config: config})
		r.ready <- compiledRules{eng, err}
	}()
	return r, nil
}

// rules waits for the compiled rules and checks the configuration against them.
func (r *policyRun) rules() (*evaluate.Engine, error) {
	if r.eng != nil {
		return r.eng, nil
	}
	c := <-r.ready
	if c.err != nil {
		return nil, &exitError{code: 2, err: fmt.Errorf("loading policy rules: %w", c.err)}
	}
	if err := r.cfg.Validate(c.eng.Rules()); err != nil {
		return nil, &exitError{code: 2, err: fmt.Errorf("%s: %w", r.flags.config, err)}
	}
	r.eng = c.eng
	return r.eng, nil
}

// info answers --list-rules and --print-data; done says whether it did. It waits for the
// compiled rules, so every later call (check, report) finds them.
func (r *policyRun) info(w io.Writer) (done bool, err error) {
	eng, err := r.rules()
	if err != nil {
		return true, err
	}
	switch {
	case r.flags.listRules:
		return true, listRules(w, eng.Rules())
	case r.flags.printData:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return true, enc.Encode(map[string]any{"config": r.data})
	}
	return false, nil
}

// check evaluates the rules on p; each waived finding names the file of its waiver. A
// document the rules cannot judge is an error wrapping evaluate.ErrUnusableDocument.
func (r *policyRun) check(ctx context.Context, p *plan.Plan) (*evaluate.Result, error) {
	eng, err := r.rules()
	if err != nil {
		return nil, err
	}
	res, err := eng.Check(ctx, p)
	if err != nil {
		return nil, &exitError{code: 2, err: err}
	}
	for i := range res.Findings {
		if w := res.Findings[i].Waiver; w != nil {
			w.Source = r.cfg.Path()
		}
	}
	return res, nil
}

// report is the report of findings on source (a document of inputFormat with resources
// judged resources), under the command's name.
func (r *policyRun) report(source, inputFormat string, resources int, findings []evaluate.Finding) *report.Report {
	return &report.Report{
		Command: "eventpipe " + r.name, Source: source, InputFormat: inputFormat, Resources: resources,
		Rules: r.eng.Rules(), Findings: findings, FailOnWarn: r.flags.failOnWarn, Version: release.ModuleVersion(),
	}
}

// finish writes rep to every output, logs the verdict with attrs, and returns the exit
// error: 1 when the report fails, 2 when it cannot be written.
func (r *policyRun) finish(ctx context.Context, stdout, stderr io.Writer, rep *report.Report, attrs ...slog.Attr) error {
	if err := report.WriteOutputs(stdout, r.outputs, rep); err != nil {
		return &exitError{code: 2, err: err}
	}
	denies, warnings, waived := rep.Counts()
	attrs = append(attrs, slog.Int("denies", denies), slog.Int("warnings", warnings),
		slog.Int("waived", waived), slog.Bool("passed", !rep.Failed()))
	slog.New(slog.NewJSONHandler(stderr, nil)).LogAttrs(ctx, slog.LevelInfo, r.name+" finished", attrs...)
	if rep.Failed() {
		return &exitError{code: 1, err: fmt.Errorf("%s failed: %d denies, %d warnings (fail-on-warn %v)", r.name, denies, warnings, r.flags.failOnWarn)}
	}
	return nil
}
