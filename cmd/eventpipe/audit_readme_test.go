package main

import (
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/docblock"
)

// TestReadmeAuditCommands parses every `eventpipe audit` command of the README's audit
// section with the command's own flags: each flag it shows exists and takes its value.
func TestReadmeAuditCommands(t *testing.T) {
	blocks := docblock.Starting(t, "README.md", "gcloud auth application-default login                       # or any Application Default Credentials") +
		docblock.Starting(t, "README.md", "gcloud asset export --organization=ORG_ID --content-type=resource --output-path=gs://BUCKET/resources.json \\")
	n := 0
	for _, line := range strings.Split(blocks, "\n") {
		_, cmdline, ok := strings.Cut(line, "eventpipe audit")
		if !ok {
			continue
		}
		if i := strings.IndexAny(cmdline, "#>"); i >= 0 {
			cmdline = cmdline[:i]
		}
		cmd := newAuditCmd()
		if err := cmd.ParseFlags(strings.Fields(cmdline)); err != nil {
			t.Errorf("README: eventpipe audit%s: %v", cmdline, err)
		}
		if args := cmd.Flags().Args(); len(args) != 0 {
			t.Errorf("README: eventpipe audit%s: stray arguments %v", cmdline, args)
		}
		n++
	}
	if n < 5 {
		t.Fatalf("found %d audit commands in the README, want the 5 it shows", n)
	}
}
