package pull

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

// TestPullGeneratedTrafficSettles pulls generated traffic while the store
// fails a random share of transactions: valid events for three services
// (some published twice, as a producer's retry), payloads of every
// malformed kind, and odd attributes. For every history: each line has one
// of the five outcomes, and acks exactly what the rules ack (applied,
// duplicate, stale and poison without a DLQ) and nacks the rest; every
// message settles with exactly one ack; a poison message is acked only
// with its record; no event is applied twice; each service's document is
// its newest event's. Five histories from fixed seeds.
func TestPullGeneratedTrafficSettles(t *testing.T) {
	malformed := []string{`{"hello":"world"}`, `[]`, `"x"`, `null`, ``, `{"a":1}{"b":2}`, "{\"service\":\"\xff\",\"status\":\"ok\"}",
		`{"service":"x","status":"ok","status":"down"}`, `{"service":{"a":1},"status":"ok"}`, `{"service":"x","status":"ok","sequence":1.5}`,
		`{"service":"x","status":"ok","producedAt":"yesterday"}`, `{"eventType":"ingest_heartbeat","status":"ok"}`}
	base := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	for seed := range uint64(5) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 5))
			f := newFake(t)
			f.topic(t, "events")
			f.sub(t, &pb.Subscription{Name: subName("s"), Topic: topicName("events")})
			var mu sync.Mutex
			fail := rand.New(rand.NewPCG(seed, 6))
			fs := &ct.FailingStore{Store: memstore.New(), Hook: func() error {
				mu.Lock()
				defer mu.Unlock()
				if fail.IntN(4) == 0 {
					return errUnavailable
				}
				return nil
			}}
			proc, _, log := ct.NewProcessor(t, ct.Options{Store: fs})
			stop := run(t, Config{Client: f.client, Subscriptions: []string{subName("s")},
				Settings: pubsub.ReceiveSettings{MaxOutstandingMessages: 8, NumGoroutines: 1}, Processor: proc})

			newest := map[string]string{}
			var ids []string
			for svc := range 3 {
				name := fmt.Sprintf("svc-%d", svc)
				for i := range 1 + rng.IntN(5) {
					data := fmt.Sprintf(`{"service":%q,"status":"s%d","producedAt":%q,"eventId":"%s-%d"}`, name, i,
						base.Add(time.Duration(i)*time.Second).Format(time.RFC3339), name, i)
					newest[name] = fmt.Sprintf("s%d", i)
					for range 1 + rng.IntN(2) {
						ids = append(ids, f.publishWith(t, "events", data, map[string]string{"origin": "gen"}))
					}
				}
			}
			for _, data := range malformed {
				if rng.IntN(3) > 0 {
					ids = append(ids, f.publishWith(t, "events", data, map[string]string{"": "empty name", "k": string(rune(0x1F600))}))
				}
			}
			waitFor(t, "every message acked", func() bool {
				lines := log.Lines(t)
				for _, id := range ids {
					if len(ct.With(ct.With(lines, "messageId", id), "ack_action", "ack")) == 0 {
						return false
					}
				}
				return true
			})
			if err := stop(); err != nil {
				t.Fatalf("Run: %v", err)
			}
			lines := ct.With(log.Lines(t), "subscription", subName("s"))
			applied := map[string]int{}
			for _, l := range lines {
				if _, ok := l["outcome"]; !ok {
					continue
				}
				want := "ack"
				switch l["outcome"] {
				case "applied":
					applied[fmt.Sprint(l["idempotency_doc"])]++
				case "duplicate", "stale_ignored":
				case "poison":
					if _, ok := ct.Get(t, fs.Store, keyOf(l["idempotency_doc"])); !ok {
						t.Fatalf("poison acked without its record: %v", l)
					}
				case "retry":
					want = "nack"
				default:
					t.Fatalf("outcome of %v", l)
				}
				if l["ack_action"] != want {
					t.Fatalf("%v answered %v, want %s", l["outcome"], l["ack_action"], want)
				}
			}
			for _, id := range ids {
				if n := len(ct.With(ct.With(lines, "messageId", id), "ack_action", "ack")); n != 1 {
					t.Fatalf("message %s acked %d times", id, n)
				}
			}
			for doc, n := range applied {
				if n > 1 {
					t.Fatalf("%s applied %d times", doc, n)
				}
			}
			for svc, status := range newest {
				doc, _ := ct.Get(t, fs.Store, store.Key{Collection: "ops_services", ID: "test__" + svc})
				if doc.Fields["status"] != status {
					t.Fatalf("%s is %v, want %s", svc, doc.Fields["status"], status)
				}
			}
		})
	}
}

// publishWith publishes data with attributes and returns its message id.
func (f *fake) publishWith(t *testing.T, topic, data string, attrs map[string]string) string {
	t.Helper()
	id, err := f.client.Publisher(topicName(topic)).Publish(t.Context(), &pubsub.Message{Data: []byte(data), Attributes: attrs}).Get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// keyOf parses a log line's collection/id path.
func keyOf(path any) store.Key {
	coll, id, _ := strings.Cut(fmt.Sprint(path), "/")
	return store.Key{Collection: coll, ID: id}
}
