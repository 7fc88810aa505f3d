package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestDevHandler runs `eventpipe dev --handler` with the Python example
// handler behind routes that send the scenario's events to it: the scenario
// passes (nothing lost), the handler's calls are counted, and no duplicate
// reached it.
func TestDevHandler(t *testing.T) {
	t.Parallel() // a whole local pipeline of its own (own data dir, no --serve port): mostly waiting on pstest
	dir := t.TempDir()
	stack := filepath.Join(dir, "Pulumi.dev.yaml")
	if err := os.WriteFile(stack, []byte(`config:
  eventpipe:project: acme-dev
  eventpipe:projectNumber: "123456789012"
  eventpipe:defaults:
    dlqRetention: 7d
  eventpipe:pipelines:
    orders:
      consumer:
        image: europe-docker.pkg.dev/acme/eventpipe/consumer:1.2.3
      subscriptions:
        main:
          delivery: push
`), 0o600); err != nil {
		t.Fatal(err)
	}
	// The scenario's events ({eventId, service, status, ...}) go to the handler.
	routes := filepath.Join(dir, "routes.json")
	if err := os.WriteFile(routes, []byte(`{"routes":[{"name":"orders","match":{"fields":["service","status"]},"mode":"lease",
  "fields":{"orderId":{"from":["service"],"type":"string","required":true}},"dedupe":{"eventIdField":"eventId"},
  "action":{"maxAttempts":5,"timeout":"10s","leaseTTL":"1m","heartbeat":"10s"}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	example, err := filepath.Abs(filepath.Join("..", "..", "examples", "handlers", "python", "handler.py"))
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, err := executeLog(t, "dev", "--config", stack, "--data-dir", filepath.Join(dir, "data"), "--routes", routes,
		"--handler", "python3 "+example, "--events", "4", "--duplicates", "2", "--out-of-order", "1", "--poison", "1", "--outage", "200ms")
	if err != nil {
		t.Fatalf("eventpipe dev --handler: exit %d: %v\n%s\n%s", ExitCode(err), err, out, errOut)
	}
	// 4 + 4 events and 1 older one have their own event ids: 9 keys; the 2
	// duplicates and every redelivery after a 2xx never reach the handler.
	m := regexp.MustCompile(`handler: (\d+) calls? \((\d+) deliver(?:y|ies)\), (\d+) keys?, \d+ failed \(retried\), 0 repeated after a 2xx`).FindStringSubmatch(out)
	if m == nil || m[3] != "9" {
		t.Fatalf("want a handler line with 9 keys and 0 repeated:\n%s\n%s", out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "handler.log")); err != nil {
		t.Errorf("handler output: %v", err)
	}
}
