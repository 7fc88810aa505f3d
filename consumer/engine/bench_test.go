package engine_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/boltstore"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	"github.com/eventpipe/eventpipe/consumer/store/pgstore"
	"github.com/eventpipe/eventpipe/internal/testing/pgtest"
)

var benchT0 = time.Date(2026, 1, 8, 10, 0, 0, 0, time.UTC)

// benchMessage is message i: 1,024 aggregates, each seeing ever newer events.
func benchMessage(i int) (engine.Event, engine.Write) {
	id := strconv.Itoa(i)
	at := benchT0.Add(time.Duration(i) * time.Millisecond)
	ev := engine.Event{MessageID: "m" + id, EventID: "e" + id, PublishTime: at,
		Payload: []byte(`{"eventId":"e` + id + `","service":"svc-` + strconv.Itoa(i%1024) + `","status":"healthy"}`)}
	w := engine.Write{Collection: "ops_services", ID: "svc-" + strconv.Itoa(i%1024), EventTime: at,
		Fields: map[string]any{"status": "healthy", "region": "europe-west1", "version": "1.4.2"}}
	return ev, w
}

type benchStore struct {
	name string
	open func(b *testing.B) store.Store
}

func benchStores() []benchStore {
	return []benchStore{
		{"memory", func(*testing.B) store.Store { return memstore.New() }},
		{"bbolt", func(b *testing.B) store.Store { return openBolt(b) }},
	}
}

func openBolt(b *testing.B) *boltstore.Store {
	s, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

func benchEngine(b *testing.B, st store.Store) *engine.Engine {
	eng, err := engine.New(engine.Config{Store: st, Env: "prod"})
	if err != nil {
		b.Fatal(err)
	}
	return eng
}

func reportRate(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkMaterialize measures applied and duplicate latest-state messages
// per second and allocations per message, one delivery at a time.
func BenchmarkMaterialize(b *testing.B) {
	ctx := context.Background()
	for _, bs := range benchStores() {
		b.Run(bs.name+"/applied", func(b *testing.B) {
			eng := benchEngine(b, bs.open(b))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ev, w := benchMessage(i)
				if r, err := eng.Materialize(ctx, ev, w); err != nil || r.Outcome != engine.Applied {
					b.Fatalf("%d: %v %v", i, r.Outcome, err)
				}
			}
			reportRate(b)
		})
		b.Run(bs.name+"/duplicate", func(b *testing.B) {
			eng := benchEngine(b, bs.open(b))
			ev, w := benchMessage(1)
			if _, err := eng.Materialize(ctx, ev, w); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if r, err := eng.Materialize(ctx, ev, w); err != nil || r.Outcome != engine.Duplicate {
					b.Fatalf("%d: %v %v", i, r.Outcome, err)
				}
			}
			reportRate(b)
		})
	}
}

// BenchmarkBboltConcurrent measures applied messages per second on bbolt with
// 1 and 64 concurrent deliveries, and how many messages share one commit
// (one fsync): group commit is what lifts the 64-delivery rate above one
// fsync per message.
func BenchmarkBboltConcurrent(b *testing.B) {
	ctx := context.Background()
	for _, workers := range []int{1, 64} {
		b.Run(fmt.Sprintf("deliveries=%d", workers), func(b *testing.B) {
			st := openBolt(b)
			eng := benchEngine(b, st)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := int(next.Add(1)) - 1
						if i >= b.N {
							return
						}
						ev, wr := benchMessage(i)
						if _, err := eng.Materialize(ctx, ev, wr); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			reportRate(b)
			s := st.Stats()
			b.ReportMetric(float64(s.Transactions)/float64(max(s.Commits, 1)), "msgs/commit")
		})
	}
}

// BenchmarkPostgresConcurrent measures applied latest-state messages (each
// with its dedupe marker) per second on a syncing PostgreSQL (pgtest's
// default: fsync and synchronous commit on), from 8 and 64 concurrent
// deliveries over 1,024 documents, two ways: the store deciding each write
// in one round trip (store.LatestWriter) and the engine's own transaction
// (the capability hidden).
func BenchmarkPostgresConcurrent(b *testing.B) {
	ctx := context.Background()
	pg := pgtest.Start(b)
	n := 0
	for _, workers := range []int{8, 64} {
		for _, way := range []string{"write-latest", "transaction"} {
			b.Run(fmt.Sprintf("deliveries=%d/%s", workers, way), func(b *testing.B) {
				n++
				url, err := pg.NewDatabase(ctx, fmt.Sprint("bench", n))
				if err != nil {
					b.Fatal(err)
				}
				s, err := pgstore.Open(ctx, url)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = s.Close() })
				var st store.Store = s
				if way == "transaction" {
					st = txOnly{s}
				}
				eng := benchEngine(b, st)
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ReportAllocs()
				b.ResetTimer()
				for range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							i := int(next.Add(1)) - 1
							if i >= b.N {
								return
							}
							ev, wr := benchMessage(i)
							wr.DedupeMarker = true
							if _, err := eng.Materialize(ctx, ev, wr); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				reportRate(b)
			})
		}
	}
}
