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
	"github.com/eventpipe/eventpipe/consumer/store/boltstore"
	"github.com/eventpipe/eventpipe/consumer/storetest"
)

// helperEnv makes the test binary act as a consumer process: it delivers one
// event to a bbolt store and is expected to SIGKILL itself at the failpoint
// named by EVENTPIPE_FAILPOINT. Value: "worker|projection:/path/to.db".
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
	flow, path, ok := strings.Cut(spec, ":")
	if !ok {
		return fmt.Errorf("bad %s %q", helperEnv, spec)
	}
	hook, err := engine.KillAtFailpoints(os.Getenv(engine.FailpointEnv))
	if err != nil {
		return err
	}
	st, err := boltstore.Open(path)
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
// this process against the same bbolt file, after the dead holder's lease
// has lapsed, and checks that the effect happened exactly once.
func TestProcessKilledAtFailpoint(t *testing.T) {
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
	for _, tc := range tests {
		t.Run(string(tc.fp), func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "eventpipe.db")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"="+tc.flow+":"+db, engine.FailpointEnv+"="+string(tc.fp))
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("helper process was not killed at %s: %v\n%s", tc.fp, err, out)
			}
			if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("helper ended with %v, want SIGKILL at %s\n%s", exit, tc.fp, out)
			}

			st, err := boltstore.Open(db)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			later := func() time.Time { return time.Now().Add(time.Hour) } // the dead holder's lease has lapsed
			eng, err := engine.New(engine.Config{Store: st, Env: "prod", Now: later})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			o, err := deliverOnce(ctx, eng, tc.flow)
			if err != nil || o != tc.redelivery {
				t.Fatalf("redelivery after the kill: %s, %v; want %s", o, err, tc.redelivery)
			}
			o, err = deliverOnce(ctx, eng, tc.flow)
			switch tc.flow {
			case "worker":
				if typ, _ := engine.Classify(err); typ != engine.TypeDuplicate {
					t.Errorf("third delivery: %s, %v; want the lease COMPLETED (duplicate)", o, err)
				}
			default:
				if err != nil || o != engine.Duplicate {
					t.Errorf("third delivery: %s, %v; want duplicate", o, err)
				}
			}
		})
	}
}
