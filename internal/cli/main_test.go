package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/spf13/cobra"

	"github.com/eventpipe/eventpipe/internal/testing/devtest"
)

// asCLIEnv makes the test binary run the commands instead of the tests, so a test can
// start them as a real process (and send it real signals) without building a binary.
const asCLIEnv = "EVENTPIPE_TEST_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLIEnv) != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := Main(ctx, testRoot(), os.Args[1:], os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// testRoot is a root command with this package's commands, as the CLIs register them.
func testRoot() *cobra.Command {
	root := &cobra.Command{Use: "eventpipe"}
	root.AddCommand(NewDevCmd(), NewReplayCmd())
	Prepare(root)
	return root
}

// executeLog runs the commands with args and returns stdout, stderr and the error.
func executeLog(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return devtest.Execute(t, testRoot(), args...)
}

// skipShort skips a journey under go test -short (make quick): it says why, and that
// make test, which never passes -short, runs it.
func skipShort(t *testing.T, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip(why + ": make test runs it")
	}
}
