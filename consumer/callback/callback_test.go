package callback

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/auth"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	"github.com/eventpipe/eventpipe/internal/testing/authtest"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

var runKey = store.Key{Collection: "validation_runs", ID: "test__run-1"}

func receiptKey(cb string) store.Key {
	return store.Key{Collection: "eventpipe_receipts", ID: "test__validation__" + cb}
}

type fixture struct {
	srv *httptest.Server
	st  *ct.FailingStore
	log *ct.Log
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	fs := &ct.FailingStore{Store: memstore.New()}
	ct.Put(t, fs, runKey, map[string]any{"runId": "run-1", "status": "running", "owner": "team-a"})
	return serve(t, fs, fs, nil)
}

// serve serves the callback handler over st, with verifier when set; base
// is the store under st, which the fixture reads.
func serve(t *testing.T, st store.Store, base *ct.FailingStore, verifier *auth.Verifier) *fixture {
	t.Helper()
	proc, _, log := ct.NewProcessor(t, ct.Options{Store: st})
	mux := http.NewServeMux()
	mux.Handle(Pattern, New(Config{Routes: proc.Routes(), Engine: proc.Engine(), Env: ct.Env, Logger: proc.Logger(), Verifier: verifier}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &fixture{srv: srv, st: base, log: log}
}

func (f *fixture) call(t *testing.T, path, body string, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	code, _, out := f.callFull(t, path, body, hdr)
	return code, out
}

// callFull is call that also returns the response headers.
func (f *fixture) callFull(t *testing.T, path, body string, hdr map[string]string) (int, http.Header, map[string]any) {
	t.Helper()
	a := f.post(t, path, body, hdr)
	var out map[string]any
	if err := json.Unmarshal(a.body, &out); err != nil {
		t.Error(err)
	}
	return a.status, a.header, out
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

// TestCallbackTransientFailureReleasesReceipt: when the first delivery
// fails after reserving (its update could not be written), nothing is
// applied, the receipt is released, and the caller's retry processes the
// callback.
func TestCallbackTransientFailureReleasesReceipt(t *testing.T) {
	f := newFixture(t)
	down := &store.Error{Op: "commit", Code: "UNAVAILABLE", Kind: store.KindTransient, Err: errors.New("down")}
	g := serve(t, blockingStore(f.st, nil, nil, down), f.st, nil)
	if code, out := g.call(t, "/callbacks/validation", okBody, nil); code != 500 {
		t.Fatalf("first delivery: %d %v; want 500", code, out)
	}
	if run, _ := ct.Get(t, f.st, runKey); run.Fields["status"] != "running" {
		t.Fatalf("a failed delivery changed the run: %v", run.Fields)
	}
	if rc, _ := ct.Get(t, f.st, receiptKey("cb-1")); rc.Fields["status"] != "released" {
		t.Fatalf("receipt after a failed apply: %v; want it released (the retry processes)", rc.Fields)
	}
	if code, out := g.call(t, "/callbacks/validation", okBody, nil); code != 200 || out["idempotent_replayed"] != false {
		t.Fatalf("retry: %d %v; want it processed", code, out)
	}
	if run, _ := ct.Get(t, f.st, runKey); run.Fields["status"] != "completed" {
		t.Fatalf("retry did not process: %v", run.Fields)
	}
}

// TestConcurrentCallbacksProcessOnce: of concurrent deliveries of one
// callback exactly one processes; the others are told to retry (409 with
// Retry-After) or, once it finished, replayed: never told "done" before
// it is.
func TestConcurrentCallbacksProcessOnce(t *testing.T) {
	f := newFixture(t)
	const n = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	answers := map[string]int{}
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, hdr, out := f.callFull(t, "/callbacks/validation", okBody, nil)
			kind := ""
			switch {
			case code == 200 && out["idempotent_replayed"] == false:
				kind = "processed"
			case code == 200 && out["status"] == "completed":
				kind = "replayed"
			case code == 409 && hdr.Get("Retry-After") != "" && out["status"] == "processing":
				kind = "retry later"
			default:
				t.Errorf("answer %d %v %v", code, hdr, out)
			}
			mu.Lock()
			answers[kind]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if answers["processed"] != 1 || answers["processed"]+answers["replayed"]+answers["retry later"] != n {
		t.Fatalf("answers %v: want exactly one processed, the rest replayed or told to retry", answers)
	}
}

// blockingStore holds the transaction that finishes a receipt (the third
// of a callback: exists check, reserve, finish) until release is closed,
// or fails it with err.
func blockingStore(st store.Store, held chan struct{}, release chan struct{}, err error) *ct.FailingStore {
	var mu sync.Mutex
	calls := 0
	return &ct.FailingStore{Store: st, Hook: func() error {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n != 3 {
			return nil
		}
		if err != nil {
			return err
		}
		close(held)
		<-release
		return nil
	}}
}

// TestCallbackRetryWhileProcessing: a retry that arrives while the first
// delivery is still processing gets 409 with Retry-After, not a 200 "done";
// after the first finishes, retries replay its result.
func TestCallbackRetryWhileProcessing(t *testing.T) {
	f := newFixture(t)
	held, release := make(chan struct{}), make(chan struct{})
	g := serve(t, blockingStore(f.st, held, release, nil), f.st, nil)
	first := make(chan int, 1)
	go func() {
		code, _, _ := g.callFull(t, "/callbacks/validation", okBody, nil)
		first <- code
	}()
	<-held
	code, hdr, out := g.callFull(t, "/callbacks/validation", okBody, nil)
	if code != http.StatusConflict || out["status"] != "processing" || out["idempotent_replayed"] != false {
		t.Fatalf("retry during processing: %d %v; want 409 with status processing", code, out)
	}
	if secs, err := strconv.Atoi(hdr.Get("Retry-After")); err != nil || secs < 1 || secs > 30 {
		t.Errorf("Retry-After %q: want the seconds left of the 30s reservation", hdr.Get("Retry-After"))
	}
	close(release)
	if c := <-first; c != 200 {
		t.Fatalf("first delivery: %d", c)
	}
	code, _, out = g.callFull(t, "/callbacks/validation", okBody, nil)
	if code != 200 || out["idempotent_replayed"] != true || out["status"] != "completed" {
		t.Fatalf("retry after processing: %d %v; want 200 replayed with status completed", code, out)
	}
}

// TestCallbackAuthentication: with a verifier, a callback needs a token of
// an allowed account: a forged callback without one changes nothing.
func TestCallbackAuthentication(t *testing.T) {
	is := authtest.NewIssuer(t)
	const aud, job = "https://consumer.example.run.app", "validator@proj.iam.gserviceaccount.com"
	v, err := auth.NewKeys(t.Context(), is.JWKSURL, 0).Verifier(auth.Config{Audience: aud, AllowedEmails: []string{job}, AccountsSetting: "EVENTPIPE_CALLBACK_ACCOUNTS"})
	if err != nil {
		t.Fatal(err)
	}
	fs := &ct.FailingStore{Store: memstore.New()}
	ct.Put(t, fs, runKey, map[string]any{"runId": "run-1", "status": "running"})
	g := serve(t, fs, fs, v)
	forged := `{"run_id":"run-1","callback_id":"cb-evil","status":"completed","result_uri":"gs://attacker/x.json"}`
	for _, tc := range []struct {
		name   string
		token  string
		status int
	}{
		{"no token", "", 401},
		{"forged signature", is.Forge(t, authtest.Claims(aud, job)), 401},
		{"push account", is.Sign(t, authtest.Claims(aud, "push@proj.iam.gserviceaccount.com")), 403},
		{"other audience", is.Sign(t, authtest.Claims("https://elsewhere.example", job)), 401},
	} {
		hdr := map[string]string{}
		if tc.token != "" {
			hdr["Authorization"] = "Bearer " + tc.token
		}
		if code, _, out := g.callFull(t, "/callbacks/validation", forged, hdr); code != tc.status {
			t.Errorf("%s: %d %v, want %d", tc.name, code, out, tc.status)
		}
	}
	if run, _ := ct.Get(t, fs, runKey); run.Fields["status"] != "running" || run.Fields["resultUri"] != nil {
		t.Fatalf("an unauthenticated callback changed the run: %v", run.Fields)
	}
	hdr := map[string]string{"Authorization": "Bearer " + is.Sign(t, authtest.Claims(aud, job))}
	if code, _, out := g.callFull(t, "/callbacks/validation", okBody, hdr); code != 200 {
		t.Fatalf("the job's own callback: %d %v", code, out)
	}
}
