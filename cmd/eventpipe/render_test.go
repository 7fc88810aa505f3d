package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/render"
)

// execute runs the CLI with args and returns stdout and the error.
func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
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
		{"invalid config", []string{"render", "--stack", "broken", "--config", "../../render/testdata/Pulumi.broken.yaml"}, 2, "maxDeliveryAttempts = 1: allowed 5–100"},
		{"unknown stack", []string{"render", "--stack", "qa"}, 2, "known stacks: dev, prod, staging"},
		{"missing stack flag", []string{"render"}, 0, `required flag(s) "stack" not set`},
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
			var ee *exitError
			if tc.code != 0 && (!errors.As(err, &ee) || ee.code != tc.code) {
				t.Errorf("exit code: err %T %v, want code %d", err, err, tc.code)
			}
		})
	}
}
