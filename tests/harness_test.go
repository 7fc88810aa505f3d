// Package tests holds eventpipe's integration runs: cmd/consumer built and
// started as a real process against pstest, PostgreSQL and the npm Firestore
// emulator, driven over HTTP and pull, killed with SIGKILL at the engine's
// failpoints and restarted. Real-cloud runs are behind the gcp build tag.
package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pubsubpb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	http_helper "github.com/gruntwork-io/terratest/modules/http-helper"
	"github.com/gruntwork-io/terratest/modules/logger"
	"github.com/gruntwork-io/terratest/modules/retry"
	"github.com/gruntwork-io/terratest/modules/shell"
	test_structure "github.com/gruntwork-io/terratest/modules/test-structure"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/storeurl"
	"github.com/eventpipe/eventpipe/devpipe"
	"github.com/eventpipe/eventpipe/internal/proctest"
)

// stageDir keeps what test-structure stages save between runs, so that
// SKIP_build_consumer=1 reuses the binary of an earlier run.
func stageDir() string { return filepath.Join(os.TempDir(), "eventpipe-integration") }

// buildConsumer is the "build_consumer" stage: go build ./cmd/consumer into
// the stage folder. It returns the binary's path.
func buildConsumer(t *testing.T) string {
	t.Helper()
	dir := stageDir()
	test_structure.RunTestStage(t, "build_consumer", func() {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// Build beside, then rename: a concurrent run keeps executing the old file.
		bin := filepath.Join(dir, "consumer")
		tmp := fmt.Sprintf("%s.%d", bin, os.Getpid())
		shell.RunCommand(t, shell.Command{Command: "go", Args: []string{"build", "-o", tmp, "./cmd/consumer"}, WorkingDir: ".."})
		if err := os.Rename(tmp, bin); err != nil {
			t.Fatal(err)
		}
		test_structure.SaveString(t, dir, "consumer_binary", bin)
	})
	bin := test_structure.LoadString(t, dir, "consumer_binary")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("consumer binary %s: %v (unset SKIP_build_consumer to build it)", bin, err)
	}
	return bin
}

// proc is one running consumer process.
type proc struct {
	*proctest.Proc
	t *testing.T
}

// startProc starts the consumer binary with env on top of this process's
// environment and waits until /healthz answers.
func startProc(t *testing.T, bin string, env map[string]string) *proc {
	t.Helper()
	return startProcTee(t, bin, env, nil)
}

// startProcTee is startProc that also copies the process's output to tee.
func startProcTee(t *testing.T, bin string, env map[string]string, tee io.Writer) *proc {
	t.Helper()
	pairs := []string{"EVENTPIPE_SHUTDOWN_TIMEOUT=5s"}
	for k, v := range env {
		pairs = append(pairs, k+"="+v)
	}
	return &proc{Proc: proctest.Start(t, bin, proctest.Options{Env: pairs, Tee: tee}), t: t}
}

// push POSTs a push envelope and returns the status and the outcome the
// consumer reports in its body; err is set when the connection failed (the
// process died mid-request).
func (p *proc) push(body []byte) (int, string, error) {
	status, resp, err := http_helper.HTTPDoE(p.t, http.MethodPost, p.URL+"/pubsub/push", bytes.NewReader(body),
		map[string]string{"Content-Type": "application/json"}, nil)
	if err != nil {
		return 0, "", err
	}
	var r struct {
		Outcome string `json:"outcome"`
	}
	_ = json.Unmarshal([]byte(resp), &r)
	return status, r.Outcome, nil
}

// pushUntil pushes body until the outcome is one of want (retries while the
// consumer answers retry, e.g. while a dead holder's lease runs out).
func (p *proc) pushUntil(t *testing.T, body []byte, want ...string) string {
	t.Helper()
	return retry.DoWithRetry(t, "push until "+strings.Join(want, "/"), 100, 100*time.Millisecond, func() (string, error) {
		status, outcome, err := p.push(body)
		if err != nil {
			return "", err
		}
		for _, w := range want {
			if outcome == w {
				return outcome, nil
			}
		}
		return "", fmt.Errorf("status %d outcome %q", status, outcome)
	})
}

// linesWith returns the log lines whose fields equal every key/value pair.
func linesWith(lines []map[string]any, kv ...string) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		ok := true
		for i := 0; i+1 < len(kv); i += 2 {
			if fmt.Sprint(l[kv[i]]) != kv[i+1] {
				ok = false
			}
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// envelopeFor builds the push body Pub/Sub would send for one delivery.
func envelopeFor(t *testing.T, sub, id string, data []byte, attempt int32) []byte {
	t.Helper()
	b, err := devpipe.PushBody(sub, &pubsubpb.ReceivedMessage{DeliveryAttempt: attempt, Message: &pubsubpb.PubsubMessage{
		MessageId: id, Data: data, PublishTime: timestamppb.New(time.Date(2026, 1, 8, 10, 0, 0, 0, time.UTC))}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// systemEvent is a service-health payload for the consumer's system_events route.
func systemEvent(eventID, service, status string, seq int, at time.Time) []byte {
	b, _ := json.Marshal(map[string]any{"eventId": eventID, "service": service, "status": status, "sequence": seq,
		"producedAt": at.UTC().Format(time.RFC3339Nano)})
	return b
}

// readDocs opens the store at url (after the consumer stopped, for bbolt's
// file lock) and returns the named documents; missing ones are absent.
func readDocs(t *testing.T, url string, keys ...store.Key) map[store.Key]store.Document {
	t.Helper()
	ctx := context.Background()
	st, err := storeurl.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	out := map[store.Key]store.Document{}
	err = st.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
		clear(out)
		for _, k := range keys {
			d, err := tx.Get(ctx, k)
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			out[k] = d
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// logf writes through terratest's logger (shown with go test -v).
func logf(t *testing.T, format string, args ...any) { logger.Default.Logf(t, format, args...) }
