package server

import (
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/classify"
	"github.com/eventpipe/eventpipe/consumer/engine"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestConfigFromEnvDefaults(t *testing.T) {
	c, err := ConfigFromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != "8080" || c.Env != "dev" || c.StoreURL != DefaultStoreURL() || !strings.HasPrefix(c.StoreURL, "bbolt:///") ||
		c.RoutesPath != "" || c.CollectionPrefix != "eventpipe_" || c.DLQ != classify.DLQAuto || c.ShutdownTimeout != DefaultShutdownTimeout || c.MaxEventSkew != 5*time.Minute ||
		c.MaxWaitingPerDocument != engine.DefaultMaxWaitingPerDocument || c.RequestTimeout != DefaultRequestTimeout || c.MaxSequenceJump != engine.DefaultMaxSequenceJump {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestConfigFromEnvValues(t *testing.T) {
	c, err := ConfigFromEnv(env(map[string]string{
		"PORT": "9090", "EVENTPIPE_ENV": "prod", "EVENTPIPE_STORE": "mem://",
		"EVENTPIPE_OIDC_AUDIENCE": "https://x.run.app/pubsub/push", "EVENTPIPE_PUSH_ACCOUNTS": "a@p.iam.gserviceaccount.com, b@p.iam.gserviceaccount.com",
		"EVENTPIPE_PULL_SUBSCRIPTIONS":            "projects/p/subscriptions/a,projects/p/subscriptions/b",
		"EVENTPIPE_PULL_MAX_OUTSTANDING_MESSAGES": "7", "EVENTPIPE_DLQ": "on", "EVENTPIPE_SHUTDOWN_TIMEOUT": "3s",
		"EVENTPIPE_MAX_EVENT_SKEW": "30s", "EVENTPIPE_CALLBACK_ACCOUNTS": "job@p.iam.gserviceaccount.com",
		"EVENTPIPE_MAX_SEQUENCE_JUMP": "5000",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != "9090" || c.Env != "prod" || len(c.PushAccounts) != 2 || c.PushAccounts[1] != "b@p.iam.gserviceaccount.com" ||
		len(c.PullSubscriptions) != 2 || c.PullSettings.MaxOutstandingMessages != 7 || c.DLQ != classify.DLQOn || c.ShutdownTimeout != 3*time.Second || c.MaxEventSkew != 30*time.Second ||
		c.CallbackAudience != c.Audience || len(c.CallbackAccounts) != 1 || c.MaxSequenceJump != 5000 {
		t.Fatalf("%+v", c)
	}
	for v, want := range map[string]int{"0": engine.NoCoalescing, "32": 32} {
		c, err := ConfigFromEnv(env(map[string]string{"EVENTPIPE_COALESCE_MAX_WAITING": v}))
		if err != nil || c.MaxWaitingPerDocument != want {
			t.Errorf("EVENTPIPE_COALESCE_MAX_WAITING=%s: %d %v; want %d", v, c.MaxWaitingPerDocument, err, want)
		}
	}
}

// TestConfigRequestTimeoutReachesPostgres: EVENTPIPE_REQUEST_TIMEOUT is
// added to a PostgreSQL store URL (where pgstore derives its bounds from
// it), unless the URL sets its own; other stores' URLs are left alone.
func TestConfigRequestTimeoutReachesPostgres(t *testing.T) {
	tests := []struct{ store, want string }{
		{"postgres://u@h/db", "postgres://u@h/db?eventpipe_request_timeout=1m0s"},
		{"postgresql://u@h/db?sslmode=disable", "postgresql://u@h/db?eventpipe_request_timeout=1m0s&sslmode=disable"},
		{"postgres://u@h/db?eventpipe_request_timeout=20s", "postgres://u@h/db?eventpipe_request_timeout=20s"},
		{"mem://", "mem://"},
	}
	for _, tt := range tests {
		c, err := ConfigFromEnv(env(map[string]string{"EVENTPIPE_STORE": tt.store, "EVENTPIPE_REQUEST_TIMEOUT": "60s"}))
		if err != nil || c.StoreURL != tt.want || c.RequestTimeout != time.Minute {
			t.Errorf("EVENTPIPE_STORE=%s: %q, %v, %v; want %q", tt.store, c.StoreURL, c.RequestTimeout, err, tt.want)
		}
	}
}

func TestConfigFromEnvErrorsNameTheVariable(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"port", map[string]string{"PORT": "http"}, "PORT="},
		{"audience without accounts", map[string]string{"EVENTPIPE_OIDC_AUDIENCE": "https://x"}, "EVENTPIPE_PUSH_ACCOUNTS"},
		{"accounts without audience", map[string]string{"EVENTPIPE_PUSH_ACCOUNTS": "a@b"}, "EVENTPIPE_OIDC_AUDIENCE"},
		{"callback accounts without audience", map[string]string{"EVENTPIPE_CALLBACK_ACCOUNTS": "a@b"}, "EVENTPIPE_CALLBACK_AUDIENCE"},
		{"short subscription", map[string]string{"EVENTPIPE_PULL_SUBSCRIPTIONS": "events"}, "EVENTPIPE_PULL_SUBSCRIPTIONS"},
		{"dlq mode", map[string]string{"EVENTPIPE_DLQ": "maybe"}, "EVENTPIPE_DLQ"},
		{"flow control", map[string]string{"EVENTPIPE_PULL_GOROUTINES": "0"}, "EVENTPIPE_PULL_GOROUTINES"},
		{"timeout", map[string]string{"EVENTPIPE_SHUTDOWN_TIMEOUT": "soon"}, "EVENTPIPE_SHUTDOWN_TIMEOUT"},
		{"skew", map[string]string{"EVENTPIPE_MAX_EVENT_SKEW": "-1m"}, "EVENTPIPE_MAX_EVENT_SKEW"},
		{"request timeout", map[string]string{"EVENTPIPE_REQUEST_TIMEOUT": "0s"}, "EVENTPIPE_REQUEST_TIMEOUT"},
		{"coalescing bound", map[string]string{"EVENTPIPE_COALESCE_MAX_WAITING": "-1"}, "EVENTPIPE_COALESCE_MAX_WAITING"},
		{"coalescing bound text", map[string]string{"EVENTPIPE_COALESCE_MAX_WAITING": "lots"}, "EVENTPIPE_COALESCE_MAX_WAITING"},
		{"sequence jump zero", map[string]string{"EVENTPIPE_MAX_SEQUENCE_JUMP": "0"}, "EVENTPIPE_MAX_SEQUENCE_JUMP=\"0\": use a positive integer"},
		{"sequence jump negative", map[string]string{"EVENTPIPE_MAX_SEQUENCE_JUMP": "-5"}, "EVENTPIPE_MAX_SEQUENCE_JUMP=\"-5\": use a positive integer"},
		{"sequence jump text", map[string]string{"EVENTPIPE_MAX_SEQUENCE_JUMP": "1e6"}, "EVENTPIPE_MAX_SEQUENCE_JUMP=\"1e6\": use a positive integer"},
		{"request timeout", map[string]string{"EVENTPIPE_REQUEST_TIMEOUT": "0s"}, "EVENTPIPE_REQUEST_TIMEOUT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ConfigFromEnv(env(tt.env))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("want an error naming %s, got %v", tt.want, err)
			}
		})
	}
}

// TestTimeoutsDeriveFromTheRequestTimeout holds, over request timeouts from
// Pub/Sub's shortest ack deadline to its longest (and the short ones tests
// use), that a header is read within the whole read, the whole read ends
// while Pub/Sub still waits for the answer, and an idle connection is kept
// no longer than a request may take; with the default, the documented 10 s,
// 30 s and 60 s.
func TestTimeoutsDeriveFromTheRequestTimeout(t *testing.T) {
	for _, rt := range []time.Duration{time.Second, 4 * time.Second, 10 * time.Second, DefaultRequestTimeout, 600 * time.Second} {
		c, err := ConfigFromEnv(env(map[string]string{"EVENTPIPE_REQUEST_TIMEOUT": rt.String()}))
		if err != nil {
			t.Fatal(err)
		}
		to := c.Timeouts()
		if to.ReadHeader <= 0 || to.ReadHeader > to.Read || to.Read >= rt || to.Idle > rt {
			t.Fatalf("request timeout %v: %+v", rt, to)
		}
	}
	if to := (Config{RequestTimeout: DefaultRequestTimeout}).Timeouts(); to != (Timeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Idle: 60 * time.Second}) {
		t.Fatalf("default timeouts %+v, want 10s, 30s and 60s as documented", to)
	}
}
