package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	pubsubpb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/devpipe"
	"github.com/eventpipe/eventpipe/internal/localpubsub"
)

const itProject = "it"

// pubsubFixture is pstest holding one pipeline: a topic and one
// subscription with its DLQ, declared the way `eventpipe dev` declares a
// stack's topology.
type pubsubFixture struct {
	fake  *localpubsub.Fake
	topo  devpipe.Topology
	sub   devpipe.SubscriptionTopology
	tally *devpipe.Tally
}

func startPubSub(t *testing.T, push bool, ackDeadline time.Duration) *pubsubFixture {
	t.Helper()
	ctx := context.Background()
	fake, err := localpubsub.Start(ctx, itProject)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	sub := devpipe.SubscriptionTopology{Key: "main", Name: "projects/it/subscriptions/events-main", Push: push, AckDeadline: ackDeadline,
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, MaxAttempts: 5,
		DLQTopic: "projects/it/topics/events-main.dlq", DLQSubscription: "projects/it/subscriptions/events-main.dlq-sub"}
	topo := devpipe.Topology{Project: itProject, Pipelines: []devpipe.PipelineTopology{{Name: "events", Topic: "projects/it/topics/events",
		Subscriptions: []devpipe.SubscriptionTopology{sub}}}}
	if err := devpipe.Declare(ctx, fake.Client, topo); err != nil {
		t.Fatal(err)
	}
	return &pubsubFixture{fake: fake, topo: topo, sub: sub, tally: devpipe.NewTally(topo)}
}

// publish publishes messages in batches of up to 1,000 (the API's limit)
// and records their ids in the tally.
func (f *pubsubFixture) publish(t *testing.T, data ...[]byte) []string {
	t.Helper()
	var ids []string
	for len(data) > 0 {
		n := min(1000, len(data))
		msgs := make([]*pubsubpb.PubsubMessage, n)
		for i := range msgs {
			msgs[i] = &pubsubpb.PubsubMessage{Data: data[i]}
		}
		resp, err := f.fake.Client.TopicAdminClient.Publish(context.Background(), &pubsubpb.PublishRequest{Topic: "projects/it/topics/events", Messages: msgs})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range resp.GetMessageIds() {
			f.tally.Published("projects/it/topics/events", id)
		}
		ids = append(ids, resp.GetMessageIds()...)
		data = data[n:]
	}
	return ids
}

// bridge delivers the push subscription to the process as Pub/Sub would.
// It returns a function that stops the bridge (call it before stopping the
// process, so that no push is in flight when the consumer shuts down).
func (f *pubsubFixture) bridge(t *testing.T, p *proc, concurrency int) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b := &devpipe.Bridge{Client: f.fake.Client, Sub: f.sub, Endpoint: p.URL + "/pubsub/push",
		Scale: 1, Concurrency: concurrency, Tally: f.tally}
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("bridge: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// settled waits until every published message reached a final state.
func (f *pubsubFixture) settled(t *testing.T, within time.Duration) devpipe.Row {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		row := f.tally.Rows(f.topo)[0]
		if row.Settled() {
			return row
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every message settled within %s: %+v", within, row)
		}
		time.Sleep(20 * time.Millisecond) // polls the tally the bridge fills
	}
}

