package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestHumanMessageBeforeLogs runs the CLI as a process on failures of every kind each
// command that logs can meet (an invalid stack, an unusable file, a deny) and checks its
// standard error: the human message ("eventpipe: …") comes first, before any JSON log
// line, so a user reads what went wrong and the fix before the machine's record of it.
func TestHumanMessageBeforeLogs(t *testing.T) {
	broken := "../../render/testdata/Pulumi.broken.yaml"
	plan := "../../policies/testdata/terraform/cloudevent-trigger/terraform.plan.json.txt"
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"render", "--stack", "broken", "--stack-file", broken}, 2},
		{[]string{"check", "--stack", "broken", "--stack-file", broken}, 2},
		{[]string{"check", "no-such-plan.json"}, 2},
		{[]string{"check", "--fail-on-warn", plan}, 1},
		{[]string{"render", "--stack", "nope"}, 2},
		{[]string{"audit", "--stack", "broken", "--stack-file", broken}, 2},
	} {
		cmd := exec.Command(os.Args[0], tc.args...)
		cmd.Env = append(os.Environ(), asCLIEnv+"=1")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if code := 0; errors.As(err, &exit) {
			code = exit.ExitCode()
			if code != tc.code {
				t.Errorf("%v: exit %d, want %d\n%s", tc.args, code, tc.code, stderr.String())
			}
		} else if tc.code != 0 {
			t.Errorf("%v: %v, want exit %d", tc.args, err, tc.code)
		}
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if !strings.HasPrefix(lines[0], "eventpipe: ") {
			t.Errorf("%v: standard error starts with %q, not the human message:\n%s", tc.args, lines[0], stderr.String())
		}
		human := false
		for _, l := range lines {
			human = human || strings.HasPrefix(l, "eventpipe: ")
			if strings.HasPrefix(l, "{") && !human {
				t.Errorf("%v: a log line before the human message: %s", tc.args, l)
			}
		}
	}
}
