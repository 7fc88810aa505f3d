package push

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/limits"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

const (
	apiDoc    = "test__api"
	opsColl   = "ops_services"
	poisonCol = "eventpipe_poison"
)

func sysEvent(status, producedAt string) string {
	return `{"service":"api","status":"` + status + `","producedAt":"` + producedAt + `","version":"1.0","region":"eu"}`
}

func post(t *testing.T, h http.Handler, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)))
	return w
}

func TestPushStatuses(t *testing.T) {
	applied := ct.Envelope{ID: "m1", Payload: sysEvent("healthy", "2026-01-02T03:00:00Z")}
	unroutable := ct.Envelope{ID: "m9", Payload: `{"hello":"world"}`}
	unroutableDLQ := unroutable
	unroutableDLQ.DeliveryAttempt = 2
	transientErr := &store.Error{Op: "commit", Code: "UNAVAILABLE", Kind: store.KindTransient, Err: errors.New("backend down")}
	permErr := &store.Error{Op: "commit", Code: "PERMISSION_DENIED", Kind: store.KindConfiguration, Err: errors.New("no role")}
	badB64 := []byte(`{"message":{"data":"%%%","messageId":"m7","publishTime":"2026-01-02T03:04:05Z"},"subscription":"` + ct.Subscription + `"}`)
	badB64DLQ := []byte(`{"message":{"data":"%%%","messageId":"m8","publishTime":"2026-01-02T03:04:05Z"},"subscription":"` + ct.Subscription + `","deliveryAttempt":5}`)

	tests := []struct {
		name      string
		before    [][]byte // pushed first, must be acked
		storeErr  error
		body      []byte
		status    int
		outcome   string
		severity  string
		errorType string
		errorCode string
		poisonDoc bool // a poison audit record must exist afterwards
	}{
		{name: "applied", body: ct.PushBody(t, applied), status: 200, outcome: "applied", severity: "INFO"},
		{name: "duplicate", before: [][]byte{ct.PushBody(t, applied)}, body: ct.PushBody(t, applied),
			status: 200, outcome: "duplicate", severity: "INFO", errorType: "duplicate"},
		{name: "stale", before: [][]byte{ct.PushBody(t, applied)},
			body:   ct.PushBody(t, ct.Envelope{ID: "m0", Payload: sysEvent("starting", "2026-01-02T02:00:00Z")}),
			status: 200, outcome: "stale_ignored", severity: "INFO", errorType: "stale"},
		{name: "unroutable with DLQ", body: ct.PushBody(t, unroutableDLQ), status: 400, outcome: "poison", severity: "ERROR", errorType: "poison"},
		{name: "unroutable without DLQ", body: ct.PushBody(t, unroutable), status: 200, outcome: "poison", severity: "ERROR", errorType: "poison", poisonDoc: true},
		{name: "missing required field without DLQ", body: ct.PushBody(t, ct.Envelope{ID: "m5", Payload: `{"eventType":"ingest_heartbeat","status":"ok"}`}),
			status: 200, outcome: "poison", severity: "ERROR", errorType: "poison", poisonDoc: true},
		{name: "bad base64 without DLQ", body: badB64, status: 200, outcome: "poison", severity: "ERROR", errorType: "poison", poisonDoc: true},
		{name: "bad base64 with DLQ", body: badB64DLQ, status: 400, outcome: "poison", severity: "ERROR", errorType: "poison"},
		{name: "transient store error", storeErr: transientErr, body: ct.PushBody(t, applied),
			status: 500, outcome: "retry", severity: "ERROR", errorType: "transient", errorCode: "UNAVAILABLE"},
		{name: "permission denied", storeErr: permErr, body: ct.PushBody(t, applied),
			status: 500, outcome: "retry", severity: "CRITICAL", errorType: "configuration", errorCode: "PERMISSION_DENIED"},
		{name: "poison that cannot be recorded is retried", storeErr: transientErr, body: ct.PushBody(t, unroutable),
			status: 500, outcome: "retry", severity: "ERROR", errorType: "transient", errorCode: "UNAVAILABLE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := &ct.FailingStore{Store: memstore.New()}
			proc, st, log := ct.NewProcessor(t, ct.Options{Store: fs})
			h := New(proc, nil, nil)
			for _, b := range tt.before {
				if w := post(t, h, b); w.Code != 200 {
					t.Fatalf("setup push: %d %s", w.Code, w.Body)
				}
			}
			fs.SetErr(tt.storeErr)
			w := post(t, h, tt.body)
			fs.SetErr(nil)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			lines := log.Lines(t)
			last := lines[len(lines)-1]
			want := map[string]any{"outcome": tt.outcome, "severity": tt.severity, "http_status": float64(tt.status)}
			if tt.errorType != "" {
				want["error_type"] = tt.errorType
			}
			if tt.errorCode != "" {
				want["error_code"] = tt.errorCode
			}
			ack := "nack"
			if tt.status == 200 {
				ack = "ack"
			}
			want["ack_action"] = ack
			for k, v := range want {
				if last[k] != v {
					t.Errorf("log %s = %v, want %v (line %v)", k, last[k], v, last)
				}
			}
			for _, k := range []string{"subscription", "messageId", "outcome", "http_status", "store_reads", "store_writes", "latency_ms", "retryable", "write_kind"} {
				if _, ok := last[k]; !ok {
					t.Errorf("log line lacks %s: %v", k, last)
				}
			}
			rec, hasPoison := poisonRecord(t, st, last)
			if hasPoison != tt.poisonDoc {
				t.Errorf("poison record present = %v, want %v (line %v)", hasPoison, tt.poisonDoc, last)
			}
			if hasPoison && (rec.Fields["payload"] == "" || rec.Fields["reason"] == "" || rec.ExpireAt.IsZero()) {
				t.Errorf("poison record lacks payload, reason or expireAt: %v", rec)
			}
		})
	}
}

