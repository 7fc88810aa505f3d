package devpipe

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	pubsubpb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/internal/localpubsub"
)

func TestBackoff(t *testing.T) {
	tests := []struct {
		attempt int
		scale   float64
		want    time.Duration
	}{
		{1, 1, 10 * time.Second},
		{2, 1, 20 * time.Second},
		{3, 1, 40 * time.Second},
		{6, 1, 320 * time.Second},
		{7, 1, 600 * time.Second}, // capped at the maximum
		{50, 1, 600 * time.Second},
		{0, 1, 10 * time.Second},
		{3, 0.01, 400 * time.Millisecond},
	}
	for _, tc := range tests {
		if got := Backoff(10*time.Second, 600*time.Second, tc.attempt, tc.scale); got != tc.want {
			t.Errorf("Backoff(10s, 600s, attempt %d, x%g) = %s, want %s", tc.attempt, tc.scale, got, tc.want)
		}
	}
}

func TestAckedStatusesArePubSubs(t *testing.T) {
	for code := 100; code < 600; code++ {
		want := code == 102 || code == 200 || code == 201 || code == 202 || code == 204
		if Acked(code) != want {
			t.Errorf("Acked(%d) = %v, want %v", code, Acked(code), want)
		}
	}
}

func TestPushBodyIsWhatTheConsumerDecodes(t *testing.T) {
	pt := time.Date(2026, 1, 8, 10, 0, 0, 123000000, time.UTC)
	rm := &pubsubpb.ReceivedMessage{AckId: "m1:3", DeliveryAttempt: 3, Message: &pubsubpb.PubsubMessage{
		MessageId: "m1", Data: []byte(`{"service":"api","status":"ok"}`), Attributes: map[string]string{"k": "v"},
		PublishTime: timestamppb.New(pt), OrderingKey: "api"}}
	body, err := PushBody("projects/p/subscriptions/s", rm)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := envelope.DecodePush(body)
	if err != nil {
		t.Fatalf("consumer rejects the bridge's envelope: %v\n%s", err, body)
	}
	if msg.ID != "m1" || msg.Subscription != "projects/p/subscriptions/s" || msg.DeliveryAttempt != 3 ||
		!msg.PublishTime.Equal(pt) || msg.Attributes["k"] != "v" || msg.OrderingKey != "api" || string(msg.Data) != `{"service":"api","status":"ok"}` {
		t.Errorf("decoded %+v", msg)
	}
	// Without a dead-letter policy Pub/Sub sends no deliveryAttempt at all.
	rm.DeliveryAttempt = 0
	body, _ = PushBody("projects/p/subscriptions/s", rm)
	var raw map[string]any
	_ = json.Unmarshal(body, &raw)
	if _, ok := raw["deliveryAttempt"]; ok {
		t.Errorf("envelope without DLQ has deliveryAttempt: %s", body)
	}
}

// bridgeFixture is one push subscription in pstest, bridged to an HTTP
// handler that answers with the statuses of a script.
type bridgeFixture struct {
	fake    *localpubsub.Fake
	sub     SubscriptionTopology
	topic   string
	mu      sync.Mutex
	pushes  []envelope.Message
	tally   *Tally
	stopped chan struct{}
}

func startBridge(t *testing.T, sub SubscriptionTopology, statuses func(n int) int) *bridgeFixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	fake, err := localpubsub.Start(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	topo := Topology{Project: "p", Pipelines: []PipelineTopology{{Name: "orders", Topic: "projects/p/topics/orders", Subscriptions: []SubscriptionTopology{sub}}}}
	if err := Declare(ctx, fake.Client, topo); err != nil {
		t.Fatal(err)
	}
	f := &bridgeFixture{fake: fake, sub: sub, topic: "projects/p/topics/orders", tally: NewTally(topo), stopped: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		msg, err := envelope.DecodePush(body)
		if err != nil {
			t.Errorf("bad envelope: %v", err)
		}
		f.mu.Lock()
		f.pushes = append(f.pushes, msg)
		n := len(f.pushes)
		f.mu.Unlock()
		w.WriteHeader(statuses(n))
	}))
	b := &Bridge{Client: fake.Client, Sub: sub, Endpoint: srv.URL, Scale: 1, Tally: f.tally}
	go func() { defer close(f.stopped); _ = b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-f.stopped
		srv.Close()
		_ = fake.Close()
	})
	return f
}

func (f *bridgeFixture) publish(t *testing.T) string {
	t.Helper()
	resp, err := f.fake.Client.TopicAdminClient.Publish(context.Background(), &pubsubpb.PublishRequest{Topic: f.topic,
		Messages: []*pubsubpb.PubsubMessage{{Data: []byte(`{"x":1}`), Attributes: map[string]string{"tenant": "a"}}}})
	if err != nil {
		t.Fatal(err)
	}
	f.tally.Published(f.topic, resp.GetMessageIds()[0])
	return resp.GetMessageIds()[0]
}

func (f *bridgeFixture) pushed() []envelope.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]envelope.Message(nil), f.pushes...)
}

