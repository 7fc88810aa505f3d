package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestReadmeSamplesCommand runs the README's own-events command as written (its
// `go run ./cmd/eventpipe-dev --samples …` line, paths from the repository root): the
// shipped samples (one event per service, so no delivery order makes one stale) are played
// on their pipeline, every one applied once and its replays duplicates, the other pipelines
// play the built-in events, and nothing is lost.
func TestReadmeSamplesCommand(t *testing.T) {
	t.Parallel() // a whole local pipeline of its own (own data dir, no --serve port): mostly waiting on pstest
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, l := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(l, "go run ./cmd/eventpipe-dev --samples ") {
			l, _, _ = strings.Cut(l, "#")
			args = strings.Fields(l)[3:]
		}
	}
	if len(args) != 2 {
		t.Fatalf("the README has no `go run ./cmd/eventpipe-dev --samples DIR` line (found %q)", args)
	}
	dir := filepath.Join("..", "..", args[1])
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s holds no sample file: %v", dir, err)
	}
	out, errOut, err := executeLog(t, "dev", "--data-dir", t.TempDir(), args[0], dir)
	if err != nil {
		t.Fatalf("eventpipe-dev %v: exit %d: %v\n%s\n%s", args, ExitCode(err), err, out, errOut)
	}
	if !strings.Contains(out, "nothing lost") {
		t.Errorf("no verdict:\n%s", out)
	}
	for _, f := range files {
		pipeline := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		samples := 0
		for _, l := range strings.Split(string(data), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "//") {
				samples++
			}
		}
		var row []string
		for _, l := range strings.Split(out, "\n") {
			if fs := strings.Fields(l); len(fs) > 0 && fs[0] == pipeline {
				row = fs
			}
		}
		// pipeline subscription published applied duplicate stale dead-lettered …
		if len(row) < 4 || row[3] != strconv.Itoa(samples) {
			t.Errorf("%s: row %v, want its %d samples applied, once each", pipeline, row, samples)
		}
	}
}
