// Package devtest runs the repository's dev stack (stacks/Pulumi.dev.yaml) as a local
// pipeline (devpipe) for the tests of devpipe and of the commands that drive it.
package devtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/eventpipe/eventpipe/devpipe"
	"github.com/eventpipe/eventpipe/spec"
)

// Start runs the dev stack's local pipeline, its retry backoffs scaled by backoffScale,
// until the test ends.
func Start(t testing.TB, backoffScale float64) *devpipe.Env {
	t.Helper()
	file, err := spec.ReadStackFile(stackFile(t))
	if err != nil {
		t.Fatal(err)
	}
	st, err := file.Load("dev")
	if err != nil {
		t.Fatal(err)
	}
	env, err := devpipe.Start(context.Background(), devpipe.Options{Stack: st, DataDir: t.TempDir(), BackoffScale: backoffScale})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Close(); err != nil {
			t.Errorf("local pipeline: %v", err)
		}
	})
	return env
}

// stackFile finds stacks/Pulumi.dev.yaml in the working directory or the nearest folder
// above it that has one (a test runs in its package's folder).
func stackFile(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		path := filepath.Join(dir, "stacks", "Pulumi.dev.yaml")
		if _, err := os.Stat(path); err == nil {
			return path
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no stacks/Pulumi.dev.yaml in the working directory or above it")
		}
		dir = parent
	}
}
