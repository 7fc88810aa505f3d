package pull

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/eventpipe/eventpipe/consumer/process"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	"github.com/eventpipe/eventpipe/internal/localpubsub"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

const project = "proj"

// fake is a pstest server with a client.
type fake struct {
	srv    *pstest.Server
	client *pubsub.Client
}

func newFake(t *testing.T, opts ...pstest.ServerReactorOption) *fake {
	t.Helper()
	ps, err := localpubsub.Start(t.Context(), project, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	return &fake{srv: ps.Server, client: ps.Client}
}

func topicName(id string) string { return "projects/" + project + "/topics/" + id }
func subName(id string) string   { return "projects/" + project + "/subscriptions/" + id }

func (f *fake) topic(t *testing.T, id string) {
	t.Helper()
	if _, err := f.client.TopicAdminClient.CreateTopic(t.Context(), &pb.Topic{Name: topicName(id)}); err != nil {
		t.Fatal(err)
	}
}

func (f *fake) sub(t *testing.T, s *pb.Subscription) {
	t.Helper()
	if s.AckDeadlineSeconds == 0 {
		s.AckDeadlineSeconds = 10
	}
	if _, err := f.client.SubscriptionAdminClient.CreateSubscription(t.Context(), s); err != nil {
		t.Fatal(err)
	}
}

func (f *fake) publish(t *testing.T, topic, data string) string {
	t.Helper()
	id, err := f.client.Publisher(topicName(topic)).Publish(t.Context(), &pubsub.Message{Data: []byte(data)}).Get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// run starts a Runner and returns a stop func that waits for it.
func run(t *testing.T, cfg Config) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	return func() error { cancel(); return <-done }
}

// waitFor polls cond until it holds or the test times out.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func sysEvent(status, at string) string {
	return fmt.Sprintf(`{"service":"api","status":%q,"producedAt":%q}`, status, at)
}

