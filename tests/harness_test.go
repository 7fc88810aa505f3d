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
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	pubsubpb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/storeurl"
	"github.com/eventpipe/eventpipe/devpipe"
	"github.com/eventpipe/eventpipe/internal/testing/proctest"
)

// consumerBinary is the consumer built once per test binary run.
var consumerBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "eventpipe-integration-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "consumer")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/consumer")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/consumer: %v\n%s", err, out)
	}
	return bin, nil
})

// buildConsumer returns the path of cmd/consumer built for this run (once).
func buildConsumer(t *testing.T) string {
	t.Helper()
	bin, err := consumerBinary()
	if err != nil {
		t.Fatal(err)
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
	resp, err := http.Post(p.URL+"/pubsub/push", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err
	}
	var r struct {
		Outcome string `json:"outcome"`
	}
	_ = json.Unmarshal(data, &r)
	return resp.StatusCode, r.Outcome, nil
}

// pushUntil pushes body until the outcome is one of want (retries while the
// consumer answers retry, e.g. while a dead holder's lease runs out).
func (p *proc) pushUntil(t *testing.T, body []byte, want ...string) string {
	t.Helper()
	var last string
	for range 100 {
		status, outcome, err := p.push(body)
		switch {
		case err != nil:
			last = err.Error()
		case slices.Contains(want, outcome):
			return outcome
		default:
			last = fmt.Sprintf("status %d outcome %q", status, outcome)
		}
		time.Sleep(100 * time.Millisecond) // the consumer answers retry until a dead holder's lease runs out
	}
	t.Fatalf("push until %s: gave up after 100 tries: %s", strings.Join(want, "/"), last)
	return ""
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

// logf logs a figure of the run (shown with go test -v).
func logf(t *testing.T, format string, args ...any) { t.Helper(); t.Logf(format, args...) }