// TestPoisonLandsInDLQAfterMaxAttempts: a poison message pushed through
// Pub/Sub's delivery rules is retried with backoff and dead-lettered after
// the subscription's 5 attempts, once; the good message beside it applies.
func TestPoisonLandsInDLQAfterMaxAttempts(t *testing.T) {
	bin := buildConsumer(t)
	f := startPubSub(t, true, 10*time.Second)
	p := startProcTee(t, bin, map[string]string{"EVENTPIPE_STORE": "bbolt://" + filepath.Join(t.TempDir(), "e.db"), "EVENTPIPE_ENV": itEnv},
		f.tally.Writer(nil))
	stopBridge := f.bridge(t, p, 8)
	ids := f.publish(t, []byte("not json"), systemEvent("evt-good", "svc-good", "healthy", 1, t0))
	row := f.settled(t, 30*time.Second)
	if row.DeadLettered != 1 || row.Applied != 1 || devpipe.Check([]devpipe.Row{row}) != nil {
		t.Fatalf("row %+v, want 1 dead-lettered and 1 applied", row)
	}
	resp, err := f.fake.Client.SubscriptionAdminClient.Pull(context.Background(), &pubsubpb.PullRequest{Subscription: f.sub.DLQSubscription, MaxMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.GetReceivedMessages()); n != 1 {
		t.Fatalf("DLQ holds %d messages, want 1", n)
	}
	dl := resp.GetReceivedMessages()[0].GetMessage()
	if string(dl.GetData()) != "not json" || dl.GetAttributes()[devpipe.AttrDLQDeliveryCount] != "5" {
		t.Errorf("DLQ message %q %v", dl.GetData(), dl.GetAttributes())
	}
	stopBridge()
	p.Stop(t)
	poison := linesWith(p.Lines(), "messageId", ids[0], "outcome", "poison")
	if len(poison) != 5 {
		t.Fatalf("%d poison deliveries logged, want 5", len(poison))
	}
	for i, l := range poison {
		if fmt.Sprint(l["deliveryAttempt"]) != fmt.Sprint(i+1) || fmt.Sprint(l["http_status"]) != "400" || l["ack_action"] != "nack" {
			t.Errorf("poison delivery %d: %v", i+1, l)
		}
	}
}

// TestPullConsumerKilledMidMessageConverges drives the consumer over
// streaming pull: the process is killed right after its write, before the
// ack; the restarted process gets the redelivery and finds it done.
func TestPullConsumerKilledMidMessageConverges(t *testing.T) {
	bin := buildConsumer(t)
	f := startPubSub(t, false, 10*time.Second)
	url := "bbolt://" + filepath.Join(t.TempDir(), "e.db")
	env := map[string]string{"EVENTPIPE_STORE": url, "EVENTPIPE_ENV": itEnv, "PUBSUB_EMULATOR_HOST": f.fake.Server.Addr,
		"EVENTPIPE_PULL_SUBSCRIPTIONS": f.sub.Name}
	p := startProc(t, bin, with(env, engine.FailpointEnv, string(engine.ProjectionAfterWrite)))
	ids := f.publish(t, systemEvent("evt-pull", "svc-pull", "healthy", 1, t0))
	p.WaitKilled(t)
	// The dead process's stream held the message with a 60 s deadline;
	// Pub/Sub would redeliver when it runs out. A nack (pstest's ack ids are
	// "<message id>:<delivery>") stands in for that wait.
	if err := f.fake.Client.SubscriptionAdminClient.ModifyAckDeadline(context.Background(), &pubsubpb.ModifyAckDeadlineRequest{
		Subscription: f.sub.Name, AckIds: []string{ids[0] + ":1"}}); err != nil {
		t.Fatal(err)
	}
	q := startProcTee(t, bin, env, f.tally.Writer(nil))
	row := f.settled(t, 30*time.Second)
	if row.Duplicate != 1 || row.Applied != 0 {
		t.Errorf("after the restart: %+v, want the redelivery found done (duplicate)", row)
	}
	q.Stop(t)
	if l := linesWith(q.Lines(), "messageId", ids[0], "ack_action", "ack"); len(l) != 1 || fmt.Sprint(l[0]["deliveryAttempt"]) != "2" {
		t.Errorf("ack line of the redelivery: %v, want one with deliveryAttempt 2", l)
	}
	k := serviceKey(t, "svc-pull")
	if doc := readDocs(t, url, k)[k]; doc.Fields["status"] != "healthy" {
		t.Errorf("doc %v", doc.Fields)
	}
}

// TestBurstConverges publishes 10,000 messages (7,000 events and 3,000
// republished duplicates, shuffled) through pstest and the push bridge to the
// consumer process, checks that nothing is lost and every aggregate holds its
// newest event, and prints the throughput (a figure, never an assertion).
func TestBurstConverges(t *testing.T) {
	const total, unique, services = 10000, 7000, 500
	bin := buildConsumer(t)
	f := startPubSub(t, true, 60*time.Second)
	url := "bbolt://" + filepath.Join(t.TempDir(), "burst.db")
	p := startProcTee(t, bin, map[string]string{"EVENTPIPE_STORE": url, "EVENTPIPE_ENV": itEnv}, f.tally.Writer(nil))
	rng := rand.New(rand.NewPCG(10, 30))
	events := make([][]byte, 0, total)
	newest := map[string]int{}
	for i := 0; i < unique; i++ {
		svc := fmt.Sprintf("svc-%03d", i%services)
		seq := i/services + 1
		events = append(events, systemEvent(fmt.Sprintf("burst-%d", i), svc, fmt.Sprintf("s%d", seq), seq, t0.Add(time.Duration(seq)*time.Second)))
		newest[svc] = max(newest[svc], seq)
	}
	for len(events) < total { // 30% duplicates: the same event published again
		events = append(events, events[rng.IntN(unique)])
	}
	rng.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
	stopBridge := f.bridge(t, p, 64)
	started := time.Now()
	f.publish(t, events...)
	row := f.settled(t, 5*time.Minute)
	elapsed := time.Since(started)
	if err := devpipe.Check([]devpipe.Row{row}); err != nil {
		t.Fatal(err)
	}
	if row.Published != total || row.DeadLettered != 0 || row.Applied+row.Stale+row.Duplicate != total || row.Applied > unique || row.Duplicate < 1 || row.Stale < 1 {
		t.Errorf("burst outcome %+v", row)
	}
	logf(t, "burst: %d messages (%d applied, %d duplicate, %d stale, %d retried) in %s: %.0f messages per second",
		total, row.Applied, row.Duplicate, row.Stale, row.Retried, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds())
	stopBridge()
	p.Stop(t)
	var ks []store.Key
	for svc := range newest {
		ks = append(ks, serviceKey(t, svc))
	}
	docs := readDocs(t, url, ks...)
	for svc, seq := range newest {
		if got := docs[serviceKey(t, svc)].Fields["status"]; got != fmt.Sprintf("s%d", seq) {
			t.Errorf("%s holds %v, want its newest event s%d", svc, got, seq)
		}
	}
}
