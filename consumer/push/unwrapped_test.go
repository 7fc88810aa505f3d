package push

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

// TestUnwrappedPushIsNackedAsConfiguration: a subscription with payload
// unwrapping (pushConfig.noWrapper) posts the payload itself. With its
// metadata headers (x-goog-pubsub-*) the consumer knows it is Pub/Sub and
// nacks every such push as a configuration error (500, CRITICAL), so no
// message is given up on while the subscription is wrong; without them it
// is poison whose fix names payload unwrapping. Every payload the default
// routes accept, with and without each metadata header.
func TestUnwrappedPushIsNackedAsConfiguration(t *testing.T) {
	payloads := []string{sysEvent("healthy", "2026-01-02T03:00:00Z"),
		`{"eventType":"ingest_heartbeat","pipeline":"orders","status":"ok","heartbeatAt":"2026-01-02T03:00:00Z"}`,
		`{"eventType":"validation_run_started","run_id":"r1","status":"running","startedAt":"2026-01-02T03:00:00Z"}`}
	headers := []string{"", "X-Goog-Pubsub-Message-Id", "X-Goog-Pubsub-Subscription-Name", "x-goog-pubsub-publish-time"}
	for _, payload := range payloads {
		for _, hdr := range headers {
			proc, _, log := ct.NewProcessor(t, ct.Options{})
			h := New(proc, nil, nil)
			req := httptest.NewRequest(http.MethodPost, Path, bytes.NewReader([]byte(payload)))
			if hdr != "" {
				req.Header.Set(hdr, "17263940")
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			lines := log.Lines(t)
			line := lines[len(lines)-1]
			errText, _ := line["error"].(string)
			if hdr == "" {
				if w.Code != 200 || line["outcome"] != "poison" || !strings.Contains(errText, "noWrapper") {
					t.Errorf("%s without metadata: %d %v %q", payload, w.Code, line["outcome"], errText)
				}
				continue
			}
			if w.Code != 500 || line["outcome"] != "retry" || line["severity"] != "CRITICAL" || line["error_type"] != "configuration" ||
				line["write_kind"] == "poison" || !strings.Contains(errText, "fix: turn payload unwrapping off") {
				t.Errorf("%s with %s: %d %v", payload, hdr, w.Code, line)
			}
		}
	}
}
