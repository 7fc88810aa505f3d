package devpipe

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/spec"
)

// handlerStack is a stack with one pipeline whose routes (examples/handlers)
// send order events to the handler; consumer and subscriptions are its
// pipeline's (YAML, indented for it).
func handlerStack(t *testing.T, consumer, subscriptions string) (*spec.Stack, string) {
	t.Helper()
	routes, err := filepath.Abs(filepath.Join("..", "examples", "handlers", "routes.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc := `config:
  eventpipe:project: acme-dev
  eventpipe:projectNumber: "123456789012"
  eventpipe:defaults:
    dlqRetention: 7d # pstest keeps at most 7 days
  eventpipe:pipelines:
    orders:
      consumer:
        image: europe-docker.pkg.dev/acme/eventpipe/consumer:1.2.3
` + consumer + `      subscriptions:
` + subscriptions
	f, err := spec.ParseStackFile("Pulumi.dev.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.Load("dev")
	if err != nil {
		t.Fatal(err)
	}
	return st, routes
}

// TestHandlerBesideThePipeline runs the Python example handler beside a
// local pipeline (eventpipe dev --handler), pushed to and pull-only on a
// worker pool: an event published twice and another one reach it once
// each, counted, and nothing repeats (the consumers' health checks of the
// handler are not calls).
func TestHandlerBesideThePipeline(t *testing.T) {
	for name, stack := range map[string][2]string{
		"push":                   {"", "        main:\n          delivery: push\n"},
		"pull-only, worker pool": {"        workerPool: true\n        minInstances: 1\n", "        main:\n          delivery: pull\n"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // two pipelines, each mostly waiting on its handler and its deliveries
			handlerBesideThePipeline(t, stack[0], stack[1])
		})
	}
}

func handlerBesideThePipeline(t *testing.T, consumer, subscriptions string) {
	st, routes := handlerStack(t, consumer, subscriptions)
	example, err := filepath.Abs(filepath.Join("..", "examples", "handlers", "python", "handler.py"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var log syncBuffer
	env, err := Start(ctx, Options{Stack: st, DataDir: t.TempDir(), BackoffScale: 0.01, Routes: routes, ConsumerLog: &log,
		Handler: &HandlerOptions{Command: "python3 " + example}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"e-1", "e-1", "e-2"} {
		data := fmt.Sprintf(`{"eventType":"order_placed","eventId":%q,"orderId":"o%s"}`, id, id)
		if _, err := env.Publish(ctx, "orders", []byte(data), nil); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		rows := env.Tally.Rows(env.Topology)
		if rows[0].Settled() {
			if rows[0].Applied != 2 || rows[0].Duplicate != 1 {
				t.Fatalf("rows %+v: want 2 applied and 1 duplicate\n%s", rows, log.String())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled: %+v", rows)
		}
		time.Sleep(50 * time.Millisecond) // the tally follows the consumer's log: poll it
	}
	stats := env.Handler.Stats()
	if err := env.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if stats.Deliveries != 2 || stats.Keys != 2 || stats.Repeats != 0 || stats.Check() != nil {
		t.Fatalf("handler %s; want 2 deliveries of 2 keys, none repeated", stats)
	}
}

// syncBuffer is a strings.Builder safe for the consumers' concurrent lines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestStartHandlerFailsEarly: a handler command that exits, or never
// answers its health path, is an error saying which, not a wait for the
// whole Ready bound or a hang.
func TestStartHandlerFailsEarly(t *testing.T) {
	for _, tt := range []struct {
		command string
		ready   time.Duration
		want    string
	}{
		{"exit 3", time.Minute, "the command exited (exit status 3)"},
		{"sleep 30", 300 * time.Millisecond, "not within 300ms"},
	} {
		started := time.Now()
		h, err := StartHandler(t.Context(), HandlerOptions{Command: tt.command, Ready: tt.ready})
		if err == nil {
			_ = h.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) || time.Since(started) > 10*time.Second {
			t.Errorf("%q: %v after %s; want an error saying %q", tt.command, err, time.Since(started), tt.want)
		}
	}
}

// TestHandlerStatsLineCountsInEnglish: for every combination of counts around one, each
// count of the handler line takes its noun's singular exactly when it is 1 ("1 call (1
// delivery), 1 key", not "1 calls (1 deliveries), 1 keys"), and the line still matches
// the pattern `eventpipe dev --handler`'s test reads it with.
func TestHandlerStatsLineCountsInEnglish(t *testing.T) {
	line := regexp.MustCompile(`^handler: (\d+) calls? \((\d+) deliver(?:y|ies)\), (\d+) keys?, \d+ failed \(retried\), \d+ repeated after a 2xx$`)
	for calls := range 3 {
		for deliveries := range 3 {
			for keys := range 3 {
				s := HandlerStats{Calls: calls, Deliveries: deliveries, Keys: keys}.String()
				if !line.MatchString(s) {
					t.Fatalf("%q does not match %s", s, line)
				}
				for _, c := range []struct {
					n         int
					one, many string
				}{{calls, "call", "calls"}, {deliveries, "delivery", "deliveries"}, {keys, "key", "keys"}} {
					want := fmt.Sprintf("%d %s", c.n, c.many)
					if c.n == 1 {
						want = "1 " + c.one
					}
					if !regexp.MustCompile(`\b` + want + `\b`).MatchString(s) {
						t.Errorf("%q: want %q", s, want)
					}
				}
			}
		}
	}
}
