// Package cli holds what eventpipe's commands share: the exit codes, the flags that mean
// one thing in every command, and the commands of the local journeys (dev, replay), which
// both the full CLI (cmd/eventpipe) and the local pipeline's own small binary
// (cmd/eventpipe-dev) serve. It imports neither the Pulumi program nor OPA, so a binary
// of these commands compiles in a fraction of the full CLI's time.
package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/eventpipe/eventpipe/internal/release"
)

// ExitError carries a process exit code out of a command (conftest's convention: 0
// clean, 1 policy failures or lost messages, 2 unusable input or usage).
type ExitError struct {
	Code int
	Err  error
	// Log is what the command logged while it failed (JSON lines): Main writes it after
	// the human message, which a user must see first.
	Log []byte
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// Prepare sets what every root command needs: errors and usage are printed once, by
// Main; a misspelt flag is named (SuggestFlag); deprecation notices go to each
// command's error output.
func Prepare(root *cobra.Command) {
	root.SilenceUsage = true
	root.SilenceErrors = true
	root.SetFlagErrorFunc(SuggestFlag) // subcommands inherit it
	DeprecationsToStderr(root)
}

// Main runs root with args and returns the process exit code. A failure is printed to
// stderr as one human line naming the program ("eventpipe: …"), the code taken from an
// *ExitError (2 otherwise).
func Main(ctx context.Context, root *cobra.Command, args []string, stderr io.Writer) int {
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, root.Name()+":", err)
	if ee := (*ExitError)(nil); errors.As(err, &ee) {
		_, _ = stderr.Write(ee.Log)
	}
	return ExitCode(err)
}

// HumanFirst runs a command's work with a buffer for its log output instead of stderr:
// on success the log goes to stderr at once; on failure it rides in the *ExitError (code
// from exit) so that Main prints it after the human message.
func HumanFirst(stderr io.Writer, exit func(error) int, work func(log io.Writer) error) error {
	var log bytes.Buffer
	err := work(&log)
	if err == nil {
		_, werr := stderr.Write(log.Bytes())
		return werr
	}
	ee := (*ExitError)(nil)
	if !errors.As(err, &ee) {
		ee = &ExitError{Code: exit(err), Err: err}
	}
	ee.Log = append(ee.Log, log.Bytes()...)
	return ee
}

// ExitCode is the process exit code of a command's error: 0 for nil, an *ExitError's
// code, else 2.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee := (*ExitError)(nil); errors.As(err, &ee) {
		return ee.Code
	}
	return 2
}

// Run is a program's main: it runs root with the process's arguments until done or
// interrupted (Ctrl-C, SIGTERM cancel the context) and exits with Main's code.
func Run(root *cobra.Command) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Main(ctx, root, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

// NewVersionCmd builds `version` of the program named name: it prints the eventpipe
// module version the binary was built from, as --version does.
func NewVersionCmd(name string) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the eventpipe module version this binary was built from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", name, release.ModuleVersion())
			return err
		},
	}
}

// SetVersion gives root --version, printed as `version` prints it.
func SetVersion(root *cobra.Command) {
	root.Version = release.ModuleVersion()
	root.SetVersionTemplate(root.Name() + " {{.Version}}\n")
}
