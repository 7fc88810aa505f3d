package main

import (
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/internal/cli"
	"github.com/eventpipe/eventpipe/internal/testing/proctest"
)

// TestUnreachableEmulator: replay and audit pointed at an emulator address nothing
// listens on say "cannot reach HOST" and what to do, exit 2, and do so well before the
// minute a first call's deadline would take; replay prints no "replayed 0 of 0".
func TestUnreachableEmulator(t *testing.T) {
	host := proctest.ClosedAddr(t)
	t.Setenv(cli.EmulatorEnv, host)
	for _, args := range [][]string{
		{"replay", "--subscription", "projects/p/subscriptions/s.dlq-sub", "--topic", "projects/p/topics/t"},
		{"audit", "--project", "eventpipe-dev"},
	} {
		start := time.Now()
		out, _, err := executeLog(t, args...)
		took := time.Since(start)
		if cli.ExitCode(err) != 2 || err == nil || !strings.Contains(err.Error(), "cannot reach "+host) || !strings.Contains(err.Error(), "eventpipe dev --serve") {
			t.Errorf("%s: exit %d, %v; want exit 2 naming %s and the fix", args[0], cli.ExitCode(err), err, host)
		}
		if took > cli.ReachTimeout {
			t.Errorf("%s took %s to report an unreachable emulator", args[0], took)
		}
		if strings.Contains(out, "replayed") {
			t.Errorf("%s printed a result though nothing was reached: %s", args[0], out)
		}
	}
}
