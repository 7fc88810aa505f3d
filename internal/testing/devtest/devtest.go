// Package devtest runs the repository's dev stack (stacks/Pulumi.dev.yaml) as a local
// pipeline (devpipe) for the tests of devpipe, and runs the commands that drive it
// (dev, dev --serve, replay) for the tests of the CLIs.
package devtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

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

// Execute runs a CLI's command tree root with args and returns its standard output,
// its standard error and its error.
func Execute(t testing.TB, root *cobra.Command, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// Serving is a running `dev --serve` and what it printed.
type Serving struct {
	// Base is its endpoints' URL (http://HOST:PORT), Emulator its PUBSUB_EMULATOR_HOST.
	Base, Emulator string
	// Replays are the arguments of the replay commands it printed, from "replay" on.
	Replays [][]string
	// Printed is what it printed before it listed its consumers.
	Printed string
}

// Serve runs `dev --serve` of root (on a free port, with a data folder of the test's)
// and args until the test ends, and returns what it printed.
func Serve(t testing.TB, root *cobra.Command, args ...string) Serving {
	t.Helper()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		root.SetOut(pw)
		root.SetErr(io.Discard)
		root.SetArgs(append([]string{"dev", "--serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir()}, args...))
		err := root.ExecuteContext(ctx)
		pw.Close()
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("dev --serve: %v", err)
		}
	})
	var s Serving
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		s.Printed += sc.Text() + "\n"
		l := strings.TrimSpace(sc.Text())
		if f := strings.Fields(l); len(f) > 2 && f[0] == "curl" && strings.HasSuffix(f[2], "/stats") {
			s.Base = strings.TrimSuffix(f[2], "/stats")
		}
		if h, ok := strings.CutPrefix(l, "export PUBSUB_EMULATOR_HOST="); ok {
			s.Emulator = h
		}
		if _, args, ok := strings.Cut(l, " replay --subscription "); ok {
			s.Replays = append(s.Replays, append([]string{"replay", "--subscription"}, strings.Fields(args)...))
		}
		if strings.HasPrefix(l, "Consumers:") {
			break
		}
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if s.Base == "" || s.Emulator == "" {
		t.Fatalf("dev --serve printed no stats URL or PUBSUB_EMULATOR_HOST")
	}
	return s
}

// Stats reads the rows of a local pipeline's /stats?format=json at base (its
// endpoints' URL), failing the test when they cannot be read.
func Stats(t testing.TB, base string) []devpipe.Row {
	t.Helper()
	resp, err := http.Get(base + "/stats?format=json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rows []devpipe.Row
	if err := json.NewDecoder(resp.Body).Decode(&rows); err != nil {
		t.Fatal(err)
	}
	return rows
}
