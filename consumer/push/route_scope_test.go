package push

import (
	"fmt"
	"testing"

	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

// scopedRoutes are payload makers for the default latest-state routes,
// each with the producer event id id (a JSON value) on its aggregate agg.
var scopedRoutes = []struct {
	name    string
	payload func(id, agg string) string
}{
	{"system_events", func(id, agg string) string {
		return `{"service":"` + agg + `","status":"ok","producedAt":"2026-01-02T03:00:00Z","eventId":` + id + `}`
	}},
	{"ingest_heartbeat", func(id, agg string) string {
		return `{"eventType":"ingest_heartbeat","pipeline":"` + agg + `","status":"ok","heartbeatAt":"2026-01-02T03:00:00Z","eventId":` + id + `}`
	}},
	{"validation_run_started", func(id, agg string) string {
		return `{"eventType":"validation_run_started","run_id":"` + agg + `","status":"running","startedAt":"2026-01-02T03:00:00Z","eventId":` + id + `}`
	}},
}

// TestProducerEventIDsAreScopedByRoute states that a producer's event id
// names one event within its route only: for every ordered pair of routes
// and every form of id, an event on one route and an event with the same
// id on another are both applied and each redelivery is a duplicate; the
// same id on the same route for another aggregate is a reused event id
// (poison). Two producers numbering their events each from 1 must not
// make each other's events poison. The table is built from every pair.
func TestProducerEventIDsAreScopedByRoute(t *testing.T) {
	for _, id := range []string{`"42"`, `42`, `"Ab-1"`, `"550e8400-e29b-41d4-a716-446655440000"`} {
		for _, a := range scopedRoutes {
			for _, b := range scopedRoutes {
				t.Run(fmt.Sprintf("%s/%s/%s", a.name, b.name, id), func(t *testing.T) {
					proc, _, log := ct.NewProcessor(t, ct.Options{})
					h := New(proc, nil, 0)
					first := ct.Envelope{ID: "m1", Payload: a.payload(id, "one")}
					second := ct.Envelope{ID: "m2", Payload: b.payload(id, "two")}
					want := []string{"applied", "applied", "duplicate", "duplicate"}
					if a.name == b.name {
						want = []string{"applied", "poison", "duplicate", "poison"}
					}
					for i, e := range []ct.Envelope{first, second, first, second} {
						if w := post(t, h, ct.PushBody(t, e)); w.Code != 200 {
							t.Fatalf("push %d: %d %s", i, w.Code, w.Body)
						}
						lines := log.Lines(t)
						line := lines[len(lines)-1]
						if line["outcome"] != want[i] || line["route"] != []string{a.name, b.name}[i%2] {
							t.Fatalf("delivery %d (%s): outcome %v on route %v, want %s (%v)", i, e.Payload, line["outcome"], line["route"], want[i], line["error"])
						}
					}
				})
			}
		}
	}
}