func TestPullAcksNacksAndDeadLetters(t *testing.T) {
	f := newFake(t)
	// One topic per subscription: pstest counts delivery attempts per
	// message across all subscriptions of a topic, Pub/Sub per subscription.
	f.topic(t, "events")
	f.topic(t, "events2")
	f.topic(t, "events-dlq")
	f.sub(t, &pb.Subscription{Name: subName("plain"), Topic: topicName("events")})
	f.sub(t, &pb.Subscription{Name: subName("with-dlq"), Topic: topicName("events2"),
		DeadLetterPolicy: &pb.DeadLetterPolicy{DeadLetterTopic: topicName("events-dlq"), MaxDeliveryAttempts: 5}})
	f.sub(t, &pb.Subscription{Name: subName("dlq-reader"), Topic: topicName("events-dlq")})

	// The first two transactions fail transiently: those messages are nacked
	// and redelivered, not lost.
	var mu sync.Mutex
	failures := 2
	fs := &ct.FailingStore{Store: memstore.New(), Hook: func() error {
		mu.Lock()
		defer mu.Unlock()
		if failures > 0 {
			failures--
			return errUnavailable
		}
		return nil
	}}
	proc, _, log := ct.NewProcessor(t, ct.Options{Store: fs})
	stop := run(t, Config{Client: f.client, Subscriptions: []string{subName("plain"), subName("with-dlq")},
		Settings: pubsub.ReceiveSettings{MaxOutstandingMessages: 10, NumGoroutines: 1}, Processor: proc})

	// The same event published to both topics: the second copy is a
	// duplicate by its logical key (service + producedAt).
	good := f.publish(t, "events", sysEvent("healthy", "2026-01-02T03:00:00Z"))
	good2 := f.publish(t, "events2", sysEvent("healthy", "2026-01-02T03:00:00Z"))
	poison := f.publish(t, "events", `{"not":"routable"}`)
	poison2 := f.publish(t, "events2", `{"not":"routable"}`)

	var dlqMu sync.Mutex
	var dead []string
	dctx, dcancel := context.WithCancel(t.Context())
	ddone := make(chan struct{})
	go func() {
		defer close(ddone)
		_ = f.client.Subscriber(subName("dlq-reader")).Receive(dctx, func(_ context.Context, m *pubsub.Message) {
			dlqMu.Lock()
			dead = append(dead, string(m.Data))
			dlqMu.Unlock()
			m.Ack()
		})
	}()
	waitFor(t, "the poison message in the DLQ", func() bool {
		dlqMu.Lock()
		defer dlqMu.Unlock()
		return len(dead) >= 1
	})
	waitFor(t, "the good messages acked", func() bool {
		lines := log.Lines(t)
		return len(ct.With(ct.With(lines, "messageId", good), "ack_action", "ack")) == 1 &&
			len(ct.With(ct.With(lines, "messageId", good2), "ack_action", "ack")) == 1
	})
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	dcancel()
	<-ddone

	lines := log.Lines(t)
	if dead[0] != `{"not":"routable"}` {
		t.Fatalf("DLQ got %q", dead[0])
	}
	goodLines := append(ct.With(lines, "messageId", good), ct.With(lines, "messageId", good2)...)
	if n := len(ct.With(goodLines, "outcome", "applied")); n != 1 {
		t.Fatalf("the event was applied %d times: %v", n, goodLines)
	}
	if n := len(ct.With(goodLines, "outcome", "duplicate")); n != 1 {
		t.Fatalf("the republished copy should be a duplicate: %v", goodLines)
	}
	if len(ct.With(ct.With(lines, "outcome", "retry"), "ack_action", "nack")) < 1 {
		t.Fatalf("transient failures were not nacked: %v", lines)
	}
	poisonLines := append(ct.With(lines, "messageId", poison), ct.With(lines, "messageId", poison2)...)
	// Either of the two failing transactions may be the poison record's own:
	// that delivery is nacked as a retry, and the redelivery records it.
	plainAll := ct.With(poisonLines, "subscription", subName("plain"))
	for _, l := range plainAll {
		if l["ack_action"] != "ack" && (l["ack_action"] != "nack" || l["outcome"] != "retry") {
			t.Fatalf("poison on the plain subscription: a line neither its record nor a retry: %v", l)
		}
	}
	plain := ct.With(plainAll, "ack_action", "ack")
	if len(plain) != 1 || plain[0]["outcome"] != "poison" || plain[0]["write_kind"] != "poison" {
		t.Fatalf("poison on the plain subscription must be recorded and acked once: %v", plainAll)
	}
	withDLQ := ct.With(ct.With(poisonLines, "subscription", subName("with-dlq")), "ack_action", "nack")
	if len(withDLQ) != 5 {
		t.Fatalf("poison on the DLQ subscription nacked %d times, want maxDeliveryAttempts=5: %v", len(withDLQ), withDLQ)
	}
	for i, l := range withDLQ {
		// A failing transaction may have been one attempt's: that one is a retry.
		if l["deliveryAttempt"] != float64(i+1) || l["outcome"] != "poison" && l["outcome"] != "retry" {
			t.Fatalf("nack %d: %v", i, l)
		}
	}
	coll, id, _ := strings.Cut(plain[0]["idempotency_doc"].(string), "/")
	rec, ok := ct.Get(t, fs, store.Key{Collection: coll, ID: id})
	if !ok || rec.Fields["source"] != subName("plain") {
		t.Fatalf("poison audit record: %v %v", ok, rec.Fields)
	}
}

var errUnavailable = &store.Error{Op: "commit", Code: "UNAVAILABLE", Kind: store.KindTransient, Err: errors.New("backend restarting")}

