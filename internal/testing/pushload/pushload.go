// Package pushload measures the consumer end to end on PostgreSQL: Pub/Sub
// pushes sent over loopback HTTP by a number of concurrent senders to a
// consumer binary running as its own process, against the bare loop
// (Bare): the fastest correct apply a hand-written pgx program can make of
// the same messages, with no HTTP, decoding or logging; and against the bare
// HTTP endpoint (BareHTTP): that apply behind the smallest net/http push
// endpoint, its own process as the consumer is, which shows what HTTP
// itself costs. Command pushload runs them, and the previous release's
// binary, in interleaved rounds on one syncing PostgreSQL and prints the
// ratios (scripts/consumer-bench.sh runs it; docs/benchmarks.md quotes it).
package pushload

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Subscription is the subscription the generated pushes name.
const Subscription = "projects/bench/subscriptions/system-events"

// Environment is the consumers' EVENTPIPE_ENV, the prefix of the
// documents' ids.
const Environment = "bench"

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
		e := event{Service: service, Status: "healthy", Version: "1.0", Region: "eu", ProducedAt: at}
		payload, err := json.Marshal(e)
		if err != nil {
			panic(err) // strings and a time always encode
		}
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
		docID, markerID, doc, marker := documents(e, id, at)
		out[i] = Message{Body: body, DocID: docID, MarkerID: markerID, Doc: doc, Marker: marker}
	}
	return out
}

// stamp is a time as the consumer stores one.
type stamp struct {
	Time string `json:"$eventpipe_time"`
}

func stampOf(t time.Time) stamp { return stamp{t.UTC().Format(time.RFC3339Nano)} }

// document is what the bare loop writes for a system event: the route's
// fields and the ordering metadata, the shape the consumer writes.
type document struct {
	ServiceID       string `json:"serviceId"`
	Env             string `json:"env"`
	Status          string `json:"status"`
	Version         string `json:"version"`
	Region          string `json:"region"`
	LastHeartbeatAt stamp  `json:"lastHeartbeatAt"`
	UpdatedAt       stamp  `json:"updatedAt"`
	Source          struct {
		Topic       string `json:"topic"`
		MessageID   string `json:"messageId"`
		PublishedAt stamp  `json:"publishedAt"`
	} `json:"source"`
	Meta struct {
		// Order is the order key the bare loop's condition compares:
		// byte-ordered (fixed-width event time, then the message id).
		Order       string `json:"order"`
		EventTime   stamp  `json:"eventTime"`
		PublishTime stamp  `json:"publishTime"`
		MessageID   string `json:"messageId"`
	} `json:"_eventpipe"`
}

// marker is the bare loop's dedupe marker of a message.
type marker struct {
	MessageID string `json:"messageId"`
	Target    string `json:"target"`
	CreatedAt stamp  `json:"createdAt"`
}

// event is a system event's payload (the fields the bare loop keeps).
type event struct {
	Service    string    `json:"service"`
	Status     string    `json:"status"`
	Version    string    `json:"version"`
	Region     string    `json:"region"`
	ProducedAt time.Time `json:"producedAt"`
}

// documents are the ids and the JSON the bare loop and the bare HTTP
// endpoint write for message id of service's event e, produced at and
// published at publish: the one home of the documents' shape.
func documents(e event, id string, publish time.Time) (docID, markerID string, doc, mark []byte) {
	d := document{ServiceID: e.Service, Env: Environment, Status: e.Status, Version: e.Version, Region: e.Region,
		LastHeartbeatAt: stampOf(e.ProducedAt), UpdatedAt: stampOf(publish)}
	d.Source.Topic, d.Source.MessageID, d.Source.PublishedAt = "system-events", id, stampOf(publish)
	d.Meta.Order = e.ProducedAt.UTC().Format("2006-01-02T15:04:05.000000000Z") + " " + id
	d.Meta.EventTime, d.Meta.PublishTime, d.Meta.MessageID = stampOf(e.ProducedAt), stampOf(publish), id
	docID = Environment + "__" + e.Service
	doc, err1 := json.Marshal(d)
	mark, err2 := json.Marshal(marker{MessageID: id, Target: "ops_services/" + docID, CreatedAt: stampOf(publish)})
	if err := errors.Join(err1, err2); err != nil {
		panic(err) // structs of strings always encode
	}
	return docID, Environment + "__h-" + id, doc, mark
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
