package cli

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/internal/testing/devtest"
)

// handlerStack is a team's stack as the handler example has it: one pipeline whose
// consumer.routes is the routes file's path inside the consumer's image.
const handlerStack = `config:
  eventpipe:project: acme-dev
  eventpipe:projectNumber: "123456789012"
  eventpipe:pipelines:
    orders:
      consumer:
        image: europe-west1-docker.pkg.dev/acme-dev/eventpipe/consumer:1.4.0
        routes: /etc/eventpipe/routes.json
      subscriptions:
        main:
          delivery: push
`

// ordersRoutes take order events: an order's latest state, newest by its sequence.
const ordersRoutes = `{"routes":[{"name":"orders","match":{"typeField":"eventType","types":["order_placed","order_shipped"]},
  "mode":"latest-state","target":{"collection":"orders","id":"orderId"},
  "fields":{"orderId":{"from":["orderId"],"type":"string","required":true},"status":{"from":["eventType"],"type":"string"},
    "at":{"from":["at"],"type":"timestamp","required":true},"sequence":{"from":["sequence"],"type":"integer"}},
  "ordering":{"eventTime":"at","sequence":"sequence"},"dedupe":{"eventIdField":"eventId"}}]}`

// teamFiles writes the stack and the routes, and returns their paths.
func teamFiles(t *testing.T) (stack, routes string) {
	dir := t.TempDir()
	stack, routes = filepath.Join(dir, "Pulumi.dev.yaml"), filepath.Join(dir, "routes.json")
	for path, body := range map[string]string{stack: handlerStack, routes: ordersRoutes} {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return stack, routes
}

// TestDevRoutesInsideTheImage: the stack's consumer.routes names a file of the image,
// which this machine lacks: dev stops at once, naming the key, the path and --routes.
func TestDevRoutesInsideTheImage(t *testing.T) {
	stack, _ := teamFiles(t)
	_, _, err := executeLog(t, "dev", "--stack-file", stack, "--data-dir", t.TempDir())
	if ExitCode(err) != 2 || err == nil || !strings.Contains(err.Error(), "pipeline orders: consumer.routes is /etc/eventpipe/routes.json, a path inside the consumer's image") ||
		!strings.Contains(err.Error(), "pass --routes FILE") {
		t.Errorf("exit %d, %v; want exit 2 naming consumer.routes and --routes", ExitCode(err), err)
	}
}

// TestDevRefusesToCallNothingAppliedGood: the team's routes take none of the built-in
// events; the run loses nothing, but must not say so and exit 0: it exits 1 naming the
// subscription and --samples.
func TestDevRefusesToCallNothingAppliedGood(t *testing.T) {
	t.Parallel() // a whole local pipeline of its own (own data dir, no --serve port): mostly waiting on pstest
	stack, routes := teamFiles(t)
	out, _, err := executeLog(t, "dev", "--stack-file", stack, "--routes", routes, "--data-dir", t.TempDir(),
		"--events", "3", "--duplicates", "1", "--out-of-order", "1", "--poison", "1")
	if ExitCode(err) != 1 || err == nil || !strings.Contains(err.Error(), "orders/main applied none of its") || !strings.Contains(err.Error(), "--samples DIR") {
		t.Errorf("exit %d, %v; want exit 1 saying orders/main applied nothing and how to play your own events", ExitCode(err), err)
	}
	if strings.Contains(out, "nothing lost") {
		t.Errorf("a run that applied nothing printed the verdict:\n%s", out)
	}
}

// TestDevPlaysTheTeamsSamples: with --samples the scenario plays the team's own events
// through its routes: they are applied, the run passes; a sample its routes refuse fails
// the run, named by its file and line with the consumer's reason.
func TestDevPlaysTheTeamsSamples(t *testing.T) {
	t.Parallel() // a whole local pipeline of its own (own data dir, no --serve port): mostly waiting on pstest
	stack, routes := teamFiles(t)
	samples := t.TempDir()
	good := `{"eventId":"e1","eventType":"order_placed","orderId":"o-1","at":"2026-01-02T03:04:05Z","sequence":1}
{"eventId":"e2","eventType":"order_shipped","orderId":"o-1","at":"2026-01-02T04:04:05Z","sequence":2}
{"eventId":"e3","eventType":"order_placed","orderId":"o-2","at":"2026-01-02T03:05:05Z","sequence":1}
`
	path := filepath.Join(samples, "orders.jsonl")
	if err := os.WriteFile(path, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"dev", "--stack-file", stack, "--routes", routes, "--samples", samples, "--duplicates", "2", "--poison", "2", "--outage", "200ms"}
	out, errOut, err := executeLog(t, append(args, "--data-dir", t.TempDir())...)
	if err != nil || !strings.Contains(out, "nothing lost") {
		t.Fatalf("dev --samples: exit %d, %v\n%s\n%s", ExitCode(err), err, out, errOut)
	}
	// 3 samples, 2 again, 2 poison, the 3 again in the outage: the 3 are applied once.
	if !regexp.MustCompile(`orders\s+main\s+10\s+3\s+5\s+0\s+2\s+0`).MatchString(out) {
		t.Errorf("want published 10, applied 3, duplicate 5, stale 0, dead-lettered 2, poison-acked 0:\n%s", out)
	}
	// A sample without the required orderId is refused.
	bad := good + `{"eventId":"e4","eventType":"order_placed","at":"2026-01-02T03:06:05Z"}` + "\n"
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err = executeLog(t, append(args, "--data-dir", t.TempDir())...)
	if ExitCode(err) != 1 || err == nil || !strings.Contains(err.Error(), "sample "+path+":4: dead-lettered on orders/main: ") ||
		!strings.Contains(err.Error(), "orderId") || strings.Contains(out, "nothing lost") {
		t.Errorf("exit %d, %v; want exit 1 naming %s:4, its fate and the missing orderId\n%s", ExitCode(err), err, path, out)
	}
}

// TestServeExamplesAreApplied: every curl command dev --serve prints publishes an event
// its pipeline's routes take: run as printed, each is applied, none dead-lettered, for
// the default routes of the dev stack and for a team's routes.
func TestServeExamplesAreApplied(t *testing.T) {
	stack, routes := teamFiles(t)
	for _, args := range [][]string{{"--stack", "dev"}, {"--stack-file", stack, "--routes", routes}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			s := devtest.Serve(t, testRoot(), args...)
			printed := s.Printed
			curl := regexp.MustCompile(`curl -sS -X POST '([^']+)'(?: -H '([^:]+): ([^']*)')? -d '([^']*)'`)
			published := map[string]int{}
			for _, m := range curl.FindAllStringSubmatch(printed, -1) {
				req, err := http.NewRequest(http.MethodPost, m[1], strings.NewReader(m[4]))
				if err != nil {
					t.Fatal(err)
				}
				if m[2] != "" {
					req.Header.Set(m[2], m[3])
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("%s: %v %v", m[0], resp, err)
				}
				resp.Body.Close()
				published[strings.TrimPrefix(m[1][:strings.IndexAny(m[1]+"?", "?")], s.Base+"/publish/")]++
			}
			if len(published) == 0 {
				t.Fatalf("no curl command printed:\n%s", printed)
			}
			deadline := time.Now().Add(time.Minute)
			for {
				rows := devtest.Stats(t, s.Base)
				done, bad := 0, ""
				for _, r := range rows {
					if r.Applied == published[r.Pipeline] && r.Published == published[r.Pipeline] {
						done++
					}
					if r.DeadLettered+r.PoisonAcked > 0 || r.Retried > 0 {
						bad += fmt.Sprintf(" %+v", r)
					}
				}
				if bad != "" {
					t.Fatalf("a printed example was not applied:%s\n%s", bad, printed)
				}
				if done == len(rows) {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("printed examples %v not all applied: %+v\n%s", published, rows, printed)
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
}
