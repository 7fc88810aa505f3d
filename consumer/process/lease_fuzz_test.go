package process_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
)

// leaseStatuses are the answers the downstream may give a lease action:
// success, the retryable failures (5xx, 408, 425, 429) and refusals (any
// other status: the other 4xx, 3xx).
var leaseStatuses = []int{http.StatusOK, http.StatusAccepted, http.StatusInternalServerError, http.StatusServiceUnavailable,
	http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusConflict,
	http.StatusTooEarly, http.StatusFound}

// FuzzLeaseAction holds a lease route to "the side effect runs at most
// once" for any history of deliveries, redeliveries and republishes of two
// events against a downstream whose answers the script chooses. Each byte
// of the script is one delivery: which event (bit 0), under its first
// message id or a new one (bit 1), and what the downstream answers if it
// is called (the rest, indexing leaseStatuses). A model of the documented
// rules (docs/handlers.md, the answer table) gives every delivery's
// outcome: after a 2xx the event is a duplicate and the downstream is not
// called again; 5xx, 408, 425 and 429 are retried; any other status is a
// refusal, remembered: poison, and every redelivery is poison without
// another call (issue 34: five calls for one 422 before the dead-letter
// topic); maxAttempts (3) retried calls make it poison for good, without
// another call.
// Every call of one event carries the same Idempotency-Key, and two
// events never share one. Seeds: every script of up to four deliveries of one event over a
// success, a retryable failure and a rejection, and mixed histories of two.
func FuzzLeaseAction(f *testing.F) {
	pick := []byte{0 << 2, 3 << 2, 7 << 2} // 200, 503, 422 for event 0, first message id
	var gen func(prefix []byte, n int)
	gen = func(prefix []byte, n int) {
		f.Add(append([]byte(nil), prefix...))
		if n == 0 {
			return
		}
		for _, b := range pick {
			gen(append(prefix, b), n-1)
		}
	}
	gen(nil, 4)
	f.Add([]byte{2<<2 | 0, 2<<2 | 1, 4<<2 | 2, 5<<2 | 3, 1<<2 | 1, 0, 8<<2 | 2, 6<<2 | 0})
	f.Add([]byte{3 << 2, 3<<2 | 1, 3<<2 | 2, 3<<2 | 3, 3 << 2, 0 | 1, 0 | 3})
	f.Fuzz(func(t *testing.T, script []byte) {
		if len(script) > 24 {
			script = script[:24]
		}
		var next atomic.Int64 // the status the downstream answers now
		d, deliver, _ := leaseSetup(t, "1m", "10s", func(int64) int { return int(next.Load()) })
		type model struct {
			failures                int
			done, poisoned, refused bool
			key                     string
		}
		events := [2]model{}
		calls := int64(0)
		for i, b := range script {
			ev := int(b & 1)
			id := fmt.Sprintf("m-%d", ev)
			if b&2 != 0 {
				id = fmt.Sprintf("r-%d-%d", ev, i) // republished: a new message id, the same event
			}
			status := leaseStatuses[int(b>>2)%len(leaseStatuses)]
			next.Store(int64(status))
			m := &events[ev]
			want, wantStatus := "", 0
			switch {
			case m.done:
				want, wantStatus = "duplicate", 200
			case m.poisoned, m.refused:
				want, wantStatus = "poison", 200
			default:
				calls++
				switch {
				case status >= 200 && status < 300:
					want, wantStatus, m.done = "applied", 200, true
				case status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooEarly || status == http.StatusTooManyRequests:
					want, wantStatus = "retry", 500
					if m.failures++; m.failures == 3 {
						want, wantStatus, m.poisoned = "poison", 200, true
					}
				default:
					// Refused: no DLQ, so acked with a poison record, and remembered.
					want, wantStatus, m.refused = "poison", 200, true
				}
			}
			keysBefore := len(d.keys)
			r := deliver(id, fmt.Sprintf("sha-%d", ev))
			if r.outcome != want || r.status != wantStatus {
				t.Fatalf("delivery %d (event %d, %s, downstream %d): %s %d (%v), want %s %d", i, ev, id, status, r.outcome, r.status, r.err, want, wantStatus)
			}
			if got := d.calls.Load(); got != calls {
				t.Fatalf("delivery %d: downstream called %d times, want %d", i, got, calls)
			}
			if called := len(d.keys) > keysBefore; called {
				if k := d.keys[len(d.keys)-1]; k == "" {
					t.Fatalf("delivery %d: a call without an Idempotency-Key", i)
				} else if m.key == "" {
					m.key = k
				} else if k != m.key {
					t.Fatalf("delivery %d: Idempotency-Key %q, but the event's earlier calls carried %q", i, k, m.key)
				}
			}
		}
		if events[0].key != "" && events[0].key == events[1].key {
			t.Fatalf("two events share the Idempotency-Key %q", events[0].key)
		}
	})
}
