package downstream

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/classify"
	"github.com/eventpipe/eventpipe/consumer/logfields"
)

func TestPost(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		delay   time.Duration
		errType string // "" = success
		code    string
	}{
		{"ok", 200, 0, "", ""},
		{"accepted", 202, 0, "", ""},
		{"no content", 204, 0, "", ""},
		{"server error", 500, 0, logfields.ErrorTypeTransient, "500"},
		{"unavailable", 503, 0, logfields.ErrorTypeTransient, "503"},
		{"request timeout", 408, 0, logfields.ErrorTypeTransient, "408"},
		{"rate limited", 429, 0, logfields.ErrorTypeTransient, "429"},
		{"bad request", 400, 0, logfields.ErrorTypePoison, ""},
		{"unprocessable", 422, 0, logfields.ErrorTypePoison, ""},
		{"timeout", 200, 500 * time.Millisecond, logfields.ErrorTypeTransient, "DEADLINE_EXCEEDED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotKey, gotType string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotKey, gotType = r.Header.Get(IdempotencyKeyHeader), r.Header.Get("Content-Type")
				select {
				case <-time.After(tt.delay):
				case <-r.Context().Done():
				}
				w.WriteHeader(tt.status)
			}))
			defer srv.Close()
			_, err := New(nil).Post(t.Context(), srv.URL, "lease-1", []byte(`{"a":1}`), 100*time.Millisecond)
			if tt.errType == "" {
				if err != nil {
					t.Fatal(err)
				}
			} else if c := classify.Of(err); c.Type != tt.errType || c.Code != tt.code {
				t.Fatalf("class %+v, want %s %s (%v)", c, tt.errType, tt.code, err)
			}
			if tt.delay == 0 && (gotKey != "lease-1" || gotType != "application/json") {
				t.Fatalf("headers: key %q, type %q", gotKey, gotType)
			}
		})
	}
}

func TestPostConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = New(nil).Post(t.Context(), "http://"+addr, "k", nil, time.Second)
	if c := classify.Of(err); c.Type != logfields.ErrorTypeTransient || c.Code != "UNAVAILABLE" {
		t.Fatalf("class %+v (%v)", c, err)
	}
}
