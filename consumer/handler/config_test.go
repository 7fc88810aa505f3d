package handler

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/settings"
)

func lookup(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// configFromEnv is the gateway's configuration from the variables m, as the
// consumer reads it: settings.Parse, then ConfigFrom.
func configFromEnv(m map[string]string) (Config, error) {
	e, err := settings.Parse(lookup(m))
	if err != nil {
		return Config{}, err
	}
	return ConfigFrom(e)
}

func TestConfigFrom(t *testing.T) {
	c, err := configFromEnv(nil)
	if err != nil || c.Enabled() || c.Timeout != DefaultTimeout || c.KeyTTL != DefaultKeyTTL || c.MaxStoredBody != DefaultMaxStoredBody || c.HealthPath != DefaultHealthPath {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	c, err = configFromEnv((map[string]string{URLEnv: " http://localhost:8081 ", "EVENTPIPE_HANDLER_TIMEOUT": "5s",
		"EVENTPIPE_IDEMPOTENCY_KEY_TTL": "1h", "EVENTPIPE_IDEMPOTENCY_MAX_STORED_BODY": "1024", HealthPathEnv: "/ready"}))
	if err != nil || c.URL != "http://localhost:8081" || c.HealthPath != "/ready" || c.Timeout != 5*time.Second || c.KeyTTL != time.Hour || c.MaxStoredBody != 1024 {
		t.Fatalf("values: %+v, %v", c, err)
	}
}

func TestConfigFromErrorsNameTheVariable(t *testing.T) {
	for _, tt := range []struct{ key, value string }{
		{URLEnv, "localhost:8081"},
		{URLEnv, "ftp://h"},
		{URLEnv, "http://h/?q=1"},
		{"EVENTPIPE_HANDLER_TIMEOUT", "soon"},
		{"EVENTPIPE_HANDLER_TIMEOUT", "-1s"},
		{"EVENTPIPE_IDEMPOTENCY_KEY_TTL", "0s"},
		{"EVENTPIPE_IDEMPOTENCY_MAX_STORED_BODY", "0"},
		{"EVENTPIPE_IDEMPOTENCY_MAX_STORED_BODY", "2000000"},
		{HealthPathEnv, "healthz"},
	} {
		_, err := configFromEnv(map[string]string{tt.key: tt.value})
		if err == nil || !strings.Contains(err.Error(), tt.key+"=") {
			t.Errorf("%s=%q: want an error naming it, got %v", tt.key, tt.value, err)
		}
	}
}

// TestWaitReady: WaitReady returns at once without a handler, once the
// health path answers 2xx, and with an error naming the URL when its
// context ends first.
func TestWaitReady(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	if err := WaitReady(t.Context(), nil, Config{}, log); err != nil {
		t.Fatalf("no handler: %v", err)
	}
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ready" || asked.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	if err := WaitReady(t.Context(), srv.Client(), Config{URL: srv.URL, HealthPath: "/ready"}, log); err != nil || asked.Load() != 3 {
		t.Fatalf("ready on the third ask: %v after %d asks", err, asked.Load())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*readyPoll)
	defer cancel()
	err := WaitReady(ctx, srv.Client(), Config{URL: srv.URL, HealthPath: "/never"}, log)
	if err == nil || !strings.Contains(err.Error(), srv.URL+"/never") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("never ready: %v", err)
	}
}