// poisonRecord looks up the audit record named by the log line.
func poisonRecord(t *testing.T, st store.Store, line map[string]any) (store.Document, bool) {
	doc, _ := line["idempotency_doc"].(string)
	coll, id, ok := strings.Cut(doc, "/")
	if !ok || coll != poisonCol {
		return store.Document{}, false
	}
	return ct.Get(t, st, store.Key{Collection: coll, ID: id})
}

func TestPushRefusals(t *testing.T) {
	proc, st, log := ct.NewProcessor(t, ct.Options{})
	h := New(proc, nil, nil)

	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, Path, nil))
	if w.Code != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %d", w.Code)
	}

	big := bytes.Repeat([]byte("a"), int(limits.MaxPushBodyBytes(limits.MaxMessageBytes))+1)
	if w := post(t, h, big); w.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized body: %d", w.Code)
	}
	// A body at the limit of a 10 MB message is read (and here rejected as
	// poison, not as too large).
	maxData := bytes.Repeat([]byte("A"), base64.StdEncoding.EncodedLen(limits.MaxMessageBytes))
	body := append(append([]byte(`{"message":{"data":"`), maxData...), []byte(`","messageId":"x","publishTime":"2026-01-02T03:04:05Z"},"subscription":"`+ct.Subscription+`"}`)...)
	if w := post(t, h, body); w.Code == http.StatusRequestEntityTooLarge {
		t.Fatalf("a 10 MB message was refused as too large")
	}
	lines := log.Lines(t)
	if len(ct.With(lines, "http_status", 413)) != 1 || len(ct.With(lines, "http_status", 405)) != 1 {
		t.Fatalf("refusals not logged: %v", lines)
	}
	if _, found := ct.Get(t, st, store.Key{Collection: opsColl, ID: apiDoc}); found {
		t.Fatal("a refused request wrote state")
	}
}

