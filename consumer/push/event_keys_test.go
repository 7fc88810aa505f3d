package push

import (
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/limits"
	"github.com/eventpipe/eventpipe/consumer/logging"
	"github.com/eventpipe/eventpipe/consumer/store"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

// pushAll pushes each envelope through the default routes and returns each
// outcome and the status of ops_services/test__api after them.
func pushAll(t *testing.T, envs ...ct.Envelope) (outcomes []string, status any, log *ct.Log) {
	t.Helper()
	proc, st, log := ct.NewProcessor(t, ct.Options{})
	h := New(proc, nil, nil)
	for _, e := range envs {
		if w := post(t, h, ct.PushBody(t, e)); w.Code != 200 {
			t.Fatalf("push %s: %d %s", e.ID, w.Code, w.Body)
		}
		lines := log.Lines(t)
		outcomes = append(outcomes, lines[len(lines)-1]["outcome"].(string))
	}
	doc, _ := ct.Get(t, st, store.Key{Collection: opsColl, ID: apiDoc})
	return outcomes, doc.Fields["status"], log
}

// TestMessageIDsKeptExactly: Pub/Sub message ids that differ only in case
// are two messages (a route without a dedupe block keys by message id).
func TestMessageIDsKeptExactly(t *testing.T) {
	routes := []byte(`{"routes":[{"name":"svc","match":{"fields":["service","status"]},"mode":"latest-state",
		"target":{"collection":"ops_services","id":"service"},
		"fields":{"service":{"from":["service"],"type":"string","required":true},"status":{"from":["status"],"type":"string"},
		"at":{"from":["producedAt"],"type":"timestamp","required":true}},"ordering":{"eventTime":"at"}}]}`)
	proc, st, log := ct.NewProcessor(t, ct.Options{Routes: routes})
	h := New(proc, nil, nil)
	for i, e := range []ct.Envelope{
		{ID: "Ab3xZ", Payload: sysEvent("degraded", "2026-01-02T03:00:00Z")},
		{ID: "aB3Xz", Payload: sysEvent("healthy", "2026-01-02T03:00:01Z")},
	} {
		if w := post(t, h, ct.PushBody(t, e)); w.Code != 200 {
			t.Fatalf("push %s: %d", e.ID, w.Code)
		}
		if got := log.Lines(t)[i]["outcome"]; got != "applied" {
			t.Errorf("message %s: %v, want applied", e.ID, got)
		}
	}
	if doc, _ := ct.Get(t, st, store.Key{Collection: opsColl, ID: apiDoc}); doc.Fields["status"] != "healthy" {
		t.Errorf("status %v, want healthy", doc.Fields["status"])
	}
}

// TestSeedRouteSameSecondStatusChanges: the default route's derived identity
// is (service, producedAt); a service going degraded then healthy within
// one second is two events, ordered by publish time: whichever arrives
// first, the document ends healthy and nothing is poison.
func TestSeedRouteSameSecondStatusChanges(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	degraded := ct.Envelope{ID: "2001", Payload: sysEvent("degraded", "2026-01-02T03:00:00Z"), PublishTime: at.Add(200 * time.Millisecond)}
	healthy := ct.Envelope{ID: "2002", Payload: sysEvent("healthy", "2026-01-02T03:00:00Z"), PublishTime: at.Add(800 * time.Millisecond)}
	for _, tc := range []struct {
		order []ct.Envelope
		want  []string
	}{
		{[]ct.Envelope{degraded, healthy}, []string{"applied", "applied"}},
		{[]ct.Envelope{healthy, degraded}, []string{"applied", "stale_ignored"}},
	} {
		outcomes, status, _ := pushAll(t, tc.order...)
		if strings.Join(outcomes, ",") != strings.Join(tc.want, ",") || status != "healthy" {
			t.Errorf("%s then %s: outcomes %v, status %v; want %v and healthy", tc.order[0].ID, tc.order[1].ID, outcomes, status, tc.want)
		}
	}
}

// TestFarFutureEventTimeDoesNotFreezeTheDocument: a producedAt of
// 9999-12-31 (logged at WARNING with both times) orders its event, in
// every copy, but holds the document only for the window
// (EVENTPIPE_MAX_EVENT_SKEW, 5 minutes): a real update a minute later is
// stale, one published after the window applies.
func TestFarFutureEventTimeDoesNotFreezeTheDocument(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	outcomes, status, log := pushAll(t,
		ct.Envelope{ID: "3001", Payload: sysEvent("degraded", "9999-12-31T00:00:00Z"), PublishTime: at},
		ct.Envelope{ID: "3002", Payload: sysEvent("starting", "2026-01-02T03:01:00Z"), PublishTime: at.Add(time.Minute)},
		ct.Envelope{ID: "3003", Payload: sysEvent("healthy", "2026-01-02T03:06:00Z"), PublishTime: at.Add(6 * time.Minute)},
	)
	if strings.Join(outcomes, ",") != "applied,stale_ignored,applied" || status != "healthy" {
		t.Errorf("outcomes %v, status %v; want applied, stale_ignored, applied and healthy", outcomes, status)
	}
	warnings := ct.With(log.Lines(t), "severity", "WARNING")
	if len(warnings) != 1 || warnings[0]["event_time"] != "9999-12-31T00:00:00Z" || warnings[0]["publishTime"] != "2026-01-02T03:00:00Z" {
		t.Errorf("want one WARNING line with both times, got %v", warnings)
	}
}

// TestLongIDsArePoison: ids longer than limits.MaxIDBytes are poison with
// an error naming the field, and no log line carries them whole.
func TestLongIDsArePoison(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name  string
		env   ct.Envelope
		field string
	}{
		{"message id", ct.Envelope{ID: long, Payload: sysEvent("healthy", "2026-01-02T03:00:00Z")}, "message.messageId"},
		{"aggregate id", ct.Envelope{ID: "m1", Payload: `{"service":"` + long + `","status":"ok","producedAt":"2026-01-02T03:00:00Z"}`}, "serviceId"},
		{"event id", ct.Envelope{ID: "m2", Payload: `{"service":"api","status":"ok","eventId":"` + long + `","producedAt":"2026-01-02T03:00:00Z"}`}, "eventId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proc, st, log := ct.NewProcessor(t, ct.Options{})
			w := post(t, New(proc, nil, nil), ct.PushBody(t, tc.env))
			if w.Code != 200 {
				t.Fatalf("status %d, want 200 (poison, no DLQ)", w.Code)
			}
			lines := log.Lines(t)
			last := lines[len(lines)-1]
			errText, _ := last["error"].(string)
			if last["outcome"] != "poison" || !strings.Contains(errText, tc.field) || !strings.Contains(errText, "at most 1024 bytes") {
				t.Errorf("line %v: want poison naming %s and the limit", last, tc.field)
			}
			for _, l := range lines {
				for k, v := range l {
					if s, ok := v.(string); ok && len(s) > logging.MaxFieldLen {
						t.Errorf("field %s of a line is %d bytes", k, len(s))
					}
				}
			}
			rec, ok := poisonRecord(t, st, last)
			if !ok {
				t.Fatalf("no poison record for %v", last)
			}
			if id, _ := rec.Fields["messageId"].(string); len(id) > limits.MaxIDBytes {
				t.Errorf("poison record keeps a %d-byte message id", len(id))
			}
		})
	}
}

