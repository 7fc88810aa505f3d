package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/internal/cli"
	"github.com/eventpipe/eventpipe/internal/testing/docblock"
)

// TestCheckConfigExample runs the shipped check configuration, examples/eventpipe-check.yaml
// (what the docs' --check-config commands name, shown in docs/policies.md), on every stack:
// it must be valid, keep every stack passing, and fail naming its waiver once the waiver has
// expired. The file and the docs' copy must say the same.
func TestCheckConfigExample(t *testing.T) {
	path := filepath.Join("..", "..", "examples", "eventpipe-check.yaml")
	shipped, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	shown := docblock.Starting(t, "docs/policies.md", "# examples/eventpipe-check.yaml")
	if body := strings.Join(strings.Split(shown, "\n")[1:], "\n"); !strings.HasSuffix(string(shipped), body) {
		t.Errorf("docs/policies.md's check configuration differs from %s:\n%s", path, shown)
	}
	day := func(s string) func() time.Time {
		return func() time.Time {
			d, err := time.Parse(time.DateOnly, s)
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	for _, stack := range []string{"dev", "staging", "prod"} {
		var out, errOut bytes.Buffer
		err := runCheck(context.Background(), nil, &out, &errOut, nil, checkOptions{stack: stack, policyFlags: policyFlags{config: path, outputs: []string{"text"}, now: day("2026-11-21")}})
		if err != nil {
			t.Fatalf("%s with the docs/policies.md config: %v\n%s", stack, err, out.String())
		}
	}
	var out, errOut bytes.Buffer
	err = runCheck(context.Background(), nil, &out, &errOut, nil, checkOptions{stack: "prod", policyFlags: policyFlags{config: path, outputs: []string{"text"}, now: day("2027-07-01")}})
	var ee *cli.ExitError
	if !errors.As(err, &ee) || ee.Code != 1 || !strings.Contains(out.String(), "EP000") || !strings.Contains(out.String(), "expired on 2027-06-30") {
		t.Fatalf("after the waiver's expiry: %v\n%s", err, out.String())
	}
}
