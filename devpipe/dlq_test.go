package devpipe

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	pubsubpb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/eventpipe/eventpipe/internal/localpubsub"
	"github.com/eventpipe/eventpipe/replay"
)

// clock is a settable clock for the DLQ.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// dlqTopology is one pipeline with a push subscription and its DLQ.
func dlqTopology(retention time.Duration) Topology {
	return Topology{Project: "p", Pipelines: []PipelineTopology{{Name: "orders", Topic: "projects/p/topics/orders",
		Subscriptions: []SubscriptionTopology{{Key: "main", Name: "projects/p/subscriptions/orders-main", Push: true,
			AckDeadline: 10 * time.Second, MinBackoff: time.Second, MaxBackoff: 2 * time.Second, MaxAttempts: 5,
			DLQTopic: "projects/p/topics/orders-main.dlq", DLQSubscription: "projects/p/subscriptions/orders-main.dlq-sub",
			DLQRetention: retention}}}}}
}

// startDLQ runs pstest with t declared and the DLQ's reactors, on clock c.
func startDLQ(t *testing.T, topo Topology, c *clock) (*localpubsub.Fake, *DLQ) {
	t.Helper()
	ctx := context.Background()
	d := NewDLQ(topo, c.Now)
	fake, err := localpubsub.Start(ctx, topo.Project, d.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	if err := Declare(ctx, fake.Client, topo); err != nil {
		t.Fatal(err)
	}
	return fake, d
}

func publishTo(t *testing.T, fake *localpubsub.Fake, topic string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		resp, err := fake.Client.TopicAdminClient.Publish(context.Background(), &pubsubpb.PublishRequest{Topic: topic,
			Messages: []*pubsubpb.PubsubMessage{{Data: fmt.Appendf(nil, "letter %d", i), Attributes: map[string]string{"n": fmt.Sprint(i % 3)}}}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, resp.GetMessageIds()...)
	}
	return ids
}

func pullIDs(t *testing.T, fake *localpubsub.Fake, sub string) []*pubsubpb.ReceivedMessage {
	t.Helper()
	resp, err := fake.Client.SubscriptionAdminClient.Pull(context.Background(), &pubsubpb.PullRequest{Subscription: sub, MaxMessages: 100, ReturnImmediately: true})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetReceivedMessages()
}

// TestPstestForgetsMessagesAfterTenMinutes pins the pstest v2.8.0 behaviour the DLQ
// exists for: a message no one has pulled is gone ten minutes after it was published,
// whatever the subscription's retention (7 days here). When a pstest release keeps
// messages for their retention, this test fails, and the DLQ may go.
func TestPstestForgetsMessagesAfterTenMinutes(t *testing.T) {
	ctx := context.Background()
	fake, err := localpubsub.Start(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	c := &clock{now: time.Now()}
	fake.Server.SetTimeNowFunc(c.Now)
	topo := dlqTopology(7 * 24 * time.Hour)
	topo.Pipelines[0].Subscriptions[0].Retention = 7 * 24 * time.Hour
	if err := Declare(ctx, fake.Client, topo); err != nil {
		t.Fatal(err)
	}
	publishTo(t, fake, "projects/p/topics/orders", 1)
	c.Add(11 * time.Minute)
	if got := pullIDs(t, fake, "projects/p/subscriptions/orders-main"); len(got) != 0 {
		t.Errorf("pstest kept a message 11 minutes after it was published (%d pulled): the DLQ's reason to exist is gone", len(got))
	}
}

// TestDLQKeepsDeadLettersForTheirRetention: a dead letter outlives pstest's ten
// minutes, stays through pulls, releases and stale acks, and goes only when acked with
// its latest ack id or once its retention has passed.
func TestDLQKeepsDeadLettersForTheirRetention(t *testing.T) {
	c := &clock{now: time.Now()}
	topo := dlqTopology(7 * 24 * time.Hour)
	sub := topo.Pipelines[0].Subscriptions[0]
	fake, d := startDLQ(t, topo, c)
	ids := publishTo(t, fake, sub.DLQTopic, 2)
	c.Add(11 * time.Minute)
	first := pullIDs(t, fake, sub.DLQSubscription)
	if len(first) != 2 || first[0].GetMessage().GetMessageId() != ids[0] {
		t.Fatalf("after 11 minutes pulled %v, want both dead letters %v", first, ids)
	}
	if again := pullIDs(t, fake, sub.DLQSubscription); len(again) != 0 {
		t.Fatalf("pulled %d messages out for delivery", len(again))
	}
	c.Add(dlqAckDeadline + time.Second) // the ack deadline passes: delivered again
	second := pullIDs(t, fake, sub.DLQSubscription)
	if len(second) != 2 {
		t.Fatalf("after the ack deadline pulled %d, want 2", len(second))
	}
	ctx := context.Background()
	// An ack with the first delivery's ack id is stale: nothing goes.
	if err := fake.Client.SubscriptionAdminClient.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: sub.DLQSubscription, AckIds: []string{first[0].GetAckId()}}); err != nil {
		t.Fatal(err)
	}
	if held := d.Held()[sub.DLQSubscription]; held != 2 {
		t.Fatalf("a stale ack removed a dead letter: %d held", held)
	}
	if err := fake.Client.SubscriptionAdminClient.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: sub.DLQSubscription, AckIds: []string{second[0].GetAckId()}}); err != nil {
		t.Fatal(err)
	}
	if err := fake.Client.SubscriptionAdminClient.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: sub.DLQSubscription, AckIds: []string{second[1].GetAckId()}}); err != nil {
		t.Fatal(err)
	}
	if left := pullIDs(t, fake, sub.DLQSubscription); len(left) != 1 || left[0].GetMessage().GetMessageId() != ids[1] {
		t.Fatalf("after acking one and releasing the other pulled %v, want %s", left, ids[1])
	}
	c.Add(7*24*time.Hour + dlqAckDeadline)
	if held := d.Held()[sub.DLQSubscription]; held != 0 {
		t.Errorf("%d dead letters held past the 7-day retention", held)
	}
	if _, err := fake.Client.SubscriptionAdminClient.Seek(ctx, &pubsubpb.SeekRequest{Subscription: sub.DLQSubscription}); err == nil {
		t.Errorf("seek on a DLQ subscription succeeded; the DLQ does not seek and must say so")
	}
}