func TestPushAppliesSeedFields(t *testing.T) {
	proc, st, _ := ct.NewProcessor(t, ct.Options{})
	h := New(proc, nil, nil)
	pub := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	w := post(t, h, ct.PushBody(t, ct.Envelope{ID: "m1", Payload: sysEvent("healthy", "2026-01-02T03:00:00Z"), PublishTime: pub}))
	if w.Code != 200 {
		t.Fatal(w.Code, w.Body)
	}
	doc, ok := ct.Get(t, st, store.Key{Collection: opsColl, ID: apiDoc})
	if !ok {
		t.Fatal("ops_services/test__api not written")
	}
	f := doc.Fields
	src, _ := f["source"].(map[string]any)
	if f["status"] != "healthy" || f["version"] != "1.0" || f["region"] != "eu" || f["serviceId"] != "api" || f["env"] != "test" ||
		src["topic"] != "system-events" || src["messageId"] != "m1" || !pub.Equal(src["publishedAt"].(time.Time)) {
		t.Fatalf("document fields: %v", f)
	}
	if at, _ := f["updatedAt"].(time.Time); !at.Equal(time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)) {
		t.Fatalf("updatedAt = %v", f["updatedAt"])
	}
}

// TestPushResponseAndLineTimes checks the response's content type and body
// and the line's publishTime: RFC 3339 in UTC with every fractional digit
// the publish time has, whatever zone Pub/Sub wrote it in.
func TestPushResponseAndLineTimes(t *testing.T) {
	proc, _, log := ct.NewProcessor(t, ct.Options{})
	h := New(proc, nil, nil)
	published := time.Date(2026, 1, 2, 5, 4, 5, 123456789, time.FixedZone("", 2*3600))
	for i, want := range []string{`{"outcome":"applied"}`, `{"outcome":"duplicate"}`} {
		w := post(t, h, ct.PushBody(t, ct.Envelope{ID: "m1", PublishTime: published, Payload: sysEvent("ok", "2026-01-02T03:00:00Z")}))
		if got := strings.TrimSpace(w.Body.String()); w.Code != 200 || got != want || w.Header().Get("Content-Type") != "application/json" {
			t.Errorf("delivery %d: %d %q (Content-Type %q), want 200 %q (application/json)", i, w.Code, got, w.Header().Get("Content-Type"), want)
		}
	}
	for _, line := range log.Lines(t) {
		if got := line["publishTime"]; got != "2026-01-02T03:04:05.123456789Z" {
			t.Errorf("publishTime = %v, want 2026-01-02T03:04:05.123456789Z (line %v)", got, line)
		}
	}
}

// TestPoisonRecordKeepsTheWholeMessage: without a DLQ a poison message is
// acknowledged only once its record holds all of it: a 300 KiB payload and
// its attributes come back whole; a message whose attributes no record can
// hold is not acknowledged (500: Pub/Sub retries it).
func TestPoisonRecordKeepsTheWholeMessage(t *testing.T) {
	proc, _, log := ct.NewProcessor(t, ct.Options{})
	h := New(proc, nil, nil)
	payload := `{"unroutable":"` + strings.Repeat("é and ✓ ", 300<<10/11) + `"}`
	attrs := map[string]string{"origin": "billing"}
	if w := post(t, h, ct.PushBody(t, ct.Envelope{ID: "p1", Payload: payload, Attributes: attrs})); w.Code != 200 {
		t.Fatalf("status %d", w.Code)
	}
	lines := log.Lines(t)
	last := lines[len(lines)-1]
	m, err := proc.Engine().ReadPoison(t.Context(), last["idempotency_doc"].(string))
	if err != nil {
		t.Fatalf("read the poison record of %v: %v", last, err)
	}
	if string(m.Data) != payload || m.Attributes["origin"] != "billing" {
		t.Errorf("poison record keeps %d of %d bytes, attributes %v", len(m.Data), len(payload), m.Attributes)
	}

	huge := map[string]string{}
	for i := range 300 {
		huge[fmt.Sprintf("attribute-%03d", i)] = strings.Repeat("v", 1024)
	}
	if w := post(t, h, ct.PushBody(t, ct.Envelope{ID: "p2", Payload: `{"unroutable":1}`, Attributes: huge})); w.Code != 500 {
		t.Errorf("poison message a record cannot hold: status %d, want 500 (retried, never acknowledged)", w.Code)
	}
	lines = log.Lines(t)
	if last := lines[len(lines)-1]; last["outcome"] != "retry" || last["ack_action"] != "nack" {
		t.Errorf("line %v: want retry and nack", last)
	}
}
