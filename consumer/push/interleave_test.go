package push

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/store"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

// TestConcurrentInterleavingsApplyEachEventOnce generates histories of
// latest-state events for three services (each event with its own producer
// event id, some republished under a new message id, some with sequences)
// and delivers every event one to four times, all at once, in a random
// order, to one instance (so deliveries on a service coalesce). For every
// history: each delivery is answered 200 and logged once as applied,
// duplicate or stale_ignored; no event is applied twice, whichever
// message carried it; and each service's document is its newest event's.
// 40 histories from fixed seeds.
func TestConcurrentInterleavingsApplyEachEventOnce(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 99))
		type event struct {
			id, svc, status string
			at              time.Time
			seq             int
		}
		newest := map[string]event{}
		var events []event
		for svc := range 3 {
			name := fmt.Sprintf("svc-%d", svc)
			useSeq := rng.IntN(2) == 0
			for i := range 1 + rng.IntN(6) {
				e := event{id: fmt.Sprintf("e-%d-%d", svc, i), svc: name, status: fmt.Sprintf("s%d", i),
					at: base.Add(time.Duration(i) * time.Second)}
				if useSeq {
					e.seq = i + 1
				}
				events = append(events, e)
				newest[name] = e // the last is the newest by event time and sequence
			}
		}
		type delivery struct {
			e   event
			msg string
		}
		var ds []delivery
		for _, e := range events {
			for copy := range 1 + rng.IntN(4) {
				msg := "m-" + e.id
				if copy > 0 && rng.IntN(2) == 0 {
					msg = fmt.Sprintf("r-%s-%d", e.id, copy) // republished
				}
				ds = append(ds, delivery{e, msg})
			}
		}
		rng.Shuffle(len(ds), func(i, j int) { ds[i], ds[j] = ds[j], ds[i] })

		proc, st, log := ct.NewProcessor(t, ct.Options{})
		h := New(proc, nil, nil)
		var wg sync.WaitGroup
		codes := make([]int, len(ds))
		start := make(chan struct{})
		for i, d := range ds {
			seq := ""
			if d.e.seq > 0 {
				seq = fmt.Sprintf(`,"sequence":%d`, d.e.seq)
			}
			payload := fmt.Sprintf(`{"service":%q,"status":%q,"producedAt":%q,"eventId":%q%s}`, d.e.svc, d.e.status, d.e.at.Format(time.RFC3339), d.e.id, seq)
			// Published a moment after the event, the same for every copy:
			// a republish keeps the event's publish time order.
			body := ct.PushBody(t, ct.Envelope{ID: d.msg, Payload: payload, PublishTime: d.e.at.Add(time.Duration(i%3) * time.Millisecond)})
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				codes[i] = post(t, h, body).Code
			}()
		}
		close(start)
		wg.Wait()
		for i, c := range codes {
			if c != 200 {
				t.Fatalf("seed %d: delivery %d answered %d", seed, i, c)
			}
		}
		applied := map[string]int{}
		lines := ct.With(log.Lines(t), "route", "system_events")
		if len(lines) != len(ds) {
			t.Fatalf("seed %d: %d lines for %d deliveries", seed, len(lines), len(ds))
		}
		for _, l := range lines {
			switch l["outcome"] {
			case "applied":
				applied[fmt.Sprint(l["idempotency_doc"])]++
			case "duplicate", "stale_ignored":
			default:
				t.Fatalf("seed %d: %v", seed, l)
			}
		}
		for doc, n := range applied {
			if n > 1 {
				t.Fatalf("seed %d: event %s applied %d times", seed, doc, n)
			}
		}
		for svc, e := range newest {
			doc, ok := ct.Get(t, st, store.Key{Collection: opsColl, ID: "test__" + svc})
			if !ok || doc.Fields["status"] != e.status {
				t.Fatalf("seed %d: %s is %v, want the newest event's %s", seed, svc, doc.Fields["status"], e.status)
			}
		}
	}
}
