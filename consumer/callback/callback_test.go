package callback

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	ct "github.com/eventpipe/eventpipe/consumer/internal/consumertest"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
)

var runKey = store.Key{Collection: "validation_runs", ID: "test__run-1"}

func receiptKey(cb string) store.Key {
	return store.Key{Collection: "eventpipe_receipts", ID: "test__validation__" + cb}
}

type fixture struct {
	srv *httptest.Server
	st  *ct.FailingStore
	log *ct.Log
	mux *http.ServeMux
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	fs := &ct.FailingStore{Store: memstore.New()}
	proc, _, log := ct.NewProcessor(t, ct.Options{Store: fs})
	table := proc.Routes()
	mux := http.NewServeMux()
	mux.Handle(Pattern, New(Config{Routes: table, Engine: proc.Engine(), Store: fs, Env: ct.Env, Logger: proc.Logger()}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ct.Put(t, fs, runKey, map[string]any{"runId": "run-1", "status": "running", "owner": "team-a"})
	return &fixture{srv: srv, st: fs, log: log, mux: mux}
}

func (f *fixture) call(t *testing.T, path, body string, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

const okBody = `{"run_id":"run-1","callback_id":"cb-1","status":"completed","result_uri":"gs://out/run-1.json"}`

func TestCallbackStatuses(t *testing.T) {
	tests := []struct {
		name      string
		before    []string // bodies sent first to /callbacks/validation
		path      string
		body      string
		header    map[string]string
		status    int
		replayed  bool
		receipt   bool // a receipt for cb-1 exists afterwards
		runStatus string
		outcome   string
	}{
		{name: "first callback", path: "/callbacks/validation", body: okBody, status: 200, receipt: true, runStatus: "completed", outcome: "applied"},
		{name: "retried callback", before: []string{okBody}, path: "/callbacks/validation", body: okBody,
			status: 200, replayed: true, receipt: true, runStatus: "completed", outcome: "duplicate"},
		{name: "key in header", path: "/callbacks/validation", body: `{"run_id":"run-1","status":"failed"}`,
			header: map[string]string{"Idempotency-Key": "cb-1"}, status: 200, receipt: true, runStatus: "failed", outcome: "applied"},
		{name: "no key is processed unprotected", path: "/callbacks/validation", body: `{"run_id":"run-1","status":"failed"}`,
			status: 200, runStatus: "failed", outcome: "applied"},
		{name: "unknown run is 404 before any receipt", path: "/callbacks/validation",
			body: `{"run_id":"run-404","callback_id":"cb-1","status":"completed"}`, status: 404, runStatus: "running", outcome: "poison"},
		{name: "unknown route", path: "/callbacks/nope", body: okBody, status: 404, runStatus: "running", outcome: "poison"},
		{name: "not json", path: "/callbacks/validation", body: `{"run_id":`, status: 400, runStatus: "running", outcome: "poison"},
		{name: "missing run id", path: "/callbacks/validation", body: `{"callback_id":"cb-1","status":"completed"}`, status: 400, runStatus: "running", outcome: "poison"},
		{name: "keys disagree", path: "/callbacks/validation", body: okBody, header: map[string]string{"Idempotency-Key": "cb-2"},
			status: 400, runStatus: "running", outcome: "poison"},
		{name: "reused key with another body", before: []string{okBody}, path: "/callbacks/validation",
			body:   `{"run_id":"run-1","callback_id":"cb-1","status":"failed"}`,
			status: 409, receipt: true, runStatus: "completed", outcome: "poison"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			var first map[string]any
			for _, b := range tt.before {
				code, out := f.call(t, "/callbacks/validation", b, nil)
				if code != 200 {
					t.Fatalf("setup: %d %v", code, out)
				}
				first = out
			}
			code, out := f.call(t, tt.path, tt.body, tt.header)
			if code != tt.status {
				t.Fatalf("status %d, want %d: %v", code, tt.status, out)
			}
			if code == 200 && out["idempotent_replayed"] != tt.replayed {
				t.Fatalf("idempotent_replayed = %v, want %v", out["idempotent_replayed"], tt.replayed)
			}
			if tt.replayed && out["original_received_at"] != first["received_at"] {
				t.Fatalf("original_received_at %v, first received_at %v", out["original_received_at"], first["received_at"])
			}
			if _, ok := ct.Get(t, f.st, receiptKey("cb-1")); ok != tt.receipt {
				t.Fatalf("receipt exists = %v, want %v", ok, tt.receipt)
			}
			run, _ := ct.Get(t, f.st, runKey)
			if run.Fields["status"] != tt.runStatus || run.Fields["owner"] != "team-a" {
				t.Fatalf("run document %v, want status %s and other fields kept", run.Fields, tt.runStatus)
			}
			lines := f.log.Lines(t)
			last := lines[len(lines)-1]
			if last["outcome"] != tt.outcome || last["http_status"] != float64(tt.status) {
				t.Fatalf("log line %v", last)
			}
			if tt.name == "no key is processed unprotected" && (last["unprotected"] != true || last["severity"] != "WARNING") {
				t.Fatalf("unprotected callback not flagged: %v", last)
			}
		})
	}
}

func TestCallbackTransientFailureReleasesReceipt(t *testing.T) {
	f := newFixture(t)
	// Fail only the apply transaction: reserve (1st tx) and release work.
	var calls int
	var mu sync.Mutex
	hook := &ct.FailingStore{Store: f.st, Hook: func() error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 3 { // exists check, reserve, then apply
			return &store.Error{Op: "commit", Code: "UNAVAILABLE", Kind: store.KindTransient, Err: errors.New("down")}
		}
		return nil
	}}
	proc, _, _ := ct.NewProcessor(t, ct.Options{Store: hook})
	table := proc.Routes()
	mux := http.NewServeMux()
	mux.Handle(Pattern, New(Config{Routes: table, Engine: proc.Engine(), Store: hook, Env: ct.Env, Logger: proc.Logger()}))
	do := func() int {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/callbacks/validation", strings.NewReader(okBody)))
		return w.Code
	}
	if c := do(); c != 500 {
		t.Fatalf("apply failure: %d", c)
	}
	if _, ok := ct.Get(t, f.st, receiptKey("cb-1")); ok {
		t.Fatal("receipt kept after a failed apply: the retry would be replayed without processing")
	}
	if c := do(); c != 200 {
		t.Fatalf("retry: %d", c)
	}
	run, _ := ct.Get(t, f.st, runKey)
	if run.Fields["status"] != "completed" {
		t.Fatalf("retry did not process: %v", run.Fields)
	}
}

func TestConcurrentCallbacksProcessOnce(t *testing.T) {
	f := newFixture(t)
	const n = 16
	var wg sync.WaitGroup
	replayed := make([]bool, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, out := f.call(t, "/callbacks/validation", okBody, nil)
			if code != 200 {
				t.Errorf("status %d: %v", code, out)
			}
			replayed[i], _ = out["idempotent_replayed"].(bool)
		}()
	}
	wg.Wait()
	processed := 0
	for _, r := range replayed {
		if !r {
			processed++
		}
	}
	if processed != 1 {
		t.Fatalf("%d callbacks processed, want 1", processed)
	}
}
