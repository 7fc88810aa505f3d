package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/route"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/boltstore"
	"github.com/eventpipe/eventpipe/internal/testing/consumertest"
	"github.com/eventpipe/eventpipe/internal/testing/proctest"
)

// TestCallbackHolderKilled: a consumer process is SIGKILLed right after
// reserving a callback's receipt. Retries to a new process are answered
// 409 with Retry-After (never "done") until the dead holder's reservation
// lapses; then a retry takes it over and processes the callback, and later
// retries replay that result.
func TestCallbackHolderKilled(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "consumer.db")
	runKey := store.Key{Collection: "validation_runs", ID: "dev__run-1"}
	seed(t, db, runKey, map[string]any{"runId": "run-1", "status": "running"})
	env := []string{"EVENTPIPE_STORE=bbolt://" + db, "EVENTPIPE_ROUTES=" + shortReceiptLease(t, "2s")}
	start := func(extra ...string) *proctest.Proc {
		return proctest.Start(t, consumerBinary(t), proctest.Options{Base: []string{"PATH=" + os.Getenv("PATH")}, Env: append(env, extra...)})
	}
	body := `{"run_id":"run-1","callback_id":"cb-7f3a","status":"completed","result_uri":"gs://results/run-1.json"}`

	dying := start(engine.FailpointEnv + "=" + string(engine.CallbackAfterReserve))
	if resp, err := http.Post(dying.URL+"/callbacks/validation", "application/json", strings.NewReader(body)); err == nil {
		resp.Body.Close()
		t.Fatalf("the callback was answered (%d); the process should have died after reserving", resp.StatusCode)
	}
	dying.WaitKilled(t)

	p := start()
	code, hdr, out := postCallback(t, p.URL, body)
	if code != http.StatusConflict || out["status"] != "processing" || hdr.Get("Retry-After") == "" {
		t.Fatalf("retry while the dead holder's reservation holds: %d %v %v; want 409 with Retry-After", code, hdr, out)
	}
	// Retry as a caller does, after Retry-After, until it is processed.
	deadline := time.Now().Add(30 * time.Second)
	for code == http.StatusConflict && time.Now().Before(deadline) {
		secs, err := strconv.Atoi(hdr.Get("Retry-After"))
		if err != nil || secs < 1 || secs > 2 {
			t.Fatalf("Retry-After %q: want 1-2 seconds (the 2s reservation)", hdr.Get("Retry-After"))
		}
		time.Sleep(time.Duration(secs) * time.Second)
		code, hdr, out = postCallback(t, p.URL, body)
	}
	if code != 200 || out["idempotent_replayed"] != false || out["status"] != "completed" {
		t.Fatalf("retry after the reservation lapsed: %d %v; want it processed", code, out)
	}
	received := out["received_at"]
	code, _, out = postCallback(t, p.URL, body)
	if code != 200 || out["idempotent_replayed"] != true || out["status"] != "completed" || out["original_received_at"] != received {
		t.Fatalf("replay: %d %v; want 200 with the original result", code, out)
	}
	p.Stop(t)
	st, err := boltstore.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var run store.Document
	if err := st.RunTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		run, err = tx.Get(ctx, runKey)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if run.Fields["status"] != "completed" || run.Fields["resultUri"] != "gs://results/run-1.json" {
		t.Fatalf("run after the callback: %v", run.Fields)
	}
}

// seed writes one document to the bbolt store at path.
func seed(t *testing.T, path string, key store.Key, fields map[string]any) {
	t.Helper()
	st, err := boltstore.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.RunTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		return tx.Set(ctx, key, store.Document{Fields: fields})
	}); err != nil {
		t.Fatal(err)
	}
}

// shortReceiptLease returns the built-in routes, inline, with the callback
// route's receipt lease set to lease.
func shortReceiptLease(t *testing.T, lease string) string {
	t.Helper()
	var cfg route.Config
	if err := json.Unmarshal(consumertest.DefaultRoutes(t), &cfg); err != nil {
		t.Fatal(err)
	}
	for i := range cfg.Routes {
		if r := &cfg.Routes[i]; r.Receipt != nil {
			d, err := time.ParseDuration(lease)
			if err != nil {
				t.Fatal(err)
			}
			r.Receipt.LeaseTTL = route.Duration(d)
		}
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func postCallback(t *testing.T, url, body string) (int, http.Header, map[string]any) {
	t.Helper()
	resp, err := http.Post(url+"/callbacks/validation", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, out
}

// TestSIGTERMWithOnlyHTTPInFlight: a push is still in flight when the
// shutdown timeout ends; with no pull configured the process says the
// requests did not finish, at ERROR, and never CRITICAL or "pull".
func TestSIGTERMWithOnlyHTTPInFlight(t *testing.T) {
	release := make(chan struct{})
	called := make(chan struct{}, 1)
	downstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		called <- struct{}{}
		<-release
	}))
	defer func() {
		close(release) // first: Close waits for the handler
		downstream.Close()
	}()
	routes := `{"routes":[{"name":"doc","match":{"fields":["fileHash"]},"mode":"lease",
		"fields":{"fileHash":{"from":["fileHash"],"type":"string","required":true}},"action":{"urlEnv":"DOC_URL","timeout":"30s"}}]}`
	p := proctest.Start(t, consumerBinary(t), proctest.Options{Base: []string{"PATH=" + os.Getenv("PATH")}, Env: []string{
		"EVENTPIPE_STORE=bbolt://" + filepath.Join(t.TempDir(), "consumer.db"), "EVENTPIPE_ROUTES=" + routes,
		"DOC_URL=" + downstream.URL, "EVENTPIPE_SHUTDOWN_TIMEOUT=200ms"}})
	go func() {
		body := `{"message":{"data":"eyJmaWxlSGFzaCI6ImFiYyJ9","messageId":"m1","publishTime":"2026-01-02T03:04:05Z"},"subscription":"projects/p/subscriptions/s"}`
		if resp, err := http.Post(p.URL+"/pubsub/push", "application/json", strings.NewReader(body)); err == nil {
			resp.Body.Close()
		}
	}()
	<-called
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	<-p.Done()
	var stopped bool
	for _, l := range jsonLines(t, p) {
		msg, _ := l["message"].(string)
		errText, _ := l["error"].(string)
		if l["severity"] == "CRITICAL" || strings.Contains(errText, "pull") {
			t.Errorf("line %v: no pull is configured and a request outliving the timeout is not CRITICAL", l)
		}
		if l["severity"] == "ERROR" && msg == "consumer stopped before in-flight work finished" && strings.Contains(errText, "in-flight requests") {
			stopped = true
		}
	}
	if !stopped {
		t.Errorf("no ERROR line naming the requests cut short:\n%s", p.Output())
	}
}
