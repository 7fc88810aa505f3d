package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/engine"
)

// statusEvent is a status change of service checkout: its event, with the
// given ids, and its write to coll (with a dedupe marker, as routes with a
// dedupe block write).
type statusEvent struct {
	msgID, eventID, status string
	// identity fields (the system-events route's derived key is (service, producedAt))
	producedAt, published time.Time
}

func (s statusEvent) event() engine.Event {
	payload, err := json.Marshal(map[string]any{"service": "checkout", "status": s.status, "producedAt": s.producedAt, "eventId": s.eventID})
	if err != nil {
		panic(err) // cannot happen: strings and times
	}
	ev := engine.Event{MessageID: s.msgID, PublishTime: s.published, EventID: s.eventID, Payload: payload}
	if s.eventID == "" {
		ev.Identity = map[string]any{"service": "checkout", "producedAt": s.producedAt.Format(time.RFC3339Nano)}
	}
	return ev
}

func (s statusEvent) write(coll string) engine.Write {
	return engine.Write{Collection: coll, ID: "checkout", EventTime: s.producedAt, DedupeMarker: true,
		Fields: map[string]any{"status": s.status, "updatedAt": s.producedAt}}
}

func (e *env) materialize(eng *engine.Engine, coll string, s statusEvent) engine.Result {
	e.t.Helper()
	r, err := eng.Materialize(context.Background(), s.event(), s.write(coll))
	if err != nil {
		e.t.Fatalf("deliver %s (%s): %v", s.msgID, s.status, err)
	}
	return r
}

// exactEventIDs: producer event ids and message ids that differ only in
// case are distinct events (base62, base64url and nanoid ids are
// case-sensitive): both apply, neither is a duplicate or poison.
func exactEventIDs(t *testing.T, e *env) {
	eng := e.engine()
	at := t0()
	for _, tc := range []struct {
		name   string
		first  statusEvent
		second statusEvent
	}{
		{"event ids", statusEvent{msgID: "m1", eventID: "Ab3xZ", status: "degraded", producedAt: at, published: at},
			statusEvent{msgID: "m2", eventID: "aB3Xz", status: "healthy", producedAt: at.Add(time.Second), published: at.Add(time.Second)}},
		{"message ids", statusEvent{msgID: "Ab3xZ", status: "degraded", producedAt: at, published: at},
			statusEvent{msgID: "aB3Xz", status: "healthy", producedAt: at.Add(time.Second), published: at.Add(time.Second)}},
	} {
		coll := e.collection(fmt.Sprintf("exact_%d", len(tc.name)))
		write := func(s statusEvent) engine.Result {
			w := s.write(coll)
			w.DedupeMarker = s.eventID != "" // a message id key needs no marker
			ev := s.event()
			ev.Identity = nil
			r, err := eng.Materialize(context.Background(), ev, w)
			if err != nil {
				t.Fatalf("%s: deliver %s: %v", tc.name, s.msgID, err)
			}
			return r
		}
		if r := write(tc.first); r.Outcome != engine.Applied {
			t.Fatalf("%s: first: %s", tc.name, r.Outcome)
		}
		if r := write(tc.second); r.Outcome != engine.Applied {
			t.Errorf("%s: %s after %s: %s, want applied (a different event)", tc.name, tc.second.msgID, tc.first.msgID, r.Outcome)
		}
		if got := stateOf(t, e, coll, "checkout")["status"]; got != "healthy" {
			t.Errorf("%s: status %v, want healthy", tc.name, got)
		}
	}
}

