package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/internal/cli"
	"github.com/eventpipe/eventpipe/internal/testing/devtest"
	"github.com/eventpipe/eventpipe/internal/testing/docblock"
)

// TestReadmeAuditCommands parses every `eventpipe audit` command of docs/audit.md's
// commands with the command's own flags: each flag it shows exists and takes its value.
func TestReadmeAuditCommands(t *testing.T) {
	blocks := docblock.Starting(t, "docs/audit.md", "gcloud auth application-default login                       # or any Application Default Credentials") +
		docblock.Starting(t, "docs/audit.md", "gcloud asset export --organization=ORG_ID --content-type=resource --output-path=gs://BUCKET/resources.json \\")
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
			t.Errorf("docs/audit.md: eventpipe audit%s: %v", cmdline, err)
		}
		if args := cmd.Flags().Args(); len(args) != 0 {
			t.Errorf("docs/audit.md: eventpipe audit%s: stray arguments %v", cmdline, args)
		}
		n++
	}
	if n < 5 {
		t.Fatalf("found %d audit commands in docs/audit.md, want the 5 it shows", n)
	}
}

// TestReadmeAuditOfDevServe follows docs/audit.md's emulator audit: start dev
// --serve, take the PUBSUB_EMULATOR_HOST it prints, and audit its
// --project there: the dev stack's subscriptions are read.
func TestReadmeAuditOfDevServe(t *testing.T) {
	var line string
	for _, l := range strings.Split(docblock.Starting(t, "docs/audit.md", "gcloud auth application-default login                       # or any Application Default Credentials"), "\n") {
		if strings.HasPrefix(l, "PUBSUB_EMULATOR_HOST=") {
			line = l
		}
	}
	_, cmdline, ok := strings.Cut(line, "eventpipe audit")
	if !ok {
		t.Fatalf("docs/audit.md's audit block has no PUBSUB_EMULATOR_HOST=… eventpipe audit line")
	}
	if i := strings.Index(cmdline, "#"); i >= 0 {
		cmdline = cmdline[:i]
	}
	host := devtest.Serve(t, newRootCmd(), "--stack", "dev").Emulator
	t.Setenv("PUBSUB_EMULATOR_HOST", host)
	out, errOut, err := executeLog(t, append([]string{"audit", "-o", "json"}, strings.Fields(cmdline)...)...)
	if code := cli.ExitCode(err); code == 2 {
		t.Fatalf("audit%s at %s: exit 2: %v\n%s", cmdline, host, err, errOut)
	}
	var rep struct {
		Resources int `json:"resources"`
	}
	// The dev stack declares 3 topics, 3 subscriptions and their 3 DLQ topics and subscriptions.
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Resources < 12 {
		t.Errorf("audit%s read %d resources (%v), want the dev stack's 12 topics and subscriptions at least:\n%s", cmdline, rep.Resources, err, out)
	}
}

// TestAuditStackOfDevServeFindsNoDrift: the local pipeline declares its stack's topics and
// subscriptions as the components do, so `eventpipe audit --stack dev` against its
// emulator compares them with the stack and finds no drift (EP200): what the emulator
// cannot hold or show is not a difference.
func TestAuditStackOfDevServeFindsNoDrift(t *testing.T) {
	t.Setenv("PUBSUB_EMULATOR_HOST", devtest.Serve(t, newRootCmd(), "--stack", "dev").Emulator)
	out, errOut, err := executeLog(t, "audit", "--stack", "dev", "-o", "json")
	if code := cli.ExitCode(err); code == 2 {
		t.Fatalf("audit --stack dev: exit 2: %v\n%s", err, errOut)
	}
	var rep struct {
		Findings []struct {
			RuleID  string `json:"ruleId"`
			URN     string `json:"urn"`
			Message string `json:"message"`
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, f := range rep.Findings {
		if f.RuleID == "EP200" {
			t.Errorf("drift against the local pipeline: %s: %s", f.URN, f.Message)
		}
	}
}
