package push

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/boltstore"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

// TestConcurrentDuplicatePushes sends the same message 64 times at once over
// real HTTP: exactly one delivery applies it, 63 are duplicates, all acked.
func TestConcurrentDuplicatePushes(t *testing.T) {
	stores := []struct {
		name string
		open func(t *testing.T) store.Store
	}{
		{"memory", func(*testing.T) store.Store { return memstore.New() }},
		{"bbolt (the default store)", func(t *testing.T) store.Store {
			st, err := boltstore.Open(filepath.Join(t.TempDir(), "push.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		}},
	}
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) { concurrentDuplicates(t, s.open(t)) })
	}
}

func concurrentDuplicates(t *testing.T, st store.Store) {
	proc, _, log := ct.NewProcessor(t, ct.Options{Store: st})
	srv := httptest.NewServer(New(proc, nil, nil))
	defer srv.Close()
	body := ct.PushBody(t, ct.Envelope{ID: "same", Payload: sysEvent("healthy", "2026-01-02T03:00:00Z")})

	const n = 64
	var wg sync.WaitGroup
	start := make(chan struct{})
	codes := make([]int, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			resp, err := http.Post(srv.URL+Path, "application/json", bytes.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		}()
	}
	close(start)
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusOK {
			t.Fatalf("push %d: status %d", i, c)
		}
	}
	lines := log.Lines(t)
	if a, d := len(ct.With(lines, "outcome", "applied")), len(ct.With(lines, "outcome", "duplicate")); a != 1 || d != n-1 {
		t.Fatalf("applied %d, duplicates %d; want 1 and %d", a, d, n-1)
	}
}

// TestShuffledDeliveriesConverge delivers a service's history in random
// orders, with duplicates, to fresh stores: every order ends with the same
// document, the newest event's.
func TestShuffledDeliveriesConverge(t *testing.T) {
	type event struct {
		id, status string
		at         time.Time
	}
	base := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	var history []event
	for i := range 12 {
		// Two events share each timestamp: publish time and message id break the tie.
		at := base.Add(time.Duration(i/2) * time.Minute)
		history = append(history, event{fmt.Sprintf("m%02d", i), fmt.Sprintf("s%02d", i), at})
	}
	var want map[string]any
	for run := range 20 {
		rng := rand.New(rand.NewPCG(uint64(run), 7))
		deliveries := append(append([]event(nil), history...), history[rng.IntN(len(history))], history[rng.IntN(len(history))])
		rng.Shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })
		proc, st, _ := ct.NewProcessor(t, ct.Options{})
		h := New(proc, nil, nil)
		for _, e := range deliveries {
			// "timestamp" (not producedAt) leaves the logical identity
			// incomplete, so the message id is the dedupe key and events
			// sharing a time stay distinct.
			payload := fmt.Sprintf(`{"service":"api","status":%q,"timestamp":%q}`, e.status, e.at.Format(time.RFC3339))
			body := ct.PushBody(t, ct.Envelope{ID: e.id, Payload: payload, PublishTime: e.at})
			if w := post(t, h, body); w.Code != 200 {
				t.Fatalf("run %d: %d %s", run, w.Code, w.Body)
			}
		}
		doc, ok := ct.Get(t, st, store.Key{Collection: opsColl, ID: apiDoc})
		if !ok {
			t.Fatal("no document")
		}
		got := map[string]any{"status": doc.Fields["status"], "source": doc.Fields["source"], "updatedAt": doc.Fields["updatedAt"]}
		if got["status"] != "s11" {
			t.Fatalf("run %d: final status %v, want the newest event's s11", run, got["status"])
		}
		if want == nil {
			want = got
		} else if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("run %d diverged:\n%v\n%v", run, got, want)
		}
	}
}
