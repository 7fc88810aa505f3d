package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Each flag means one thing in every command:
//
//   - --stack-file FILE is a stack config file (Pulumi.<stack>.yaml) in render, dev, check
//     and audit;
//   - --check-config FILE is the check configuration (thresholds, waivers) in check and audit.
//
// --config meant the first in render and dev and the second in check and audit; it still
// works with that meaning and prints a deprecation notice naming the new flag.

// stackFileFlag registers --stack-file into p.
func stackFileFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "stack-file", "", "stack config `FILE` (default: Pulumi.<stack>.yaml in the project's stackConfigDir)")
}

// stackDirFlag registers --stack-dir into p.
func stackDirFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "stack-dir", "", "`DIR` holding the stack config files (default: the stackConfigDir of the nearest Pulumi.yaml)")
}

// checkConfigFlag registers --check-config into p, and --config as its deprecated spelling.
func checkConfigFlag(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "check-config", "", "check configuration `FILE`: thresholds per environment and waivers")
	deprecatedAlias(fs, p, "config", "check-config")
}

// deprecationsToStderr sends pflag's notices (a deprecated flag was used) to each
// command's error output, as set when it runs, instead of the process's stderr.
func deprecationsToStderr(c *cobra.Command) {
	c.Flags().SetOutput(errWriter{c})
	for _, sub := range c.Commands() {
		deprecationsToStderr(sub)
	}
}

// errWriter writes to a command's error output, looked up at each write.
type errWriter struct{ c *cobra.Command }

func (w errWriter) Write(p []byte) (int, error) { return w.c.ErrOrStderr().Write(p) }

// deprecatedAlias registers old as a hidden spelling of the string flag now, bound to the
// same variable; using it prints pflag's deprecation notice naming now.
func deprecatedAlias(fs *pflag.FlagSet, p *string, old, now string) {
	fs.StringVar(p, old, "", "deprecated: use --"+now)
	_ = fs.MarkDeprecated(old, "use --"+now+" instead")
}
