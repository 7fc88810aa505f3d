package handler

import (
	"strings"
	"testing"
	"time"
)

func lookup(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestConfigFromEnv(t *testing.T) {
	c, err := ConfigFromEnv(lookup(nil))
	if err != nil || c.Enabled() || c.Timeout != DefaultTimeout || c.KeyTTL != DefaultKeyTTL || c.MaxStoredBody != DefaultMaxStoredBody {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	c, err = ConfigFromEnv(lookup(map[string]string{URLEnv: " http://localhost:8081 ", "EVENTPIPE_HANDLER_TIMEOUT": "5s",
		"EVENTPIPE_IDEMPOTENCY_KEY_TTL": "1h", "EVENTPIPE_IDEMPOTENCY_MAX_STORED_BODY": "1024"}))
	if err != nil || c.URL != "http://localhost:8081" || c.Timeout != 5*time.Second || c.KeyTTL != time.Hour || c.MaxStoredBody != 1024 {
		t.Fatalf("values: %+v, %v", c, err)
	}
}

func TestConfigFromEnvErrorsNameTheVariable(t *testing.T) {
	for _, tt := range []struct{ key, value string }{
		{URLEnv, "localhost:8081"},
		{URLEnv, "ftp://h"},
		{URLEnv, "http://h/?q=1"},
		{"EVENTPIPE_HANDLER_TIMEOUT", "soon"},
		{"EVENTPIPE_HANDLER_TIMEOUT", "-1s"},
		{"EVENTPIPE_IDEMPOTENCY_KEY_TTL", "0s"},
		{"EVENTPIPE_IDEMPOTENCY_MAX_STORED_BODY", "0"},
		{"EVENTPIPE_IDEMPOTENCY_MAX_STORED_BODY", "2000000"},
	} {
		_, err := ConfigFromEnv(lookup(map[string]string{tt.key: tt.value}))
		if err == nil || !strings.Contains(err.Error(), tt.key+"=") {
			t.Errorf("%s=%q: want an error naming it, got %v", tt.key, tt.value, err)
		}
	}
}
