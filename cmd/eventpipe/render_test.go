package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/internal/cli"
	"github.com/eventpipe/eventpipe/internal/testing/devtest"
	"github.com/eventpipe/eventpipe/render"
)

// execute runs the CLI with args and returns stdout and the error; the log
// (stderr) goes to t.Log.
func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, _, err := executeLog(t, args...)
	return out, err
}

// executeLog runs the CLI with args and returns stdout, stderr and the error.
func executeLog(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return devtest.Execute(t, newRootCmd(), args...)
}

// TestRenderQuickstart runs the README's Quickstart command:
// go run ./cmd/eventpipe render --stack dev.
func TestRenderQuickstart(t *testing.T) {
	out, err := execute(t, "render", "--stack", "dev")
	if err != nil {
		t.Fatal(err)
	}
	want, err := render.Stack(context.Background(), render.Options{Stack: "dev"})
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Error("CLI output differs from render.Stack")
	}
	if !strings.Contains(out, `"type": "gcp:pubsub/subscription:Subscription"`) {
		t.Error("dev plan has no subscriptions")
	}
}

func TestRenderOutFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prod.json")
	out, err := execute(t, "render", "--stack", "prod", "--out", path)
	if err != nil || out != "" {
		t.Fatalf("out=%q err=%v", out, err)
	}
	written, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := execute(t, "render", "--stack", "prod")
	if err != nil || stdout != string(written) {
		t.Errorf("--out and stdout differ (err %v)", err)
	}
}

func TestRenderErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"invalid config", []string{"render", "--stack", "broken", "--stack-file", "../../render/testdata/Pulumi.broken.yaml"}, 2, "maxDeliveryAttempts = 1: allowed 5–100"},
		{"unknown stack", []string{"render", "--stack", "qa"}, 2, "known stacks: dev, prod, staging"},
		{"missing stack flag", []string{"render"}, 0, `required flag(s) "stack" not set`},
		{"missing stack file", []string{"render", "--stack", "dev", "--stack-file", "missing.yaml"}, 2, "--stack-file missing.yaml: no such file"},
		{"stack dir without stack files", []string{"render", "--stack", "dev", "--stack-dir", "nope"}, 2, "nope holds no Pulumi.<stack>.yaml file: pass --stack-dir"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := execute(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(out, `"steps"`) {
				t.Error("a plan was printed despite the error")
			}
			var ee *cli.ExitError
			if tc.code != 0 && (!errors.As(err, &ee) || ee.Code != tc.code) {
				t.Errorf("exit code: err %T %v, want code %d", err, err, tc.code)
			}
		})
	}
}

func TestRenderLogsOutcome(t *testing.T) {
	_, log, err := executeLog(t, "render", "--stack", "staging")
	if err != nil {
		t.Fatal(err)
	}
	var line struct {
		Level, Msg, Stack, Out string
		Steps, Pipelines       int
	}
	if err := json.Unmarshal([]byte(log), &line); err != nil {
		t.Fatalf("log is not one JSON line: %q", log)
	}
	if line.Level != "INFO" || line.Msg != "rendered" || line.Stack != "staging" || line.Out != "stdout" || line.Pipelines != 3 || line.Steps < 10 {
		t.Errorf("log = %+v", line)
	}
	// A failure is logged too, after the human message (TestHumanMessageBeforeLogs).
	var stderr strings.Builder
	cli.Main(context.Background(), newRootCmd(), []string{"render", "--stack", "broken", "--stack-file", "../../render/testdata/Pulumi.broken.yaml"}, &stderr)
	if !strings.Contains(stderr.String(), `"level":"ERROR"`) || !strings.Contains(stderr.String(), `"msg":"render failed"`) {
		t.Errorf("failure not logged: %q", stderr.String())
	}
}
