package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/keys"
	"github.com/eventpipe/eventpipe/consumer/logging"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/boltstore"
	"github.com/eventpipe/eventpipe/consumer/store/storeurl"
	"github.com/eventpipe/eventpipe/internal/testing/authtest"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

// started is a running server under test.
type started struct {
	url  string
	log  *ct.Log
	stop context.CancelFunc
	done chan struct{} // closed when Run returns, with its error in err
	err  error
}

// wait returns Run's error once it has returned.
func (s *started) wait() error {
	<-s.done
	return s.err
}

func start(t *testing.T, cfg Config) *started {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := &ct.Log{}
	ctx, cancel := context.WithCancel(context.Background())
	s := &started{url: "http://" + ln.Addr().String(), log: log, stop: cancel, done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		defer close(s.done)
		s.err = Run(ctx, cfg, logging.New(log, slog.LevelInfo), Options{Listener: ln, Ready: func(string) { close(ready) }})
	}()
	select {
	case <-ready:
	case <-s.done:
		t.Fatalf("server did not start: %v", s.err)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
		}
	})
	return s
}

func testConfig(t *testing.T, extra map[string]string) Config {
	t.Helper()
	m := map[string]string{"EVENTPIPE_ENV": "test", "EVENTPIPE_STORE": "bbolt://" + filepath.Join(t.TempDir(), "consumer.db")}
	for k, v := range extra {
		m[k] = v
	}
	c, err := ConfigFromEnv(env(m))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func pushReq(t *testing.T, url string, body []byte, token string) (int, string) {
	t.Helper()
	r := tryPush(url, body, token)
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.code, r.outcome
}

// tryPush pushes body and returns the answer, or the error of a push that
// got none.
func tryPush(url string, body []byte, token string) reply {
	req, _ := http.NewRequest(http.MethodPost, url+"/pubsub/push", bytes.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{err: err}
	}
	defer resp.Body.Close()
	var out struct{ Outcome string }
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return reply{code: resp.StatusCode, outcome: out.Outcome}
}

func TestHealth(t *testing.T) {
	s := start(t, testConfig(t, nil))
	resp, err := http.Get(s.url + HealthPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
}

func TestStartupFailsOnBadRoutes(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "routes.json")
	if err := os.WriteFile(bad, []byte(`{"routes":[{"name":"x","mode":"fast"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, map[string]string{"EVENTPIPE_ROUTES": bad})
	err := Run(t.Context(), cfg, logging.New(&ct.Log{}, slog.LevelInfo), Options{})
	if err == nil || !strings.Contains(err.Error(), `routes[0] "x": mode: `) {
		t.Fatalf("want a route validation error, got %v", err)
	}
}

// TestStartupFailsOnUnknownStoreScheme: the store's message is returned as it is,
// once, naming EVENTPIPE_STORE and the schemes accepted (issue 26: it read
// "open store: store open store: ...").
func TestStartupFailsOnUnknownStoreScheme(t *testing.T) {
	cfg := testConfig(t, map[string]string{"EVENTPIPE_STORE": "nope://x"})
	err := Run(t.Context(), cfg, logging.New(&ct.Log{}, slog.LevelInfo), Options{})
	want := `store open: configuration: EVENTPIPE_STORE "nope://x": unknown scheme "nope"; accepted schemes: ` +
		storeurl.Schemes + " (e.g. " + storeurl.Examples + ")"
	if err == nil || err.Error() != want {
		t.Fatalf("Run = %v\nwant %s", err, want)
	}
}

// TestOIDCRejectedPushesApplyNothing: forged, expired, wrong-audience and
// wrong-email tokens get 401/403; the same message with a valid token is
// then applied (not a duplicate), so the rejected ones changed nothing.
func TestOIDCRejectedPushesApplyNothing(t *testing.T) {
	const aud, pusher = "https://consumer.test/pubsub/push", "push@p.iam.gserviceaccount.com"
	is := authtest.NewIssuer(t)
	s := start(t, testConfig(t, map[string]string{
		"EVENTPIPE_OIDC_AUDIENCE": aud, "EVENTPIPE_PUSH_ACCOUNTS": pusher, "EVENTPIPE_OIDC_JWKS_URL": is.JWKSURL,
	}))
	body := ct.PushBody(t, ct.Envelope{ID: "m1", Payload: `{"service":"api","status":"ok"}`})
	claims := func(edit func(map[string]any)) map[string]any {
		c := authtest.Claims(aud, pusher)
		edit(c)
		return c
	}
	rejected := []struct {
		name   string
		token  string
		status int
	}{
		{"none", "", 401},
		{"forged", is.Forge(t, authtest.Claims(aud, pusher)), 401},
		{"expired", is.Sign(t, claims(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Minute).Unix() })), 401},
		{"wrong audience", is.Sign(t, claims(func(c map[string]any) { c["aud"] = "https://elsewhere" })), 401},
		{"wrong email", is.Sign(t, claims(func(c map[string]any) { c["email"] = "other@p.iam.gserviceaccount.com" })), 403},
	}
	for _, r := range rejected {
		if code, _ := pushReq(t, s.url, body, r.token); code != r.status {
			t.Fatalf("%s: status %d, want %d", r.name, code, r.status)
		}
	}
	if code, outcome := pushReq(t, s.url, body, is.Sign(t, authtest.Claims(aud, pusher))); code != 200 || outcome != "applied" {
		t.Fatalf("valid token: %d %s (a rejected push must not have applied it)", code, outcome)
	}
	if n := len(ct.With(s.log.Lines(t), "message", "push request refused")); n != len(rejected) {
		t.Fatalf("%d refusals logged, want %d", n, len(rejected))
	}
}

// TestGracefulShutdownFinishesInFlight: a push is in flight (its lease
// action blocks) when the server is told to stop. New connections are
// refused at once; the in-flight push completes with 200 and its effect is
// recorded; Run returns cleanly.
// reply is a push's answer.
type reply struct {
	code    int
	outcome string
	err     error // no answer
}

// pushInFlight starts a server whose lease route's action blocks until
// release is closed, sends it a push and returns once the action runs:
// the push is in flight. Its answer comes on the returned channel. Only
// that first call blocks: a push the server takes after it (one sent
// after SIGTERM but before the drain began) is answered at once, so it
// cannot hold its connection until the drain deadline cuts it.
func pushInFlight(t *testing.T, shutdownTimeout, dbPath string, release chan struct{}) (*started, chan reply) {
	t.Helper()
	var calls atomic.Int64
	downstream := httptestServer(t, func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) == 1 {
			<-release
		}
		w.WriteHeader(http.StatusOK)
	})
	routes := filepath.Join(t.TempDir(), "routes.json")
	if err := os.WriteFile(routes, []byte(`{"routes":[{"name":"doc","match":{"fields":["fileHash"]},"mode":"lease",
		"fields":{"fileHash":{"from":["fileHash"],"type":"string","required":true}},
		"action":{"urlEnv":"EVENTPIPE_TEST_DOWNSTREAM","timeout":"30s"}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("EVENTPIPE_TEST_DOWNSTREAM", downstream)
	cfg := testConfig(t, map[string]string{"EVENTPIPE_ROUTES": routes, "EVENTPIPE_STORE": "bbolt://" + dbPath, "EVENTPIPE_SHUTDOWN_TIMEOUT": shutdownTimeout})
	s := start(t, cfg)
	inflight := make(chan reply, 1)
	body := ct.PushBody(t, ct.Envelope{ID: "m1", Payload: `{"fileHash":"abc"}`})
	go func() { inflight <- tryPush(s.url, body, "") }()
	for calls.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	return s, inflight
}

// TestShutdownTimeoutWithoutPull: when requests outlive the shutdown
// timeout and no pull is configured, Run's error says the requests did not
// finish, never that a pull did not drain; the request in flight is cut at
// the deadline (its work cancelled, its connection closed unanswered, so
// Pub/Sub would deliver it again) by the time Run returns, and the cut is
// logged.
func TestShutdownTimeoutWithoutPull(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	for round := range 6 { // the wrong message came from a random choice
		s, inflight := pushInFlight(t, "200ms", filepath.Join(t.TempDir(), "consumer.db"), release)
		s.stop() // SIGTERM
		err := s.wait()
		if err == nil || !strings.Contains(err.Error(), "in-flight requests did not finish") || strings.Contains(err.Error(), "pull") {
			t.Fatalf("round %d: Run = %v; want the requests named, and no pull (none is configured)", round, err)
		}
		select {
		case r := <-inflight:
			if r.err == nil {
				t.Fatalf("round %d: the push cut at the deadline was answered %d %s; want no answer", round, r.code, r.outcome)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: the push is still in flight 5s after Run returned (its work not cancelled, its connection open)", round)
		}
		cut := ct.With(s.log.Lines(t), "message", "shutdown deadline: in-flight work cancelled, not acked; Pub/Sub delivers it again")
		if len(cut) != 1 || cut[0]["in_flight_requests"] != float64(1) {
			t.Fatalf("round %d: cut logged as %v, want one line naming 1 request", round, cut)
		}
	}
}

// TestGracefulShutdownFinishesInFlight: a push is in flight (its lease
// action blocks) when the server is told to stop. New deliveries, callbacks
// and keyed requests are refused at once with 503 and Retry-After (their
// work could be cut at the deadline); the in-flight push completes with
// 200 and its effect is recorded; Run returns cleanly.
func TestGracefulShutdownFinishesInFlight(t *testing.T) {
	release := make(chan struct{})
	dbPath := filepath.Join(t.TempDir(), "consumer.db")
	s, inflight := pushInFlight(t, "10s", dbPath, release)
	s.stop() // SIGTERM
	deadline := time.Now().Add(5 * time.Second)
	for {
		body := ct.PushBody(t, ct.Envelope{ID: "m2", Payload: `{"fileHash":"def"}`})
		resp, err := http.Post(s.url+"/pubsub/push", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a new push after shutdown began: %d, want 503 with Retry-After", resp.StatusCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, req := range []struct{ method, path, key string }{
		{http.MethodPost, "/callbacks/validation", ""}, {http.MethodPost, "/orders", "k1"}, {http.MethodPatch, "/orders/1", "k2"},
	} {
		r, _ := http.NewRequest(req.method, s.url+req.path, strings.NewReader(`{"callback_id":"cb-1","run_id":"r"}`))
		if req.key != "" {
			r.Header.Set("Idempotency-Key", req.key)
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s after shutdown began: %d, want 503 with Retry-After", req.method, req.path, resp.StatusCode)
		}
	}
	if resp, err := http.Get(s.url + HealthPath); err != nil || resp.StatusCode != 200 {
		t.Errorf("health while draining: %v %v, want 200", resp, err)
	}
	select {
	case r := <-inflight:
		t.Fatalf("in-flight request ended before its work: %+v", r)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if r := <-inflight; r.code != 200 || r.outcome != "applied" {
		t.Fatalf("in-flight push: %+v", r)
	}
	if err := s.wait(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := len(ct.With(s.log.Lines(t), "message", "request refused: shutting down")); n < 4 {
		t.Errorf("%d refusals logged, want one per refused request", n)
	}
	st, err := boltstore.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	// A message-id key names the lease with part of the payload's hash.
	fp, err := keys.Fingerprint([]byte(`{"fileHash":"abc"}`))
	if err != nil {
		t.Fatal(err)
	}
	lease, ok := ct.Get(t, st, store.Key{Collection: "eventpipe_leases", ID: "test__doc__m-m1-" + fp[len("sha256:"):][:16]})
	if !ok || lease.Fields["status"] != "completed" {
		t.Fatalf("lease record after shutdown: %v %v", ok, lease.Fields)
	}
}

func httptestServer(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestOIDCKeysUnavailable: when Google's keys cannot be fetched (a key
// server whose connection stalls; nothing listening) an authenticated push
// gets 503 (Pub/Sub retries it) within the fetch timeout, logged at ERROR
// as transient, and the response names no URL, address or error.
func TestOIDCKeysUnavailable(t *testing.T) {
	const aud, pusher = "https://consumer.test/pubsub/push", "push@p.iam.gserviceaccount.com"
	is := authtest.NewIssuer(t)
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	for name, jwks := range map[string]string{"stalled": authtest.StalledJWKS(t), "nothing listening": down.URL + "/certs"} {
		t.Run(name, func(t *testing.T) {
			s := start(t, testConfig(t, map[string]string{
				"EVENTPIPE_OIDC_AUDIENCE": aud, "EVENTPIPE_PUSH_ACCOUNTS": pusher, "EVENTPIPE_OIDC_JWKS_URL": jwks,
			}))
			req, _ := http.NewRequest(http.MethodPost, s.url+"/pubsub/push",
				bytes.NewReader(ct.PushBody(t, ct.Envelope{ID: "m1", Payload: `{"service":"api","status":"ok"}`})))
			req.Header.Set("Authorization", "Bearer "+is.Sign(t, authtest.Claims(aud, pusher)))
			client := &http.Client{Timeout: 30 * time.Second} // far beyond the fetch timeout
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("push while the keys cannot be fetched: %v (the fetch has no timeout)", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("status %d (%s), want 503", resp.StatusCode, body)
			}
			host := strings.TrimPrefix(strings.TrimPrefix(jwks, "http://"), "https://")
			host, _, _ = strings.Cut(host, "/")
			for _, secret := range []string{host, "http", "dial", "certs", "timeout"} {
				if strings.Contains(strings.ToLower(string(body)), secret) {
					t.Errorf("response %q reveals %q", body, secret)
				}
			}
			refused := ct.With(s.log.Lines(t), "message", "push request refused")
			if len(refused) != 1 || refused[0]["severity"] != "ERROR" || refused[0]["error_type"] != "transient" || refused[0]["http_status"] != float64(503) {
				t.Errorf("refusal logged as %v, want one ERROR line of error_type transient", refused)
			}
		})
	}
}

// TestCallbacksVerifiedWithAudience: once an OIDC audience is configured,
// callbacks need a token of an allowed callback account (401 without one,
// 403 for another account, which the push account is); with no callback
// accounts configured every callback is refused and a WARNING says so.
func TestCallbacksVerifiedWithAudience(t *testing.T) {
	const aud, pusher, job = "https://consumer.test/pubsub/push", "push@p.iam.gserviceaccount.com", "validator@p.iam.gserviceaccount.com"
	const cbAud = "https://consumer.test"
	is := authtest.NewIssuer(t)
	body := `{"run_id":"run-1","callback_id":"cb-1","status":"completed","result_uri":"gs://attacker/x.json"}`
	call := func(url, token string) int {
		req, _ := http.NewRequest(http.MethodPost, url+"/callbacks/validation", strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	s := start(t, testConfig(t, map[string]string{"EVENTPIPE_OIDC_AUDIENCE": aud, "EVENTPIPE_PUSH_ACCOUNTS": pusher,
		"EVENTPIPE_OIDC_JWKS_URL": is.JWKSURL, "EVENTPIPE_CALLBACK_AUDIENCE": cbAud, "EVENTPIPE_CALLBACK_ACCOUNTS": job}))
	for name, tc := range map[string]struct {
		token  string
		status int
	}{
		"no token":     {"", 401},
		"forged":       {is.Forge(t, authtest.Claims(cbAud, job)), 401},
		"push account": {is.Sign(t, authtest.Claims(cbAud, pusher)), 403},
		"push token":   {is.Sign(t, authtest.Claims(aud, pusher)), 401},
	} {
		if got := call(s.url, tc.token); got != tc.status {
			t.Errorf("%s: %d, want %d", name, got, tc.status)
		}
	}
	// The job's own token passes authentication (the run does not exist here: 404).
	if got := call(s.url, is.Sign(t, authtest.Claims(cbAud, job))); got != http.StatusNotFound {
		t.Errorf("the job's token: %d, want 404 (authenticated, unknown run)", got)
	}

	closed := start(t, testConfig(t, map[string]string{"EVENTPIPE_OIDC_AUDIENCE": aud, "EVENTPIPE_PUSH_ACCOUNTS": pusher,
		"EVENTPIPE_OIDC_JWKS_URL": is.JWKSURL}))
	if got := call(closed.url, is.Sign(t, authtest.Claims(aud, job))); got != http.StatusForbidden {
		t.Errorf("no callback accounts configured: %d, want 403", got)
	}
	if got := call(closed.url, ""); got != http.StatusUnauthorized {
		t.Errorf("no callback accounts configured, no token: %d, want 401", got)
	}
	if len(ct.With(closed.log.Lines(t), "severity", "WARNING")) == 0 {
		t.Error("no WARNING that callbacks are refused")
	}
}
