package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/store/storeurl"
	"github.com/eventpipe/eventpipe/internal/testing/pgtest"
	"github.com/eventpipe/eventpipe/internal/testing/storetest"
)

// helperEnv makes the test binary act as a consumer process: it delivers one
// event to a store and is expected to SIGKILL itself at the failpoint named
// by EVENTPIPE_FAILPOINT. Value: "worker|projection:STORE-URL".
const helperEnv = "EVENTPIPE_ENGINE_TEST_HELPER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(helperEnv); spec != "" {
		if err := helperProcess(spec); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(2)
		}
		os.Exit(0) // the failpoint was not hit: the parent reports it
	}
	os.Exit(m.Run())
}

var (
	crashEvent = engine.Event{MessageID: "msg-1", EventID: "evt-1", PublishTime: time.Date(2026, 1, 8, 10, 0, 1, 0, time.UTC),
		Payload: []byte(`{"eventId":"evt-1","service":"svc","status":"healthy"}`)}
	crashWrite = engine.Write{ID: "svc", EventTime: time.Date(2026, 1, 8, 10, 0, 0, 0, time.UTC), Fields: map[string]any{"status": "healthy"}}
)

func deliverOnce(ctx context.Context, eng *engine.Engine, flow string) (engine.Outcome, error) {
	if flow == "worker" {
		return storetest.Worker(ctx, eng, "effects", crashEvent)
	}
	return storetest.Projection(ctx, eng, "ops_services", crashEvent, crashWrite)
}

func helperProcess(spec string) error {
	flow, url, ok := strings.Cut(spec, ":")
	if !ok {
		return fmt.Errorf("bad %s %q", helperEnv, spec)
	}
	hook, err := engine.KillAtFailpoints(os.Getenv(engine.FailpointEnv))
	if err != nil {
		return err
	}
	st, err := storeurl.Open(context.Background(), url)
	if err != nil {
		return err
	}
	defer st.Close()
	eng, err := engine.New(engine.Config{Store: st, Env: "prod", Failpoint: hook})
	if err != nil {
		return err
	}
	_, err = deliverOnce(context.Background(), eng, flow)
	return err
}

// TestProcessKilledAtFailpoint runs a real process per failpoint that
// SIGKILLs itself there (EVENTPIPE_FAILPOINT), then redelivers the event from
// this process against the same store (a bbolt file; a PostgreSQL database),
// after the dead holder's lease has lapsed, and checks that the effect
// happened exactly once.
func TestProcessKilledAtFailpoint(t *testing.T) {
	pg := pgtest.Start(t)
	stores := []struct {
		name string
		url  func(t *testing.T, fp engine.Failpoint) string
	}{
		{"bbolt", func(t *testing.T, _ engine.Failpoint) string {
			return "bbolt://" + filepath.Join(t.TempDir(), "eventpipe.db")
		}},
		{"postgres", func(t *testing.T, fp engine.Failpoint) string {
			url, err := pg.NewDatabase(context.Background(), strings.ReplaceAll(string(fp), "-", "_"))
			if err != nil {
				t.Fatal(err)
			}
			return url
		}},
	}
	tests := []struct {
		fp   engine.Failpoint
		flow string
		// redelivery is the outcome of the effect's write on redelivery:
		// applied when the crash came before it, duplicate after.
		redelivery engine.Outcome
	}{
		{engine.WorkerAfterClaim, "worker", engine.Applied},
		{engine.WorkerBeforeApply, "worker", engine.Applied},
		{engine.WorkerAfterApply, "worker", engine.Duplicate},
		{engine.WorkerBeforeMarkDone, "worker", engine.Duplicate},
		{engine.ProjectionBeforeWrite, "projection", engine.Applied},
		{engine.ProjectionAfterWrite, "projection", engine.Duplicate},
		{engine.ProjectionBeforeAck, "projection", engine.Duplicate},
	}
	for _, sc := range stores {
		for _, tc := range tests {
			t.Run(sc.name+"/"+string(tc.fp), func(t *testing.T) {
				killAndRedeliver(t, sc.url(t, tc.fp), tc.fp, tc.flow, tc.redelivery)
			})
		}
	}
}

// killAndRedeliver runs the helper process against url until it SIGKILLs
// itself at fp, then redelivers from this process and checks the outcomes.
func killAndRedeliver(t *testing.T, url string, fp engine.Failpoint, flow string, redelivery engine.Outcome) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+flow+":"+url, engine.FailpointEnv+"="+string(fp))
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("helper process was not killed at %s: %v\n%s", fp, err, out)
	}
	if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("helper ended with %v, want SIGKILL at %s\n%s", exit, fp, out)
	}

	ctx := context.Background()
	st, err := storeurl.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	later := func() time.Time { return time.Now().Add(time.Hour) } // the dead holder's lease has lapsed
	eng, err := engine.New(engine.Config{Store: st, Env: "prod", Now: later})
	if err != nil {
		t.Fatal(err)
	}
	o, err := deliverOnce(ctx, eng, flow)
	if err != nil || o != redelivery {
		t.Fatalf("redelivery after the kill: %s, %v; want %s", o, err, redelivery)
	}
	// A worker's reservation is completed, a projection's document
	// written: either way the third delivery is a duplicate.
	if o, err = deliverOnce(ctx, eng, flow); err != nil || o != engine.Duplicate {
		t.Errorf("third delivery: %s, %v; want duplicate", o, err)
	}
}