// TestDLQInvariants runs random sequences of publishes, pulls, acks (current and
// stale), releases, extensions and clock steps against the DLQ and checks after
// each step, for any sequence: (1) a message leaves only when acked with the ack id
// of its latest delivery or when its retention has passed while it was not out for
// delivery; (2) a message out for delivery is not delivered again before its
// deadline; (3) pulls return messages oldest first.
func TestDLQInvariants(t *testing.T) {
	const retention = time.Hour
	for seed := range 200 {
		rng := rand.New(rand.NewPCG(uint64(seed), 37))
		c := &clock{now: time.Unix(1_700_000_000, 0)}
		topo := dlqTopology(retention)
		sub := topo.Pipelines[0].Subscriptions[0]
		d := NewDLQ(topo, c.Now)
		type state struct {
			published time.Time
			ackID     string // latest delivery's
			outUntil  time.Time
		}
		model := map[string]*state{}
		var order []string
		var oldAcks []string
		for step := range 60 {
			switch op := rng.IntN(7); op {
			case 0: // publish
				_, resp, _ := d.React(&pubsubpb.PublishRequest{Topic: sub.DLQTopic, Messages: []*pubsubpb.PubsubMessage{{Data: []byte{byte(step)}}}})
				id := resp.(*pubsubpb.PublishResponse).GetMessageIds()[0]
				model[id] = &state{published: c.Now()}
				order = append(order, id)
			case 1: // pull
				_, resp, err := d.React(&pubsubpb.PullRequest{Subscription: sub.DLQSubscription, MaxMessages: int32(rng.IntN(4))})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, rm := range resp.(*pubsubpb.PullResponse).GetReceivedMessages() {
					id := rm.GetMessage().GetMessageId()
					s := model[id]
					if s == nil {
						t.Fatalf("seed %d step %d: pulled %s, which left the DLQ", seed, step, id)
					}
					if s.ackID != "" && c.Now().Before(s.outUntil) {
						t.Fatalf("seed %d step %d: %s delivered again while out for delivery", seed, step, id)
					}
					if s.ackID != "" {
						oldAcks = append(oldAcks, s.ackID)
					}
					s.ackID, s.outUntil = rm.GetAckId(), c.Now().Add(dlqAckDeadline)
					got = append(got, id)
				}
				if !slices.IsSortedFunc(got, func(a, b string) int { return slices.Index(order, a) - slices.Index(order, b) }) {
					t.Fatalf("seed %d step %d: pulled %v, not oldest first", seed, step, got)
				}
			case 2: // ack the latest delivery of a random message
				for id, s := range model {
					if s.ackID != "" {
						d.React(&pubsubpb.AcknowledgeRequest{Subscription: sub.DLQSubscription, AckIds: []string{s.ackID}})
						delete(model, id)
						break
					}
				}
			case 3: // ack with a stale ack id: nothing leaves
				if len(oldAcks) > 0 {
					d.React(&pubsubpb.AcknowledgeRequest{Subscription: sub.DLQSubscription, AckIds: []string{oldAcks[rng.IntN(len(oldAcks))]}})
				}
			case 4: // release or extend a delivery
				for _, s := range model {
					if s.ackID != "" && c.Now().Before(s.outUntil) {
						secs := int32(rng.IntN(2) * 30)
						d.React(&pubsubpb.ModifyAckDeadlineRequest{Subscription: sub.DLQSubscription, AckIds: []string{s.ackID}, AckDeadlineSeconds: secs})
						if secs == 0 {
							s.ackID = ""
						} else {
							s.outUntil = c.Now().Add(time.Duration(secs) * time.Second)
						}
						break
					}
				}
			default: // time passes
				c.Add(time.Duration(rng.IntN(40)) * time.Minute / 4)
			}
			// Expected holdings: retention drops only messages not out for delivery.
			for id, s := range model {
				out := s.ackID != "" && c.Now().Before(s.outUntil)
				if !out && c.Now().Sub(s.published) > retention {
					delete(model, id)
				}
			}
			if held := d.Held()[sub.DLQSubscription]; held != len(model) {
				t.Fatalf("seed %d step %d: DLQ holds %d, want %d", seed, step, held, len(model))
			}
		}
	}
}