func waitUntil(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func testSub(minBackoff time.Duration, attempts int) SubscriptionTopology {
	s := SubscriptionTopology{Key: "main", Name: "projects/p/subscriptions/orders-main", Push: true, AckDeadline: 10 * time.Second,
		MinBackoff: minBackoff, MaxBackoff: 10 * minBackoff, MaxAttempts: attempts}
	if attempts > 0 {
		s.DLQTopic, s.DLQSubscription = "projects/p/topics/orders-main.dlq", "projects/p/subscriptions/orders-main.dlq-sub"
	}
	return s
}

func TestBridgeAcksOnlyPubSubAckStatuses(t *testing.T) {
	tests := []struct {
		status int
		acked  bool
	}{
		{http.StatusOK, true}, {http.StatusCreated, true}, {http.StatusAccepted, true}, {http.StatusNoContent, true},
		{http.StatusBadRequest, false}, {http.StatusInternalServerError, false}, {http.StatusNotFound, false}, {http.StatusFound, false},
	}
	for _, tc := range tests {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			f := startBridge(t, testSub(20*time.Millisecond, 5), func(int) int { return tc.status })
			f.publish(t)
			waitUntil(t, "the first push", 5*time.Second, func() bool { return len(f.pushed()) >= 1 })
			if tc.acked {
				time.Sleep(300 * time.Millisecond) // a redelivery would come after 20 ms
				if n := len(f.pushed()); n != 1 {
					t.Errorf("status %d: %d pushes, want 1 (acked)", tc.status, n)
				}
				return
			}
			waitUntil(t, "a redelivery", 5*time.Second, func() bool { return len(f.pushed()) >= 2 })
			if p := f.pushed(); p[1].DeliveryAttempt != 2 {
				t.Errorf("redelivery has deliveryAttempt %d, want 2", p[1].DeliveryAttempt)
			}
		})
	}
}

func TestBridgeWaitsOutTheBackoff(t *testing.T) {
	const backoff = 300 * time.Millisecond
	var mu sync.Mutex
	var at []time.Time
	f := startBridge(t, testSub(backoff, 5), func(n int) int {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		if n < 3 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	f.publish(t)
	waitUntil(t, "three pushes", 10*time.Second, func() bool { return len(f.pushed()) >= 3 })
	mu.Lock()
	defer mu.Unlock()
	// Attempt 1 failed: wait min backoff; attempt 2 failed: wait twice that.
	if gap := at[1].Sub(at[0]); gap < backoff {
		t.Errorf("second push %s after the first, want at least the backoff %s", gap, backoff)
	}
	if gap := at[2].Sub(at[1]); gap < 2*backoff {
		t.Errorf("third push %s after the second, want at least %s", gap, 2*backoff)
	}
}

func TestBridgeDeadLettersOnceAfterMaxAttempts(t *testing.T) {
	f := startBridge(t, testSub(10*time.Millisecond, 5), func(int) int { return http.StatusBadRequest })
	id := f.publish(t)
	waitUntil(t, "the message dead-lettered", 10*time.Second, func() bool {
		return f.tally.Rows(Topology{Pipelines: []PipelineTopology{{Name: "orders",
			Subscriptions: []SubscriptionTopology{f.sub}}}})[0].DeadLettered == 1
	})
	time.Sleep(300 * time.Millisecond) // pstest's 10 ms loop would re-dead-letter it if it were still there
	pushes := f.pushed()
	if len(pushes) != 5 {
		t.Fatalf("%d pushes, want exactly the 5 allowed attempts", len(pushes))
	}
	for i, p := range pushes {
		if p.DeliveryAttempt != i+1 || p.ID != id {
			t.Errorf("push %d: message %s attempt %d, want %s attempt %d", i, p.ID, p.DeliveryAttempt, id, i+1)
		}
	}
	ctx := context.Background()
	resp, err := f.fake.Client.SubscriptionAdminClient.Pull(ctx, &pubsubpb.PullRequest{Subscription: f.sub.DLQSubscription, MaxMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.GetReceivedMessages()); n != 1 {
		t.Fatalf("DLQ holds %d messages, want 1", n)
	}
	a := resp.GetReceivedMessages()[0].GetMessage().GetAttributes()
	if a["tenant"] != "a" || a[AttrDLQDeliveryCount] != "5" || a[AttrDLQSubscription] != "orders-main" || a[AttrDLQProject] != "p" || a[AttrDLQPublishTime] == "" {
		t.Errorf("DLQ attributes %v: want the original ones plus Pub/Sub's dead-letter attributes", a)
	}
	// Gone from the source subscription: nothing left to pull there.
	resp, err = f.fake.Client.SubscriptionAdminClient.Pull(ctx, &pubsubpb.PullRequest{Subscription: f.sub.Name, MaxMessages: 10, ReturnImmediately: true})
	if err != nil || len(resp.GetReceivedMessages()) != 0 {
		t.Errorf("source subscription still offers %d messages (%v)", len(resp.GetReceivedMessages()), err)
	}
}

func TestBridgeWithoutDLQRetriesForever(t *testing.T) {
	f := startBridge(t, testSub(5*time.Millisecond, 0), func(int) int { return http.StatusBadRequest })
	f.publish(t)
	waitUntil(t, "more pushes than a DLQ would allow", 10*time.Second, func() bool { return len(f.pushed()) >= 7 })
	for _, p := range f.pushed() {
		if p.DeliveryAttempt != 0 {
			t.Fatalf("push without a dead-letter policy carries deliveryAttempt %d", p.DeliveryAttempt)
		}
	}
}
