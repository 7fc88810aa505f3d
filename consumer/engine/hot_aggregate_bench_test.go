package engine_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/opcount"
	"github.com/eventpipe/eventpipe/consumer/store/pgstore"
	"github.com/eventpipe/eventpipe/internal/testing/pgtest"
	"github.com/eventpipe/eventpipe/internal/testing/remotestore"
)

// Hot-aggregate traffic: heartbeats of many instances landing on a few
// latest-state documents (with dedupe markers, as the default routes have).
const (
	hotMessages   = 1000
	hotDeliveries = 64
	// hotCommitLatency models a Firestore commit.
	hotCommitLatency = 20 * time.Millisecond
	// hotMaxDeliveries bounds one message's deliveries (a DLQ's
	// maxDeliveryAttempts is at most 100).
	hotMaxDeliveries = 100
)

// BenchmarkHotAggregate delivers 1,000 latest-state messages for 1, for 10
// and for 1,000 aggregates (every message its own document: nothing to
// coalesce, so it shows what coalescing costs uncontended traffic) with 64
// deliveries in flight, on the memory store modelling
// Firestore (20 ms commits, concurrent transactions on a document aborted,
// 5 attempts) and on a real PostgreSQL. A delivery failing as transient is
// delivered again at once, as if Pub/Sub redelivered it without backoff,
// until its outcome is applied, duplicate or stale. It reports committed
// store writes, transient errors and transaction attempts (retries
// included) per message, messages settled per second and the 99th
// percentile of a message's time to settle.
//
// EVENTPIPE_COALESCE_MAX_WAITING is the engine's MaxWaitingPerDocument, as
// in the consumer: 0 turns coalescing off (the "before" of
// scripts/hot-aggregate-bench.sh).
func BenchmarkHotAggregate(b *testing.B) {
	parent := b
	maxWaiting := 0
	if v := os.Getenv("EVENTPIPE_COALESCE_MAX_WAITING"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			b.Fatalf("EVENTPIPE_COALESCE_MAX_WAITING=%q: use 0 (off) or a positive bound", v)
		}
		maxWaiting = n
		if n == 0 {
			maxWaiting = engine.NoCoalescing
		}
	}
	var pg struct {
		once sync.Once
		url  string
	}
	stores := []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"mem-20ms", func(*testing.B) store.Store { return remotestore.New(hotCommitLatency, 0) }},
		{"postgres", func(b *testing.B) store.Store {
			pg.once.Do(func() {
				// One cluster for every sub-benchmark: stopped when the parent ends.
				c, err := pgtest.StartCluster(context.Background())
				if err != nil {
					b.Fatalf("pgtest: %v", err)
				}
				parent.Cleanup(func() { _ = c.Stop() })
				pg.url = c.URL
			})
			if pg.url == "" {
				b.Fatal("no PostgreSQL cluster (see the first sub-benchmark's error)")
			}
			s, err := pgstore.Open(context.Background(), pg.url)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			return s
		}},
	}
	run := 0
	for _, st := range stores {
		for _, aggregates := range []int{1, 10, hotMessages} {
			b.Run(fmt.Sprintf("store=%s/aggregates=%d", st.name, aggregates), func(b *testing.B) {
				var total hotRun
				for i := 0; i < b.N; i++ {
					run++
					s := &committedWrites{inner: st.open(b)}
					eng, err := engine.New(engine.Config{Store: s.store(), Env: "prod", MaxWaitingPerDocument: maxWaiting,
						CollectionPrefix: fmt.Sprintf("hot%d_", run)})
					if err != nil {
						b.Fatal(err)
					}
					r := deliverHot(b, eng, fmt.Sprintf("hot%d_services", run), aggregates)
					r.writes, r.attempts = s.writes.Load(), s.attempts.Load()
					total.add(r)
				}
				total.report(b)
			})
		}
	}
}

