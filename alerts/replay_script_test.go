package alerts

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeGcloud records every call and plays Pub/Sub: `pull` prints the
// fixture, `publish` fails for messages containing FAIL.
const fakeGcloud = `#!/usr/bin/env bash
printf '%s\n' "$*" >> "$GCLOUD_LOG"
case "$1 $2 $3" in
  "pubsub subscriptions pull") cat "$PULL_FIXTURE" ;;
  "pubsub topics publish") case "$*" in *FAIL*) exit 1 ;; esac ;;
esac
`

// TestRunbookReplayScriptRuns executes the replay script of a rendered
// runbook with bash and jq against a fake gcloud: every pulled message is
// republished with its data and attributes, and acked on the DLQ only when
// its publish succeeded.
func TestRunbookReplayScriptRuns(t *testing.T) {
	for _, tool := range []string{"bash", "jq", "base64"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: the replay script needs it", tool)
		}
	}
	ps := mustPolicySet(t, testTarget(), Defaults())
	var doc string
	for _, p := range ps.Policies {
		if p.Key == "orders-push/dlq-critical" {
			doc = p.Documentation
		}
	}
	// Notification markdown has no code blocks: each command is a list item
	// of its own, on one line.
	var script string
	for _, line := range strings.Split(doc, "\n") {
		if cmd, ok := strings.CutPrefix(line, "- gcloud pubsub subscriptions pull "); ok {
			script = "gcloud pubsub subscriptions pull " + cmd
		}
	}
	if script == "" {
		t.Fatal("runbook has no gcloud replay command")
	}
	for _, line := range []string{
		"- eventpipe replay --subscription projects/acme-prod/subscriptions/orders-push-dlq --topic projects/acme-prod/topics/orders --dry-run\n",
		"- eventpipe replay --subscription projects/acme-prod/subscriptions/orders-push-dlq --topic projects/acme-prod/topics/orders\n",
	} {
		if !strings.Contains(doc, line) {
			t.Errorf("runbook lacks %q", line)
		}
	}

	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "gcloud"), []byte(fakeGcloud), 0o755); err != nil {
		t.Fatal(err)
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	fixture := fmt.Sprintf(`[
 {"ackId": "ack-1", "message": {"data": %q, "attributes": {"route": "orders", "note": "two words"}, "messageId": "1"}},
 {"ackId": "ack-2", "message": {"data": %q, "messageId": "2"}},
 {"ackId": "ack-3", "message": {"data": %q, "messageId": "3"}}
]`, b64(`{"id":"o-1","total":12}`), b64("FAIL this one"), b64("plain text"))
	if err := os.WriteFile(filepath.Join(dir, "pull.json"), []byte(fixture), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "gcloud.log")
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"GCLOUD_LOG="+log, "PULL_FIXTURE="+filepath.Join(dir, "pull.json"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("script failed: %v\n%s\nscript:\n%s", err, out, script)
	}
	calls, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"pubsub subscriptions pull projects/acme-prod/subscriptions/orders-push-dlq --limit=10 --format=json",
		`pubsub topics publish projects/acme-prod/topics/orders --message={"id":"o-1","total":12} --attribute=note=two words,route=orders`,
		"pubsub subscriptions ack projects/acme-prod/subscriptions/orders-push-dlq --ack-ids=ack-1",
		"pubsub topics publish projects/acme-prod/topics/orders --message=FAIL this one",
		"pubsub topics publish projects/acme-prod/topics/orders --message=plain text",
		"pubsub subscriptions ack projects/acme-prod/subscriptions/orders-push-dlq --ack-ids=ack-3",
	}
	if got := strings.Split(strings.TrimSpace(string(calls)), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("gcloud calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
