package cli

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/devpipe"
	"github.com/eventpipe/eventpipe/internal/testing/devtest"
)

// journeyStack has a push and a pull pipeline, each retrying after 1 s and 2 s, so
// that five attempts at the stack's real backoff (dev --serve's scale 1) take
// seconds rather than the minutes of the default 10 s–600 s policy.
const journeyStack = `config:
  eventpipe:project: acme-dev
  eventpipe:projectNumber: "123456789012"
  eventpipe:defaults:
    minBackoff: 1s
    maxBackoff: 2s
  eventpipe:pipelines:
    orders:
      consumer:
        image: europe-west1-docker.pkg.dev/acme-dev/eventpipe/consumer:1.4.0
      subscriptions:
        materializer:
          delivery: push
    invoices:
      consumer:
        image: europe-west1-docker.pkg.dev/acme-dev/eventpipe/consumer:1.4.0
        minInstances: 1
      subscriptions:
        render:
          delivery: pull
`

// loadCPU keeps every core busy until the test ends, as a shared machine under
// other builds is: the journeys must hold under load, not only on an idle machine.
func loadCPU(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 * runtime.NumCPU() {
		wg.Go(func() {
			for x := uint64(1); ctx.Err() == nil; x++ {
				for range 1 << 16 {
					x = x*6364136223846793005 + 1442695040888963407
				}
			}
		})
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// serving is a running `eventpipe dev --serve`, what it printed and its /stats.
type serving struct {
	devtest.Serving
	t *testing.T
}

// stats reads /stats?format=json.
func (s serving) stats() []devpipe.Row {
	return devtest.Stats(s.t, s.Base)
}

// waitRows polls /stats until ok holds for every row, or fails after within.
func (s serving) waitRows(t *testing.T, within time.Duration, what string, ok func(devpipe.Row) bool) []devpipe.Row {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		rows := s.stats()
		all := len(rows) > 0
		for _, r := range rows {
			all = all && ok(r)
		}
		if all {
			return rows
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %+v", what, within, rows)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s serving) publish(t *testing.T, pipeline, body string) {
	t.Helper()
	resp, err := http.Post(s.Base+"/publish/"+pipeline, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("publish to %s: %s", pipeline, resp.Status)
	}
}

// TestReplayJourneyOnDevServe follows the local journey the README gives, on a push
// and a pull pipeline, at the stack's real backoff and with every core busy: publish
// poison to `eventpipe dev --serve`, see it dead-lettered, dry-run the printed replay
// commands (twice: a dry run consumes nothing), then replay for real and see the
// messages back on their topics and, still poison, dead-lettered again.
func TestReplayJourneyOnDevServe(t *testing.T) {
	skipShort(t, "the replay journey waits out Pub/Sub's real backoff with every core busy")
	loadCPU(t)
	file := filepath.Join(t.TempDir(), "Pulumi.journey.yaml")
	if err := os.WriteFile(file, []byte(journeyStack), 0o600); err != nil {
		t.Fatal(err)
	}
	s := serving{devtest.Serve(t, testRoot(), "--stack", "journey", "--stack-file", file), t}
	if len(s.Replays) != 2 {
		t.Fatalf("dev --serve printed %d replay commands, want one per subscription: %v", len(s.Replays), s.Replays)
	}
	const poison = 2
	for _, p := range []string{"orders", "invoices"} {
		for i := range poison {
			s.publish(t, p, fmt.Sprintf("not json %d", i))
		}
	}
	// Five attempts, 1 s + 2 s + 2 s + 2 s apart, then the DLQ.
	s.waitRows(t, 2*time.Minute, "dead-lettered", func(r devpipe.Row) bool { return r.DeadLettered == poison && r.InDLQ == poison })
	t.Setenv("PUBSUB_EMULATOR_HOST", s.Emulator)
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		root := testRoot()
		var out, errOut strings.Builder
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs(args)
		if err := root.ExecuteContext(ctx); err != nil { // bounded: a dry run that never ends fails here
			t.Fatalf("eventpipe %s: %v\n%s\n%s", strings.Join(args, " "), err, out.String(), errOut.String())
		}
		return out.String()
	}
	for _, args := range s.Replays {
		for range 2 {
			if out := run(append(args, "--dry-run")...); !strings.HasPrefix(out, fmt.Sprintf("would replay %d of %d messages", poison, poison)) {
				t.Errorf("dry run: %q, want %d of %d", out, poison, poison)
			}
		}
	}
	s.waitRows(t, time.Second, "dry runs consumed nothing", func(r devpipe.Row) bool { return r.InDLQ == poison })
	for _, args := range s.Replays {
		if out := run(args...); !strings.HasPrefix(out, fmt.Sprintf("replayed %d of %d messages", poison, poison)) {
			t.Errorf("replay: %q, want %d of %d", out, poison, poison)
		}
	}
	// Replayed, the messages are published again (by another client of the emulator)
	// and, still poison, end in the DLQ again after five attempts.
	s.waitRows(t, 2*time.Minute, "replayed poison dead-lettered again", func(r devpipe.Row) bool {
		return r.Published == 2*poison && r.DeadLettered == 2*poison && r.InDLQ == poison && len(r.Pending) == 0
	})
}
