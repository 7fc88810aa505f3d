package replay_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pubsubpb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/eventpipe/eventpipe/internal/localpubsub"
	"github.com/eventpipe/eventpipe/replay"
)

const project = "replay-test"

func name(kind, id string) string { return fmt.Sprintf("projects/%s/%s/%s", project, kind, id) }

// env is a pstest topology: a source topic with a consumer subscription that
// dead-letters after 5 attempts, its DLQ topic and DLQ subscription, and an
// observer subscription on the source topic that sees every (re)published message.
type env struct {
	fake *localpubsub.Fake
}

func newEnv(t *testing.T, reactors ...pstest.ServerReactorOption) *env {
	t.Helper()
	ctx := context.Background()
	fake, err := localpubsub.Start(ctx, project, reactors...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	e := &env{fake: fake}
	for _, tp := range []string{"orders", "orders-sub.dlq"} {
		if _, err := fake.Client.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: name("topics", tp)}); err != nil {
			t.Fatal(err)
		}
	}
	subs := []*pubsubpb.Subscription{
		{Name: name("subscriptions", "orders-sub"), Topic: name("topics", "orders"), AckDeadlineSeconds: 10,
			DeadLetterPolicy: &pubsubpb.DeadLetterPolicy{DeadLetterTopic: name("topics", "orders-sub.dlq"), MaxDeliveryAttempts: 5}},
		{Name: name("subscriptions", "orders-sub.dlq"), Topic: name("topics", "orders-sub.dlq"), AckDeadlineSeconds: 10},
		{Name: name("subscriptions", "observer"), Topic: name("topics", "orders"), AckDeadlineSeconds: 10},
	}
	for _, s := range subs {
		if _, err := fake.Client.SubscriptionAdminClient.CreateSubscription(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// deadLetter publishes messages and nacks them on the consumer subscription
// until pstest moves them to the DLQ, as Pub/Sub does after max attempts.
func (e *env) deadLetter(t *testing.T, msgs []*pubsubpb.PubsubMessage) []string {
	t.Helper()
	ctx := context.Background()
	resp, err := e.fake.Client.TopicAdminClient.Publish(ctx, &pubsubpb.PublishRequest{Topic: name("topics", "orders"), Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	sub := name("subscriptions", "orders-sub")
	// Nack until every message is in the DLQ: on a busy machine pstest may
	// not have redelivered one as often as its policy allows yet.
	deadline := time.Now().Add(30 * time.Second)
	for e.sweepDLQ(t, false) < len(msgs) {
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s of nacks the DLQ holds %d of the %d messages", e.sweepDLQ(t, false), len(msgs))
		}
		got, err := e.fake.Client.SubscriptionAdminClient.Pull(ctx, &pubsubpb.PullRequest{Subscription: sub, MaxMessages: 1000, ReturnImmediately: true})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, rm := range got.GetReceivedMessages() {
			ids = append(ids, rm.GetAckId())
		}
		if len(ids) > 0 {
			if err := e.fake.Client.SubscriptionAdminClient.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: sub, AckIds: ids}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// pstest (v2.8.0) never removes a dead-lettered message from the source
	// subscription, so its delivery loop republishes it to the DLQ every 10 ms
	// until the subscription is gone. Real Pub/Sub moves it once. Deleting the
	// consumer subscription, then acking the copies the loop made before it
	// was deleted, gives the real behaviour: each message once in the DLQ.
	if err := e.fake.Client.SubscriptionAdminClient.DeleteSubscription(ctx, &pubsubpb.DeleteSubscriptionRequest{Subscription: sub}); err != nil {
		t.Fatal(err)
	}
	if n := e.sweepDLQ(t, true); n != len(msgs) {
		t.Fatalf("the DLQ holds %d distinct messages, want %d", n, len(msgs))
	}
	e.drain(t, "observer") // the observer saw the originals; only replays matter from here on
	return resp.GetMessageIds()
}

// sweepDLQ pulls everything the DLQ holds and returns how many distinct
// messages (by data) it holds; with ackCopies it acks every copy of a data
// but one. What it keeps is released to be pulled again at once.
func (e *env) sweepDLQ(t *testing.T, ackCopies bool) int {
	t.Helper()
	ctx := context.Background()
	dlq := name("subscriptions", "orders-sub.dlq")
	kept := map[string]bool{}
	var keep, copies []string
	for {
		// A pulled message stays out for the subscription's ack deadline
		// (10 s), so repeated pulls return each message once.
		got, err := e.fake.Client.SubscriptionAdminClient.Pull(ctx, &pubsubpb.PullRequest{Subscription: dlq, MaxMessages: 1000, ReturnImmediately: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.GetReceivedMessages()) == 0 {
			break
		}
		for _, rm := range got.GetReceivedMessages() {
			data := string(rm.GetMessage().GetData())
			if kept[data] && ackCopies {
				copies = append(copies, rm.GetAckId())
				continue
			}
			kept[data] = true
			keep = append(keep, rm.GetAckId())
		}
	}
	if len(copies) > 0 {
		if err := e.fake.Client.SubscriptionAdminClient.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: dlq, AckIds: copies}); err != nil {
			t.Fatal(err)
		}
	}
	if len(keep) > 0 {
		if err := e.fake.Client.SubscriptionAdminClient.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: dlq, AckIds: keep}); err != nil {
			t.Fatal(err)
		}
	}
	return len(kept)
}

// drain pulls and acks everything on a subscription and returns it.
func (e *env) drain(t *testing.T, sub string) []*pubsubpb.ReceivedMessage {
	t.Helper()
	ctx := context.Background()
	var all []*pubsubpb.ReceivedMessage
	for {
		got, err := e.fake.Client.SubscriptionAdminClient.Pull(ctx, &pubsubpb.PullRequest{Subscription: name("subscriptions", sub), MaxMessages: 1000, ReturnImmediately: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.GetReceivedMessages()) == 0 {
			return all
		}
		var ids []string
		for _, rm := range got.GetReceivedMessages() {
			ids = append(ids, rm.GetAckId())
			all = append(all, rm)
		}
		if err := e.fake.Client.SubscriptionAdminClient.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: name("subscriptions", sub), AckIds: ids}); err != nil {
			t.Fatal(err)
		}
	}
}

