package main

// This file is what `eventpipe check` and `eventpipe audit` share on the command line: the
// flags of a policy run and the exit code of its verdict. The run itself (configuration,
// rules, evaluation, waivers, outputs) is policies/check.

import (
	"errors"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/eventpipe/eventpipe/internal/cli"
	"github.com/eventpipe/eventpipe/policies/check"
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
	cli.CheckConfigFlag(fs, &f.config)
	fs.BoolVar(&f.failOnWarn, "fail-on-warn", false, "exit 1 on warnings too")
	fs.BoolVar(&f.listRules, "list-rules", false, "list the rules (id, level, severity, title) and exit")
	fs.BoolVar(&f.printData, "print-data", false, "print the data document the rules get for --check-config and --env (conftest --data, opa eval -d) and exit")
}

// infoOnly reports whether the flags ask for information (the rules, the data document)
// instead of a verdict.
func (f *policyFlags) infoOnly() bool { return f.listRules || f.printData }

// options are the flags as the library takes them, with the thresholds of env.
func (f *policyFlags) options(env string) check.Options {
	return check.Options{
		Outputs: f.outputs, ConfigFile: f.config, Env: env, EnvFlag: env != "", FailOnWarn: f.failOnWarn,
		ListRules: f.listRules, PrintData: f.printData, Now: f.now,
	}
}

// verdict runs a policy run, its log lines written after the human message of a failure
// (cli.HumanFirst), and turns its error into the exit code (conftest's convention): a
// failing report is 1, anything else (unusable input, usage) 2.
func verdict(stderr io.Writer, run func(log io.Writer) error) error {
	return cli.HumanFirst(stderr, func(err error) int {
		var failed *check.FailedError
		if errors.As(err, &failed) {
			return 1
		}
		return 2
	}, run)
}