// TestJSONNestingLimit: message data nested 128 levels deep is processed;
// one level deeper is poison naming the limit (docs/consumer.md, Limits).
func TestJSONNestingLimit(t *testing.T) {
	nested := func(levels int) string {
		return `{"service":"api","status":"ok","producedAt":"2026-01-02T03:00:00Z","deep":` +
			strings.Repeat(`[`, levels-1) + strings.Repeat(`]`, levels-1) + `}`
	}
	for levels, want := range map[int]string{128: "applied", 129: "poison"} {
		proc, _, log := ct.NewProcessor(t, ct.Options{})
		if w := post(t, New(proc, nil, nil), ct.PushBody(t, ct.Envelope{ID: "m1", Payload: nested(levels)})); w.Code != 200 {
			t.Fatalf("%d levels: status %d", levels, w.Code)
		}
		last := log.Lines(t)[len(log.Lines(t))-1]
		if last["outcome"] != want || (want == "poison" && !strings.Contains(last["error"].(string), "nested deeper than 128 levels")) {
			t.Errorf("%d levels: %v, want %s", levels, last, want)
		}
	}
}

// TestOversizedDocumentIsPoison: a payload whose routed fields would make
// a document larger than Firestore holds is poison naming the limit, on
// every store (here the memory store, which would hold it), and its poison
// record keeps the message.
func TestOversizedDocumentIsPoison(t *testing.T) {
	proc, _, log := ct.NewProcessor(t, ct.Options{})
	status := strings.Repeat("s", 2<<20)
	w := post(t, New(proc, nil, nil), ct.PushBody(t, ct.Envelope{ID: "m1", Payload: sysEvent(status, "2026-01-02T03:00:00Z")}))
	if w.Code != 200 {
		t.Fatalf("status %d, want 200 (poison, no DLQ)", w.Code)
	}
	lines := log.Lines(t)
	last := lines[len(lines)-1]
	if errText, _ := last["error"].(string); last["outcome"] != "poison" || !strings.Contains(errText, "a document holds at most 1048576") {
		t.Fatalf("line %v: want poison naming the document limit", last)
	}
	m, err := proc.Engine().ReadPoison(t.Context(), last["idempotency_doc"].(string))
	if err != nil || !strings.Contains(string(m.Data), status) {
		t.Fatalf("poison record: %v (%d bytes)", err, len(m.Data))
	}
}