func messages(n int, attrs func(i int) map[string]string) []*pubsubpb.PubsubMessage {
	out := make([]*pubsubpb.PubsubMessage, n)
	for i := range out {
		out[i] = &pubsubpb.PubsubMessage{Data: []byte(fmt.Sprintf(`{"eventId":"e%d"}`, i)), Attributes: attrs(i)}
	}
	return out
}

func opts() replay.Options {
	return replay.Options{
		Subscription: name("subscriptions", "orders-sub.dlq"),
		Topic:        name("topics", "orders"),
		EmptyPulls:   1,
		Now:          func() time.Time { return time.Date(2026, 11, 21, 6, 0, 0, 0, time.UTC) },
		Logger:       slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}
}

func dataOf(rms []*pubsubpb.ReceivedMessage) []string {
	var out []string
	for _, rm := range rms {
		out = append(out, string(rm.GetMessage().GetData()))
	}
	sort.Strings(out)
	return out
}

func TestReplayMovesEveryDeadLetterBackWithMetadata(t *testing.T) {
	e := newEnv(t)
	origIDs := e.deadLetter(t, messages(4, func(i int) map[string]string { return map[string]string{"tenant": fmt.Sprint("t", i)} }))

	res, err := replay.Run(context.Background(), e.fake.Client, opts())
	if err != nil {
		t.Fatal(err)
	}
	if res != (replay.Result{Pulled: 4, Replayed: 4}) {
		t.Fatalf("result = %+v, want 4 pulled and replayed", res)
	}
	got := e.drain(t, "observer")
	if len(got) != 4 {
		t.Fatalf("observer got %d replayed messages, want 4", len(got))
	}
	seen := map[string]bool{}
	for _, rm := range got {
		a := rm.GetMessage().GetAttributes()
		seen[a[replay.AttrOriginalMessageID]] = true
		if !strings.HasPrefix(a["tenant"], "t") {
			t.Errorf("original attribute lost: %v", a)
		}
		if a[replay.AttrDeadLetterSub] != name("subscriptions", "orders-sub.dlq") || a[replay.AttrReplayedAt] != "2026-11-21T06:00:00Z" {
			t.Errorf("replay metadata wrong: %v", a)
		}
		if a[replay.AttrOriginalPublishTime] == "" {
			t.Errorf("original publish time missing: %v", a)
		}
	}
	for _, id := range origIDs {
		if !seen[id] {
			t.Errorf("original message %s was not replayed (seen %v)", id, seen)
		}
	}
	if left := e.drain(t, "orders-sub.dlq"); len(left) != 0 {
		t.Errorf("DLQ still holds %d messages after replay", len(left))
	}
}