// TestDryRunNeverConsumes: for any DLQ contents, --match, --max and batch size, and
// with another reader pulling the same DLQ at the same time, a dry run (1) ends,
// (2) leaves every dead letter in the DLQ, and (3) reports every matching letter it
// could see, up to --max; a real replay afterwards replays what the dry run counted.
func TestDryRunNeverConsumes(t *testing.T) {
	ctx := context.Background()
	for seed := range 12 {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		c := &clock{now: time.Now()}
		topo := dlqTopology(7 * 24 * time.Hour)
		sub := topo.Pipelines[0].Subscriptions[0]
		fake, d := startDLQ(t, topo, c)
		n := rng.IntN(25)
		publishTo(t, fake, sub.DLQTopic, n)
		c.Add(time.Duration(rng.IntN(30)) * time.Minute) // past pstest's ten minutes, often
		opts := replay.Options{Subscription: sub.DLQSubscription, Topic: "projects/p/topics/orders", DryRun: true,
			BatchSize: 1 + rng.IntN(10), Max: rng.IntN(n + 2), Logger: slog.New(slog.DiscardHandler)}
		matching := n
		if rng.IntN(2) == 0 {
			opts.Match = map[string]string{"n": "1"}
			matching = n / 3
			if n%3 > 1 {
				matching++
			}
		}
		// Another reader pulls and releases the DLQ while the dry run runs, as
		// a second replay or a gcloud pull would.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := fake.Client.SubscriptionAdminClient.Pull(ctx, &pubsubpb.PullRequest{Subscription: sub.DLQSubscription, MaxMessages: 1, ReturnImmediately: true})
				if err != nil {
					return
				}
				for _, rm := range resp.GetReceivedMessages() {
					_ = fake.Client.SubscriptionAdminClient.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: sub.DLQSubscription, AckIds: []string{rm.GetAckId()}})
				}
			}
		})
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		res, err := replay.Run(rctx, fake.Client, opts)
		cancel()
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatalf("seed %d: dry run: %v", seed, err)
		}
		if held := d.Held()[sub.DLQSubscription]; held != n {
			t.Fatalf("seed %d: after a dry run the DLQ holds %d of its %d dead letters", seed, held, n)
		}
		want := matching
		if opts.Max > 0 {
			want = min(want, opts.Max)
		}
		// The other reader may hold a letter at the moment the dry run looks: it
		// never reports more than there are, and at most the letters held away.
		if res.Replayed > want || res.Replayed < want-1 {
			t.Errorf("seed %d: dry run of %d letters (%d matching, max %d) would replay %d, want %d", seed, n, matching, opts.Max, res.Replayed, want)
		}
		opts.DryRun = false
		res, err = replay.Run(ctx, fake.Client, opts)
		if err != nil {
			t.Fatalf("seed %d: replay: %v", seed, err)
		}
		if res.Replayed != want || d.Held()[sub.DLQSubscription] != n-want {
			t.Errorf("seed %d: replay moved %d, DLQ holds %d; want %d moved, %d held", seed, res.Replayed, d.Held()[sub.DLQSubscription], want, n-want)
		}
	}
}
