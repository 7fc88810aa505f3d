package cli

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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
	// 3 samples, 2 again, 2 poison, the 3 again in the outage. Push delivers
	// concurrently, as Pub/Sub does without ordering keys, so e2 may reach the
	// consumer before e1: then e1 and its copies are stale, never applied.
	// Whatever the order: e2 and e3 are applied once each, e1 at most once,
	// every other copy is a duplicate or stale, and the 2 poison are dead-lettered.
	if err := samplesOutcome(out); err != nil {
		t.Errorf("%v:\n%s", err, out)
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

// samplesOutcome checks the orders/main row of TestDevPlaysTheTeamsSamples'
// run against what any delivery order allows.
func samplesOutcome(out string) error {
	m := regexp.MustCompile(`orders\s+main\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)`).FindStringSubmatch(out)
	if m == nil {
		return fmt.Errorf("no orders/main row")
	}
	var n [6]int
	for i := range n {
		n[i], _ = strconv.Atoi(m[i+1])
	}
	published, applied, duplicate, stale, dead, poisonAcked := n[0], n[1], n[2], n[3], n[4], n[5]
	inOrder := applied == 3 && stale == 0              // e1 first: its copies are duplicates
	e1Late := applied == 2 && stale >= 1 && stale <= 3 // e2 first: e1 and its copies are stale
	if published != 10 || dead != 2 || poisonAcked != 0 || applied+duplicate+stale != 8 || !(inOrder || e1Late) {
		return fmt.Errorf("published %d, applied %d, duplicate %d, stale %d, dead-lettered %d, poison-acked %d; "+
			"want published 10, dead-lettered 2, poison-acked 0, and the 8 others applied 3 with none stale, or applied 2 with e1's 1-3 copies stale",
			published, applied, duplicate, stale, dead, poisonAcked)
	}
	return nil
}

// TestSamplesOutcome: the orders/main rows every delivery order can give pass,
// and rows that apply a copy twice, lose one or apply e1 after e2 do not.
func TestSamplesOutcome(t *testing.T) {
	for _, tc := range []struct {
		row  string
		pass bool
	}{
		{"10 3 5 0 2 0", true},  // in order
		{"10 2 3 3 2 0", true},  // e2 first, every e1 stale (the CI run at 792b2a8)
		{"10 2 4 2 2 0", true},  // e2 first, one e1 copy kept out as a duplicate of a stale one
		{"10 4 4 0 2 0", false}, // a copy applied twice
		{"10 3 4 0 2 0", false}, // one lost
		{"10 3 4 1 2 0", false}, // e1 applied and stale
		{"10 2 6 0 2 0", false}, // e1 never applied, yet nothing stale
		{"10 3 5 0 1 1", false}, // poison acked
	} {
		err := samplesOutcome("pipeline subscription\n  orders  main  " + tc.row + "  10  0\n")
		if (err == nil) != tc.pass {
			t.Errorf("%s: %v, want pass %v", tc.row, err, tc.pass)
		}
	}
}
