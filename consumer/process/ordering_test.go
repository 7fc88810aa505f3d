package process_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

// TestRouteMaxSequenceJump: a route's ordering.maxSequenceJump reaches the
// engine. Sequence 13 follows 10, published ten minutes later (beyond the
// window) by a producer instance whose clock is slow: its event time is
// older than the stored one. Under the default bound its sequence step
// carries it (applied); under a bound of 2 it does not, and the event
// time decides (stale_ignored).
func TestRouteMaxSequenceJump(t *testing.T) {
	for _, tc := range []struct {
		jump string
		want string
	}{{"", logfields.OutcomeApplied}, {`, "maxSequenceJump": 2`, logfields.OutcomeStale}} {
		routes := `{"routes":[{"name":"svc","match":{"fields":["service"]},"mode":"latest-state",
		  "target":{"collection":"ops_services","id":"id"},
		  "fields":{"id":{"from":["service"],"type":"string","required":true},
		    "at":{"from":["producedAt"],"type":"timestamp","required":true},
		    "seq":{"from":["sequence"],"type":"integer","required":true}},
		  "ordering":{"eventTime":"at","sequence":"seq"` + tc.jump + `}}]}`
		proc, _, _ := ct.NewProcessor(t, ct.Options{Routes: []byte(routes)})
		t0 := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
		deliver := func(id string, seq int, published, produced time.Time) string {
			payload := fmt.Sprintf(`{"service":"api","sequence":%d,"producedAt":%q}`, seq, produced.Format(time.RFC3339))
			p, err := envelope.DecodePayload([]byte(payload))
			if err != nil {
				t.Fatal(err)
			}
			r := proc.Process(t.Context(), &envelope.Message{ID: id, Data: []byte(payload), Payload: p,
				Attributes: map[string]string{}, PublishTime: published, Subscription: ct.Subscription})
			if r.Err != nil {
				t.Fatalf("deliver %s: %v", id, r.Err)
			}
			return r.Outcome
		}
		if got := deliver("m10", 10, t0, t0.Add(time.Minute)); got != logfields.OutcomeApplied {
			t.Fatalf("sequence 10: %s", got)
		}
		if got := deliver("m13", 13, t0.Add(10*time.Minute), t0.Add(-10*time.Minute)); got != tc.want {
			t.Errorf("route ordering {…%s}: sequence 13 beyond the window, older by its event time: %s, want %s",
				strings.TrimPrefix(tc.jump, ", "), got, tc.want)
		}
	}
}