// derivedKeyCollision: two events whose derived key (service, producedAt)
// is the same but whose payloads differ (degraded, then healthy within the
// same second) are two events, ordered by publish time then message id: in
// either order of delivery the document ends healthy, nothing is poison,
// and redelivering either changes nothing.
func derivedKeyCollision(t *testing.T, e *env) {
	eng := e.engine()
	at := t0()
	degraded := statusEvent{msgID: "1001", status: "degraded", producedAt: at, published: at.Add(100 * time.Millisecond)}
	healthy := statusEvent{msgID: "1002", status: "healthy", producedAt: at, published: at.Add(700 * time.Millisecond)}
	for i, order := range [][]statusEvent{{degraded, healthy}, {healthy, degraded}} {
		coll := e.collection(fmt.Sprintf("derived%d", i))
		// Each order has its own dedupe markers.
		eng := e.engine(func(c *engine.Config) { c.CollectionPrefix = fmt.Sprintf("%so%d_", e.prefix, i) })
		for _, s := range order {
			e.materialize(eng, coll, s)
		}
		for _, s := range order { // Pub/Sub redelivers both
			if r := e.materialize(eng, coll, s); r.Outcome == engine.Applied {
				t.Errorf("order %d: redelivery of %s applied again", i, s.status)
			}
		}
		if got := stateOf(t, e, coll, "checkout")["status"]; got != "healthy" {
			t.Errorf("order %d: status %v, want healthy (published last)", i, got)
		}
	}
	// A lease keyed by a derived key: another payload is another action.
	ctx := context.Background()
	a, err := eng.Claim(ctx, emailReq(degraded.event()))
	if err != nil {
		t.Fatalf("claim for %s: %v", degraded.status, err)
	}
	b, err := eng.Claim(ctx, emailReq(healthy.event()))
	if err != nil || b.Doc == a.Doc {
		t.Fatalf("claim for %s: %+v, %v; want its own lease (not %s)", healthy.status, b, err, a.Doc)
	}
	_, err = eng.Claim(ctx, emailReq(degraded.event()))
	wantType(t, "second claim of the same payload", err, engine.TypeInProgress)
}

// eventTimeSkew: an event time far ahead of the publish time (9999-12-31)
// is the event's own, in every copy (engine.Ordering): it wins inside the
// window and holds its document no longer than the window after its
// publish time, so the next real update published beyond it applies.
func eventTimeSkew(t *testing.T, e *env) {
	eng, coll := e.engine(), e.collection("ops_services")
	at := t0()
	placeholder := statusEvent{msgID: "2001", eventID: "e-future", status: "degraded",
		producedAt: time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), published: at}
	within := statusEvent{msgID: "2002", eventID: "e-within", status: "starting", producedAt: at.Add(time.Minute), published: at.Add(time.Minute)}
	later := statusEvent{msgID: "2003", eventID: "e-later", status: "healthy", producedAt: at.Add(engine.DefaultMaxEventSkew + time.Minute),
		published: at.Add(engine.DefaultMaxEventSkew + time.Minute)}
	earlier := statusEvent{msgID: "2000", eventID: "e-earlier", status: "starting", producedAt: at.Add(-time.Minute), published: at.Add(-time.Minute)}
	if r := e.materialize(eng, coll, placeholder); r.Outcome != engine.Applied {
		t.Fatalf("placeholder: %s", r.Outcome)
	}
	if r := e.materialize(eng, coll, within); r.Outcome != engine.Stale {
		t.Errorf("update a minute after an event dated 9999-12-31: %s, want stale_ignored (inside the window the event time orders)", r.Outcome)
	}
	e.clock.Advance(engine.DefaultMaxEventSkew + time.Minute)
	if r := e.materialize(eng, coll, later); r.Outcome != engine.Applied {
		t.Errorf("update published beyond the window after an event dated 9999-12-31: %s, want applied", r.Outcome)
	}
	if r := e.materialize(eng, coll, earlier); r.Outcome != engine.Stale {
		t.Errorf("an older update: %s, want stale_ignored", r.Outcome)
	}
	if got := stateOf(t, e, coll, "checkout")["status"]; got != "healthy" {
		t.Errorf("status %v, want healthy", got)
	}
	// Within the skew the event's own time still orders.
	coll = e.collection("ops_services_within")
	ahead := statusEvent{msgID: "3001", eventID: "e-ahead", status: "degraded", producedAt: at.Add(engine.DefaultMaxEventSkew - time.Second), published: at}
	behind := statusEvent{msgID: "3002", eventID: "e-behind", status: "healthy", producedAt: at.Add(time.Second), published: at.Add(2 * time.Second)}
	e.materialize(eng, coll, ahead)
	if r := e.materialize(eng, coll, behind); r.Outcome != engine.Stale {
		t.Errorf("an update older by event time, within the skew: %s, want stale_ignored", r.Outcome)
	}
}