func TestPullExactlyOnceAcks(t *testing.T) {
	f := newFake(t)
	f.topic(t, "events")
	f.sub(t, &pb.Subscription{Name: subName("eod"), Topic: topicName("events"), EnableExactlyOnceDelivery: true})
	proc, st, log := ct.NewProcessor(t, ct.Options{})
	stop := run(t, Config{Client: f.client, Subscriptions: []string{subName("eod")}, Processor: proc})
	var ids []string
	for i := range 5 {
		ids = append(ids, f.publish(t, "events", sysEvent(fmt.Sprintf("s%d", i), fmt.Sprintf("2026-01-02T03:0%d:00Z", i))))
	}
	waitFor(t, "five confirmed acks", func() bool { return len(ct.With(log.Lines(t), "ack_action", "ack")) == 5 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		m := f.srv.Message(id)
		if m == nil || m.Acks != 1 {
			t.Fatalf("message %s acks = %v", id, m)
		}
	}
	doc, _ := ct.Get(t, st, store.Key{Collection: "ops_services", ID: "test__api"})
	if doc.Fields["status"] != "s4" {
		t.Fatalf("final state %v", doc.Fields)
	}
}

func TestPullFailedExactlyOnceAckIsNotAcked(t *testing.T) {
	f := newFake(t, pstest.WithErrorInjection("Acknowledge", codes.FailedPrecondition, "ack id expired"))
	f.topic(t, "events")
	f.sub(t, &pb.Subscription{Name: subName("eod"), Topic: topicName("events"), EnableExactlyOnceDelivery: true})
	proc, _, log := ct.NewProcessor(t, ct.Options{})
	stop := run(t, Config{Client: f.client, Subscriptions: []string{subName("eod")}, Processor: proc})
	id := f.publish(t, "events", sysEvent("healthy", "2026-01-02T03:00:00Z"))
	waitFor(t, "the failed ack logged", func() bool { return len(ct.With(log.Lines(t), "ack_action", "ack_failed")) >= 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	line := ct.With(log.Lines(t), "ack_action", "ack_failed")[0]
	if line["messageId"] != id || line["severity"] != "ERROR" || line["ack_error"] == "" {
		t.Fatalf("log line %v", line)
	}
	if m := f.srv.Message(id); m.Acks != 0 {
		t.Fatalf("the message counts as acked (%d) although the ack failed", m.Acks)
	}
}

func TestRunRejectsBadSubscriptionName(t *testing.T) {
	f := newFake(t)
	proc, _, _ := ct.NewProcessor(t, ct.Options{})
	err := Run(t.Context(), Config{Client: f.client, Subscriptions: []string{"events"}, Processor: proc})
	if err == nil {
		t.Fatal("accepted a short subscription name")
	}
}

// blockedLease is a fake Pub/Sub with subscription "docs" and a processor
// whose lease route's action posts to a downstream that blocks until
// release is closed; calls counts the action's calls.
func blockedLease(t *testing.T, release chan struct{}) (f *fake, proc *process.Processor, log *ct.Log, calls *atomic.Int64) {
	t.Helper()
	f = newFake(t)
	f.topic(t, "docs")
	f.sub(t, &pb.Subscription{Name: subName("docs"), Topic: topicName("docs")})
	calls = new(atomic.Int64)
	downstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		<-release
	}))
	t.Cleanup(downstream.Close) // after the test closes release: it waits for its handlers
	routes := `{"routes":[{"name":"doc","match":{"fields":["fileHash"]},"mode":"lease",
		"fields":{"fileHash":{"from":["fileHash"],"type":"string","required":true}},
		"action":{"urlEnv":"DOWNSTREAM","timeout":"30s"}}]}`
	proc, _, log = ct.NewProcessor(t, ct.Options{Routes: []byte(routes), Env: map[string]string{"DOWNSTREAM": downstream.URL}})
	return f, proc, log, calls
}

// TestPullShutdownFinishesInFlight stops the runner while a message is being
// processed (its lease action blocks): the message still completes and is
// acked, nothing is redelivered or lost.
func TestPullShutdownFinishesInFlight(t *testing.T) {
	release := make(chan struct{})
	f, proc, log, calls := blockedLease(t, release)
	// Default shutdown options, as the server uses them: graceful.
	stop := run(t, Config{Client: f.client, Subscriptions: []string{subName("docs")}, Processor: proc})
	id := f.publish(t, "docs", `{"fileHash":"abc"}`)
	waitFor(t, "the action to start", func() bool { return calls.Load() == 1 })
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	time.Sleep(100 * time.Millisecond) // shutdown has begun while the message is in flight
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	lines := ct.With(log.Lines(t), "messageId", id)
	if len(lines) != 1 || lines[0]["outcome"] != "applied" || lines[0]["ack_action"] != "ack" {
		t.Fatalf("in-flight message: %v", lines)
	}
	waitFor(t, "the ack to reach Pub/Sub", func() bool { return f.srv.Message(id).Acks == 1 })
}

