// Package pushload measures the consumer end to end on PostgreSQL: Pub/Sub
// pushes sent over loopback HTTP by a number of concurrent senders to a
// consumer binary running as its own process, against the bare loop
// (Bare): the fastest correct apply a hand-written pgx program can make of
// the same messages, with no HTTP, decoding or logging. Command pushload
// runs both, and the previous release's binary, in interleaved rounds on
// one syncing PostgreSQL and prints the ratios (scripts/consumer-bench.sh
// runs it; docs/benchmarks.md quotes it).
package pushload

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Subscription is the subscription the generated pushes name.
const Subscription = "projects/bench/subscriptions/system-events"

// Message is one generated delivery: its push body for a consumer, and the
// documents the bare loop writes for it.
type Message struct {
	// Body is the push envelope of a system event (the default routes'
	// system_events route: a latest-state document per service, with a
	// dedupe marker).
	Body []byte
	// DocID and MarkerID name the target document and the dedupe marker in
	// the bare loop's table.
	DocID, MarkerID string
	// Doc and Marker are what the bare loop writes: JSON of the shape the
	// consumer writes (the route's fields and the ordering metadata).
	Doc, Marker []byte
}

// Base is the time of the first generated event.
var Base = time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)

// Messages generates n deliveries over docs documents: message i is a
// system event of service svc-(i mod docs) produced and published at Base
// plus i milliseconds, so each document gets its versions in order, docs
// messages apart (what a fleet of services reporting in turn looks like),
// and every message is applied unless a sender overtakes another.
// namespace keeps the ids of one generation apart from another's (the
// warm-up's from the measured run's).
func Messages(namespace string, n, docs int) []Message {
	out := make([]Message, n)
	for i := range out {
		at := Base.Add(time.Duration(i) * time.Millisecond)
		service := fmt.Sprintf("%s-svc-%d", namespace, i%docs)
		id := fmt.Sprintf("%s-m-%d", namespace, i)
		payload := fmt.Sprintf(`{"service":%q,"status":"healthy","version":"1.0","region":"eu","producedAt":%q}`,
			service, at.Format(time.RFC3339Nano))
		env := map[string]any{
			"message": map[string]any{
				"data": base64.StdEncoding.EncodeToString([]byte(payload)), "messageId": id,
				"publishTime": at.Format(time.RFC3339Nano), "attributes": map[string]string{},
			},
			"subscription": Subscription,
		}
		body, err := json.Marshal(env)
		if err != nil {
			panic(err) // maps of strings always encode
		}
		stamp := func(t time.Time) map[string]string {
			return map[string]string{"$eventpipe_time": t.Format(time.RFC3339Nano)}
		}
		doc, _ := json.Marshal(map[string]any{
			"serviceId": service, "env": "bench", "status": "healthy", "version": "1.0", "region": "eu",
			"lastHeartbeatAt": stamp(at), "updatedAt": stamp(at),
			"source": map[string]any{"topic": "system-events", "messageId": id, "publishedAt": stamp(at)},
			// The order key the bare loop's condition compares: byte-ordered
			// (fixed-width time, then the message id).
			"_eventpipe": map[string]any{"order": at.Format("2006-01-02T15:04:05.000000000Z") + " " + id,
				"eventTime": stamp(at), "publishTime": stamp(at), "messageId": id},
		})
		marker, _ := json.Marshal(map[string]any{"messageId": id, "target": "ops_services/bench__" + service,
			"createdAt": stamp(at)})
		out[i] = Message{Body: body, DocID: "bench__" + service, MarkerID: "bench__h-" + id, Doc: doc, Marker: marker}
	}
	return out
}

// Run is one measured run: one contender, one concurrency.
type Run struct {
	// Contender is "bare" or the name given to a consumer binary.
	Contender   string
	Concurrency int
	// Messages were sent; Errors of them failed (an error or a status
	// other than 2xx).
	Messages, Errors int
	// Elapsed is from the first send to the last answer.
	Elapsed time.Duration
	// Latencies are every message's, from its send to its answer, sorted.
	Latencies []time.Duration
	// RSS is the consumer's resident memory after the run, PeakRSS its
	// peak over the process's life; CPU the process's CPU time (user and
	// system) during the run. Zero for the bare loop.
	RSS, PeakRSS int64
	CPU          time.Duration
	// ServerCPU is the PostgreSQL server's CPU time during the run (0 when
	// unknown: a server not on this machine).
	ServerCPU time.Duration
}

// PerSecond is the run's throughput: messages answered per second.
func (r Run) PerSecond() float64 { return float64(r.Messages) / r.Elapsed.Seconds() }

// Quantile is the latency below which a share q of the messages were
// answered (nearest rank).
func (r Run) Quantile(q float64) time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	i := int(q*float64(len(r.Latencies))+0.5) - 1
	return r.Latencies[min(max(i, 0), len(r.Latencies)-1)]
}

// Drive sends msgs from concurrency senders, each taking the next message
// not yet sent, and times every send; send reports a failed delivery.
func Drive(ctx context.Context, concurrency int, msgs []Message, send func(ctx context.Context, m *Message) error) Run {
	var next atomic.Int64
	lat := make([]time.Duration, len(msgs))
	var errs atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(msgs) || ctx.Err() != nil {
					return
				}
				t := time.Now()
				if err := send(ctx, &msgs[i]); err != nil {
					errs.Add(1)
				}
				lat[i] = time.Since(t)
			}
		}()
	}
	wg.Wait()
	r := Run{Concurrency: concurrency, Messages: len(msgs), Errors: int(errs.Load()), Elapsed: time.Since(start), Latencies: lat}
	slices.Sort(r.Latencies)
	return r
}
