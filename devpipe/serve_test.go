package devpipe_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/internal/testing/devtest"
)

// TestDevServeEndpoints drives the --serve HTTP endpoints on a running
// local pipeline: publish an event, then see it applied in /stats.
func TestDevServeEndpoints(t *testing.T) {
	env := devtest.Start(t, 0.01)
	srv := httptest.NewServer(env.Endpoints())
	defer srv.Close()
	body := `{"eventId":"e1","service":"api","status":"healthy","producedAt":"2026-01-08T10:00:00Z"}`
	resp, err := http.Post(srv.URL+"/publish/system-events?tenant=a", "application/json", strings.NewReader(body))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("publish: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = http.Post(srv.URL+"/publish/nope", "application/json", strings.NewReader(body))
	if err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("publish to an unknown pipeline: %v %v, want 404", resp, err)
	}
	// The answer names the pipelines there are.
	if msg, _ := io.ReadAll(resp.Body); !strings.Contains(string(msg), `no pipeline "nope"; the stack has documents, ingest-heartbeat, system-events`) {
		t.Errorf("publish to an unknown pipeline: %q", msg)
	}
	resp.Body.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		rows := devtest.Stats(t, srv.URL)
		for _, r := range rows {
			if r.Pipeline == "system-events" && r.Applied == 1 && r.Published == 1 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the published event was not applied: %+v", rows)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDevStatsCountsRetriesAsPending: while a message waits for its retry (the store is
// down, the backoff is the stack's real 10 s), /stats shows it pending, never lost.
func TestDevStatsCountsRetriesAsPending(t *testing.T) {
	env := devtest.Start(t, 1)
	env.Outage.Set(true)
	srv := httptest.NewServer(env.Endpoints())
	defer srv.Close()
	if _, err := env.Publish(context.Background(), "system-events", []byte(`{"eventId":"e1","service":"api","status":"healthy","producedAt":"2026-01-08T10:00:00Z"}`), nil); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		rows := env.Tally.Rows(env.Topology)
		if rows[len(rows)-1].Retried > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.Get(srv.URL + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	header := strings.Fields(lines[0])
	if header[len(header)-1] != "pending" || strings.Contains(string(body), "lost") {
		t.Errorf("/stats while a retry waits:\n%s", body)
	}
	for _, l := range lines[1:] {
		// … retried in-dlq pending
		if f := strings.Fields(l); f[0] == "system-events" && (f[8] == "0" || f[9] != "0" || f[10] != "1") {
			t.Errorf("system-events row %v: want a retry, nothing in the DLQ and 1 pending", f)
		}
	}
	env.Outage.Set(false)
}