// retryLines is a slog.Handler passing each record's message and
// subscription to a channel, so a test can act on a retry line.
type retryLines chan [2]string

func (h retryLines) Enabled(context.Context, slog.Level) bool { return true }
func (h retryLines) Handle(_ context.Context, r slog.Record) error {
	var sub string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "subscription" {
			sub = a.Value.String()
		}
		return true
	})
	select {
	case h <- [2]string{r.Message, sub}:
	default:
	}
	return nil
}
func (h retryLines) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h retryLines) WithGroup(string) slog.Handler      { return h }

// TestPullWaitsForItsSubscriptionAtStartup: a subscription created after
// the consumer started (a first deployment) is retried with a log line
// naming it, and read once it exists.
func TestPullWaitsForItsSubscriptionAtStartup(t *testing.T) {
	f := newFake(t)
	f.topic(t, "late")
	proc, _, log := ct.NewProcessor(t, ct.Options{})
	lines := make(retryLines, 16)
	stop := run(t, Config{Client: f.client, Subscriptions: []string{subName("late")}, Processor: proc,
		StartupRetry: time.Minute, StartupBackoff: 10 * time.Millisecond, Logger: slog.New(lines)})
	select {
	case l := <-lines:
		if !strings.Contains(l[0], "retrying") || l[1] != subName("late") {
			t.Fatalf("retry line = %q", l)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no retry line while the subscription is missing")
	}
	f.sub(t, &pb.Subscription{Name: subName("late"), Topic: topicName("late")})
	id := f.publish(t, "late", sysEvent("up", "2026-01-01T00:00:00Z"))
	waitFor(t, "the message to be processed", func() bool { return len(ct.With(log.Lines(t), "messageId", id)) == 1 })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// TestPullStartupRetryIsBounded: a subscription that never appears stops
// the consumer with its NotFound error once StartupRetry has passed, and
// at once with retrying off.
func TestPullStartupRetryIsBounded(t *testing.T) {
	f := newFake(t)
	proc, _, _ := ct.NewProcessor(t, ct.Options{})
	for _, retry := range []time.Duration{-1, 100 * time.Millisecond} {
		lines := make(retryLines, 64)
		err := Run(t.Context(), Config{Client: f.client, Subscriptions: []string{subName("never")}, Processor: proc,
			StartupRetry: retry, StartupBackoff: 10 * time.Millisecond, Logger: slog.New(lines)})
		if status.Code(err) != codes.NotFound {
			t.Errorf("retry %v: err = %v, want NotFound", retry, err)
		}
		if n := len(lines); retry < 0 && n != 0 || retry > 0 && n == 0 {
			t.Errorf("retry %v: %d retry lines", retry, n)
		}
	}
}

// TestPullCutCancelsInFlight: at the shutdown deadline (Config.Cut done) a
// message still in flight has its processing cancelled and is not acked
// (Pub/Sub delivers it again), and Run returns without waiting for it.
func TestPullCutCancelsInFlight(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	f, proc, log, calls := blockedLease(t, release)
	cutCtx, cut := context.WithCancel(t.Context())
	stop := run(t, Config{Client: f.client, Subscriptions: []string{subName("docs")}, Processor: proc, Cut: cutCtx})
	id := f.publish(t, "docs", `{"fileHash":"abc"}`)
	waitFor(t, "the action to start", func() bool { return calls.Load() == 1 })
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	cut()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Run still waiting for the cut message 20s after the cut")
	}
	lines := ct.With(log.Lines(t), "messageId", id)
	if len(lines) != 1 || lines[0]["ack_action"] != "nack" {
		t.Fatalf("cut message: %v, want one line with ack_action nack", lines)
	}
	if acks := f.srv.Message(id).Acks; acks != 0 {
		t.Fatalf("cut message acked %d times", acks)
	}
}
