package main

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/eventpipe/eventpipe/internal/cli"
	"github.com/eventpipe/eventpipe/internal/release"
	"github.com/eventpipe/eventpipe/internal/spelling"
	"github.com/eventpipe/eventpipe/internal/testing/ruletest"
)

// flagMeanings is what each flag name means, in every command that has it.
var flagMeanings = map[string]string{
	"stack":        "stack",
	"stack-file":   "stack config FILE",
	"stack-dir":    "holding the stack config files",
	"check-config": "check configuration FILE",
	"env":          "environment whose thresholds apply",
}

// TestOneMeaningPerFlag: a flag name means the same thing in every command
// (its help says so), --config is only a deprecated, hidden spelling, and
// every value name pflag derives from backquotes is a single word (a
// backquoted command in help text would become the value name).
func TestOneMeaningPerFlag(t *testing.T) {
	valueName := regexp.MustCompile(`^[A-Za-z]*$`)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			where := c.CommandPath() + " --" + f.Name
			name, usage := pflag.UnquoteUsage(f)
			if !valueName.MatchString(name) {
				t.Errorf("%s: value name %q (a backquoted phrase in its help)", where, name)
			}
			if f.Name == "config" {
				if f.Deprecated == "" || !f.Hidden {
					t.Errorf("%s is not a deprecated spelling", where)
				}
				return
			}
			if want, ok := flagMeanings[f.Name]; ok && !strings.Contains(usage, want) {
				t.Errorf("%s: help %q does not say %q", where, usage, want)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
}

// TestStackFileFlag: --stack-file renders a stack file in render, dev (bad
// input to be quick), check and audit; --config still does in render with a
// deprecation notice naming --stack-file.
func TestStackFileFlag(t *testing.T) {
	file := "../../render/testdata/Pulumi.broken.yaml"
	for _, args := range [][]string{
		{"render", "--stack", "broken", "--stack-file", file},
		{"dev", "--stack", "broken", "--stack-file", file},
		{"check", "--stack", "broken", "--stack-file", file},
		{"audit", "--stack", "broken", "--stack-file", file},
	} {
		_, _, err := executeLog(t, args...)
		if cli.ExitCode(err) != 2 || err == nil || !strings.Contains(err.Error(), "maxDeliveryAttempts = 1: allowed 5–100") {
			t.Errorf("%v: exit %d, %v; want the file's problems", args, cli.ExitCode(err), err)
		}
	}
	_, errOut, err := executeLog(t, "render", "--stack", "broken", "--config", file)
	if cli.ExitCode(err) != 2 || !strings.Contains(errOut, "--config has been deprecated, use --stack-file") {
		t.Errorf("render --config: exit %d, %v; stderr %s", cli.ExitCode(err), err, errOut)
	}
}

// TestOutsideTheRepositoryNamesTheRightFlag: with no Pulumi.yaml above the
// working directory, check --stack tells the user to pass --stack-file (the
// flag that names a stack file there), not --config.
func TestOutsideTheRepositoryNamesTheRightFlag(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, cmd := range []string{"check", "render", "dev", "audit"} {
		_, _, err := executeLog(t, cmd, "--stack", "dev")
		if err == nil || !strings.Contains(err.Error(), "--stack-file") || strings.Contains(err.Error(), "--config") {
			t.Errorf("%s --stack dev outside the repository: %v; want advice naming --stack-file", cmd, err)
		}
	}
}

// TestVersion: --version and `version` print the module version.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, _, err := executeLog(t, args...)
		if err != nil || out != "eventpipe "+release.ModuleVersion()+"\n" {
			t.Errorf("%v: %q, %v", args, out, err)
		}
	}
}

