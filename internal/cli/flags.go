package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/eventpipe/eventpipe/internal/durations"
	"github.com/eventpipe/eventpipe/internal/spelling"
)

// Each flag means one thing in every command:
//
//   - --stack-file FILE is a stack config file (Pulumi.<stack>.yaml) in render, dev, check
//     and audit;
//   - --check-config FILE is the check configuration (thresholds, waivers) in check and audit;
//   - a duration flag (--backlog-window, --outage) reads the grammar of every duration in
//     eventpipe (internal/durations): "90s", "1h30m", "1d".
//
// --config meant the first in render and dev and the second in check and audit; it still
// works with that meaning and prints a deprecation notice naming the new flag.

// StackFlag registers --stack into p with value (its default) and usage saying what the
// command does with the stack; any name works, not only the shipped ones.
func StackFlag(fs *pflag.FlagSet, p *string, value, usage string) {
	fs.StringVar(p, "stack", value, usage+": the stack `NAME`, any with a Pulumi.NAME.yaml in the stack folder (dev, staging and prod ship)")
}

// StackFileFlag registers --stack-file into p.
func StackFileFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "stack-file", "", "stack config `FILE` (default: Pulumi.<stack>.yaml in the project's stackConfigDir)")
}

// StackDirFlag registers --stack-dir into p.
func StackDirFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "stack-dir", "", "`DIR` holding the stack config files (default: the stackConfigDir of the nearest Pulumi.yaml)")
}

// CheckConfigFlag registers --check-config into p, and --config as its deprecated spelling.
func CheckConfigFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "check-config", "", "check configuration `FILE`: thresholds per environment and waivers")
	DeprecatedAlias(fs, p, "config", "check-config")
}

// DeprecationsToStderr sends pflag's notices (a deprecated flag was used) to each
// command's error output, as set when it runs, instead of the process's stderr.
func DeprecationsToStderr(c *cobra.Command) {
	c.Flags().SetOutput(errWriter{c})
	for _, sub := range c.Commands() {
		DeprecationsToStderr(sub)
	}
}

// errWriter writes to a command's error output, looked up at each write.
type errWriter struct{ c *cobra.Command }

func (w errWriter) Write(p []byte) (int, error) { return w.c.ErrOrStderr().Write(p) }

// DeprecatedAlias registers old as a hidden spelling of the string flag now, bound to the
// same variable; using it prints pflag's deprecation notice naming now.
func DeprecatedAlias(fs *pflag.FlagSet, p *string, old, now string) {
	fs.StringVar(p, old, "", "deprecated: use --"+now)
	_ = fs.MarkDeprecated(old, "use --"+now+" instead")
}

// DurationFlag registers the duration flag name into p, with default value, read with the
// one duration grammar (internal/durations) rather than Go's, which lacks days.
func DurationFlag(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var((*DurationValue)(p), name, usage)
}

// DurationValue is a pflag.Value of a time.Duration read by durations.Parse.
type DurationValue time.Duration

func (d *DurationValue) Set(s string) error {
	v, err := durations.Parse(s)
	if err != nil {
		return err
	}
	*d = DurationValue(v)
	return nil
}

func (d *DurationValue) String() string { return time.Duration(*d).String() }

func (d *DurationValue) Type() string { return "duration" }

// SuggestFlag turns pflag's "unknown flag: --stak" into a usage error (exit 2) that names
// the command's flag it most likely misspells: "unknown flag: --stak (did you mean --stack?)".
// Cobra suggests commands, not flags.
func SuggestFlag(cmd *cobra.Command, err error) error {
	typed, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return &ExitError{Code: 2, Err: err}
	}
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if meant, ok := spelling.Closest(typed, names); ok {
		return &ExitError{Code: 2, Err: fmt.Errorf("%w (did you mean --%s?)", err, meant)}
	}
	return &ExitError{Code: 2, Err: err}
}