// TestHotAggregateCoalesced runs the benchmark's traffic for 1 aggregate
// on the Firestore model with 1 ms commits: coalesced, no delivery fails
// and the 1,000 messages cost at most one transaction's writes per 10.
func TestHotAggregateCoalesced(t *testing.T) {
	s := &committedWrites{inner: remotestore.New(time.Millisecond, 0)}
	eng, err := engine.New(engine.Config{Store: s, Env: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	r := deliverHot(t, eng, "ops_services", 1)
	if r.errors != 0 || s.writes.Load() > hotMessages*2/10 {
		t.Errorf("%d transient errors and %d writes for %d messages; want none and at most %d",
			r.errors, s.writes.Load(), hotMessages, hotMessages*2/10)
	}
}

// hotRun is what one or more runs of 1,000 messages measured.
type hotRun struct {
	messages, writes, errors, attempts int64
	elapsed                            time.Duration
	latencies                          []time.Duration
}

func (r *hotRun) add(o hotRun) {
	r.messages += o.messages
	r.writes += o.writes
	r.errors += o.errors
	r.attempts += o.attempts
	r.elapsed += o.elapsed
	r.latencies = append(r.latencies, o.latencies...)
}

func (r *hotRun) report(b *testing.B) {
	slices.Sort(r.latencies)
	p99 := r.latencies[(len(r.latencies)*99+99)/100-1]
	n := float64(r.messages)
	b.ReportMetric(float64(r.writes)/n, "writes/msg")
	b.ReportMetric(float64(r.errors)/n, "errors/msg")
	b.ReportMetric(float64(r.attempts)/n, "tx-attempts/msg")
	b.ReportMetric(n/r.elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
	b.ReportMetric(0, "ns/op") // one op is a whole run: its time says nothing per message
}

// deliverHot delivers hotMessages heartbeats for aggregates services from
// hotDeliveries goroutines, each message until it settles.
func deliverHot(b testing.TB, eng *engine.Engine, coll string, aggregates int) hotRun {
	ctx := context.Background()
	var next, errs atomic.Int64
	lat := make([]time.Duration, hotMessages)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < hotDeliveries; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= hotMessages {
					return
				}
				ev, wr := hotMessage(coll, i, aggregates)
				began := time.Now()
				for attempt := 1; ; attempt++ {
					_, err := eng.Materialize(ctx, ev, wr)
					if err == nil {
						break
					}
					if t, _ := engine.Classify(err); t != engine.TypeTransient || attempt == hotMaxDeliveries {
						b.Errorf("message %d, delivery %d: %v", i, attempt, err)
						break
					}
					errs.Add(1)
				}
				lat[i] = time.Since(began)
			}
		}()
	}
	wg.Wait()
	return hotRun{messages: hotMessages, errors: errs.Load(), elapsed: time.Since(start), latencies: lat}
}

// hotMessage is heartbeat i: service i%aggregates, each newer than the last.
func hotMessage(coll string, i, aggregates int) (engine.Event, engine.Write) {
	id, svc := strconv.Itoa(i), "svc-"+strconv.Itoa(i%aggregates)
	at := benchT0.Add(time.Duration(i) * time.Millisecond)
	ev := engine.Event{MessageID: "m" + id, EventID: "e" + id, PublishTime: at.Add(time.Second),
		Payload: []byte(`{"eventId":"e` + id + `","service":"` + svc + `","status":"healthy","instance":` + id + `}`)}
	w := engine.Write{Collection: coll, ID: svc, EventTime: at, DedupeMarker: true,
		Fields: map[string]any{"status": "healthy", "instance": int64(i), "version": "1.4.2"}}
	return ev, w
}

// committedWrites counts the writes of committed transactions only: those
// of attempts a driver aborted and retried are not billed and never
// reached the document.
type committedWrites struct {
	inner  store.Store
	writes atomic.Int64
	// attempts counts transaction attempts, those a driver retried included.
	attempts atomic.Int64
}

func (c *committedWrites) RunTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	var last *opcount.Tally
	err := c.inner.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
		c.attempts.Add(1)
		last = &opcount.Tally{}
		return fn(ctx, last.Tx(tx))
	})
	if err == nil && last != nil {
		n := last.Counts()
		c.writes.Add(n.Writes + n.Deletes)
	}
	return err
}

func (c *committedWrites) Close() error { return c.inner.Close() }

// store is c, with the inner store's store.LatestWriter kept (and
// counted) when it has one, so the engine writes as it would on it.
func (c *committedWrites) store() store.Store {
	if lw, ok := c.inner.(store.LatestWriter); ok {
		return &committedLatest{committedWrites: c, lw: lw}
	}
	return c
}

// committedLatest is committedWrites over a store.LatestWriter: a write
// counts as one attempt and, written, its document and marker.
type committedLatest struct {
	*committedWrites
	lw store.LatestWriter
}

func (c *committedLatest) WriteLatest(ctx context.Context, w store.LatestWrite) (store.LatestResult, error) {
	res, err := c.lw.WriteLatest(ctx, w)
	c.attempts.Add(1)
	if err == nil && res.Written {
		c.writes.Add(1)
		if w.Marker != (store.Key{}) {
			c.writes.Add(1)
		}
	}
	return res, err
}