// TestDocsNameTheReleaseTag: every versioned install command in the docs
// (…/eventpipe/…@vX.Y.Z) names release.Tag, the version a build at that tag
// reports (release.ModuleVersion is the tag for `go install …@Tag`).
func TestDocsNameTheReleaseTag(t *testing.T) {
	pinned := regexp.MustCompile(`github\.com/eventpipe/eventpipe[\w./-]*@(v[0-9][\w.+-]*)`)
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range append(docs, "../../README.md") {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range pinned.FindAllStringSubmatch(string(b), -1) {
			n++
			if m[1] != release.Tag {
				t.Errorf("%s: %s names %s; the release is %s (internal/release.Tag)", path, m[0], m[1], release.Tag)
			}
		}
	}
	if n < 2 {
		t.Errorf("found %d versioned install commands in the docs, want at least the README's and docs/provider-installation.md's", n)
	}
}

// TestRangeFixesNameTheCheckConfig: a rule whose allowed range comes from the check
// configuration says in its fix that the range can be raised there, under the flag's name.
func TestRangeFixesNameTheCheckConfig(t *testing.T) {
	eng := ruletest.Engine(t, nil)
	for _, r := range eng.Rules() {
		if r.ID == "EP002" && (!strings.Contains(r.Fix, "--check-config") || !strings.Contains(r.Fix, "thresholds."+r.Name)) {
			t.Errorf("%s fix %q does not say the range is raised in the check configuration (--check-config, thresholds.%s)", r.ID, r.Fix, r.Name)
		}
	}
}

// TestDurationFlagsReadTheOneGrammar: every duration flag of every command reads the
// grammar of the stack config (internal/durations), so --backlog-window 1d works as
// backlogWindow: 1d would; none is left on Go's parser, which refuses days.
func TestDurationFlagsReadTheOneGrammar(t *testing.T) {
	seen := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() != "duration" {
				return
			}
			seen++
			where := c.CommandPath() + " --" + f.Name
			if _, ok := f.Value.(*cli.DurationValue); !ok {
				t.Errorf("%s is a %T, not read with internal/durations", where, f.Value)
				return
			}
			for in, want := range map[string]string{"1d": "24h0m0s", "1h30m": "1h30m0s", " 90s ": "1m30s"} {
				if err := f.Value.Set(in); err != nil || f.Value.String() != want {
					t.Errorf("%s %q: %v, %s; want %s", where, in, err, f.Value, want)
				}
			}
			for _, in := range []string{"-1s", "1.5d", "10"} {
				if err := f.Value.Set(in); err == nil {
					t.Errorf("%s %q accepted", where, in)
				}
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	if seen < 2 {
		t.Errorf("found %d duration flags; want at least --backlog-window and --outage", seen)
	}
}

// TestMisspeltFlagIsNamed: every long flag of every command, misspelt by one edit (its
// last letter dropped, or doubled), is refused with exit 2 naming the flag spelling.Closest
// finds among the command's flags, which is within spelling.MaxDistance of what was typed.
func TestMisspeltFlagIsNamed(t *testing.T) {
	n := 0
	for _, sub := range newRootCmd().Commands() {
		var names []string
		sub.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				names = append(names, f.Name)
			}
		})
		for _, name := range names {
			for _, typo := range []string{name[:len(name)-1], name + name[len(name)-1:]} {
				if sub.Flags().Lookup(typo) != nil || len(typo) < 2 {
					continue
				}
				_, err := execute(t, sub.Name(), "--"+typo)
				meant, ok := spelling.Closest(typo, names)
				var ee *cli.ExitError
				if !ok || !errors.As(err, &ee) || ee.Code != 2 ||
					!strings.Contains(err.Error(), "unknown flag: --"+typo+" (did you mean --"+meant+"?)") {
					t.Errorf("%s --%s: %v; want exit 2 naming --%s", sub.Name(), typo, err, meant)
				}
				n++
			}
		}
	}
	if n < 40 {
		t.Fatalf("tried only %d misspelt flags", n)
	}
	// Far from every flag: refused without a guess.
	if _, err := execute(t, "render", "--frobnicate"); err == nil || err.Error() != "unknown flag: --frobnicate" {
		t.Errorf("render --frobnicate: %v", err)
	}
}