func TestReplaySelectsAndLeavesTheRest(t *testing.T) {
	tests := []struct {
		name         string
		mutate       func(*replay.Options)
		wantResult   replay.Result
		wantReplayed int
		wantLeft     int
	}{
		{"filter by attribute", func(o *replay.Options) { o.Match = map[string]string{"tenant": "blue"} },
			replay.Result{Pulled: 6, Replayed: 2, Skipped: 4}, 2, 4},
		{"max", func(o *replay.Options) { o.Max = 3 }, replay.Result{Pulled: 3, Replayed: 3}, 3, 3},
		{"dry run", func(o *replay.Options) { o.DryRun = true }, replay.Result{Pulled: 6, Replayed: 6}, 0, 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.deadLetter(t, messages(6, func(i int) map[string]string {
				if i%3 == 0 {
					return map[string]string{"tenant": "blue"}
				}
				return map[string]string{"tenant": "green"}
			}))
			o := opts()
			tc.mutate(&o)
			res, err := replay.Run(context.Background(), e.fake.Client, o)
			if err != nil {
				t.Fatal(err)
			}
			if res != tc.wantResult {
				t.Errorf("result = %+v, want %+v", res, tc.wantResult)
			}
			if got := e.drain(t, "observer"); len(got) != tc.wantReplayed {
				t.Errorf("published %d messages to the source topic, want %d", len(got), tc.wantReplayed)
			}
			// Held messages were released at the end of the run: they are in the DLQ right away.
			if left := e.drain(t, "orders-sub.dlq"); len(left) != tc.wantLeft {
				t.Errorf("DLQ holds %d messages, want %d", len(left), tc.wantLeft)
			}
		})
	}
}

// failPublish is a pstest reactor that, once on, fails the publish of one
// payload, standing in for a crash or outage between pulling and
// republishing (PermissionDenied: an error the client does not retry).
type failPublish struct {
	data string
	on   atomic.Bool
}

func (f *failPublish) React(req any) (bool, any, error) {
	if r, ok := req.(*pubsubpb.PublishRequest); ok && f.on.Load() && string(r.GetMessages()[0].GetData()) == f.data {
		return true, nil, status.Error(codes.PermissionDenied, "injected")
	}
	return false, nil, nil
}

func TestReplayAcksOnlyAfterRepublish(t *testing.T) {
	fail := &failPublish{data: `{"eventId":"e1"}`}
	e := newEnv(t, pstest.ServerReactorOption{FuncName: "Publish", Reactor: fail})
	e.deadLetter(t, messages(3, func(int) map[string]string { return nil }))
	fail.on.Store(true)
	res, err := replay.Run(context.Background(), e.fake.Client, opts())
	if err != nil {
		t.Fatal(err)
	}
	if res != (replay.Result{Pulled: 3, Replayed: 2, Failed: 1}) {
		t.Fatalf("result = %+v", res)
	}
	if got := dataOf(e.drain(t, "observer")); strings.Join(got, ",") != `{"eventId":"e0"},{"eventId":"e2"}` {
		t.Errorf("republished %v", got)
	}
	left := e.drain(t, "orders-sub.dlq")
	if got := dataOf(left); len(got) != 1 || got[0] != `{"eventId":"e1"}` {
		t.Errorf("the message whose republish failed must stay in the DLQ; DLQ holds %v", got)
	}
}

func TestValidateNamesEveryBadOption(t *testing.T) {
	err := replay.Options{Subscription: "orders-sub.dlq", Topic: "projects/p/subscriptions/x", Max: -1, Rate: -2, BatchSize: 5000, HoldDeadline: time.Second}.Validate()
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{`subscription "orders-sub.dlq"`, `topic "projects/p/subscriptions/x"`, "max -1", "rate -2", "batch size 5000", "hold deadline 1s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if _, err := replay.Run(context.Background(), nil, replay.Options{}); err == nil {
		t.Error("Run with empty options must fail before calling the API")
	}
}
