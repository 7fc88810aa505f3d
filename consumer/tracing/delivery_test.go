package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/logging"
	"github.com/eventpipe/eventpipe/consumer/server"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	"github.com/eventpipe/eventpipe/consumer/tracing"
	"github.com/eventpipe/eventpipe/internal/localpubsub"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

const (
	project = "proj"
	// traceProject is the project log lines name their traces in.
	traceProject = "trace-proj"
	topicID      = "system-events"
	subID        = "system-events-pull"
)

// leaseRoute is a lease route whose action posts to DOC_URL.
const leaseRoute = `{
  "name": "document_processing",
  "match": {"typeField": "eventType", "types": ["document_uploaded"]},
  "mode": "lease",
  "fields": {"fileHash": {"from": ["fileHash"], "type": "string", "required": true}},
  "dedupe": {"eventIdField": "fileHash"},
  "action": {"urlEnv": "DOC_URL", "maxAttempts": 3, "timeout": "5s", "leaseTTL": "30s", "heartbeat": "10s"}
}`

// receiver is a lease action's downstream service: it records the
// traceparent header of every request.
type receiver struct {
	mu           sync.Mutex
	traceparents []string
}

func (d *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	d.traceparents = append(d.traceparents, r.Header.Get("traceparent"))
	d.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (d *receiver) seen() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.traceparents...)
}

// consumer is a running consumer (server.Run) with pull, push and
// callbacks, its spans recorded in memory, and a publisher whose Pub/Sub
// client has OpenTelemetry tracing on, as a traced producer's has.
type consumer struct {
	url       string
	spans     *tracetest.SpanRecorder
	log       *ct.Log
	store     store.Store
	publisher *pubsub.Publisher
	receiver  *receiver
}

// start runs the consumer; traced says whether it gets a tracer.
func start(t *testing.T, traced bool) *consumer {
	t.Helper()
	spans := tracetest.NewSpanRecorder()
	provider := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	if traced {
		// Google's clients start their spans on the global provider: the
		// test's own, so publisher and consumer spans are recorded together.
		previous := otel.GetTracerProvider()
		otel.SetTracerProvider(provider)
		t.Cleanup(func() { otel.SetTracerProvider(previous) })
	}

	fake, err := localpubsub.Start(t.Context(), project)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	admin := fake.Client
	if _, err := admin.TopicAdminClient.CreateTopic(t.Context(), &pb.Topic{Name: "projects/" + project + "/topics/" + topicID}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.SubscriptionAdminClient.CreateSubscription(t.Context(), &pb.Subscription{
		Name: "projects/" + project + "/subscriptions/" + subID, Topic: "projects/" + project + "/topics/" + topicID, AckDeadlineSeconds: 10}); err != nil {
		t.Fatal(err)
	}
	tracedClient, err := pubsub.NewClientWithConfig(t.Context(), project, &pubsub.ClientConfig{EnableOpenTelemetryTracing: true},
		option.WithEndpoint(fake.Server.Addr), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tracedClient.Close() })
	publisher := tracedClient.Publisher("projects/" + project + "/topics/" + topicID)
	t.Cleanup(publisher.Stop)

	recv := &receiver{}
	downstream := httptest.NewServer(recv)
	t.Cleanup(downstream.Close)
	t.Setenv("DOC_URL", downstream.URL+"/process")
	var routes struct {
		Routes []json.RawMessage `json:"routes"`
	}
	if err := json.Unmarshal(ct.DefaultRoutes(t), &routes); err != nil {
		t.Fatal(err)
	}
	routes.Routes = append(routes.Routes, json.RawMessage(leaseRoute))
	inline, err := json.Marshal(routes)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"EVENTPIPE_ENV": "test", "EVENTPIPE_ROUTES": string(inline), "EVENTPIPE_STORE": "mem://",
		"EVENTPIPE_PULL_SUBSCRIPTIONS": "projects/" + project + "/subscriptions/" + subID}
	cfg, err := server.ConfigFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	var tracer *tracing.Tracer
	if traced {
		tracer = tracing.New(provider)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := &ct.Log{}
	st := memstore.New()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, cfg, logging.New(log, slog.LevelInfo, logging.WithTrace(traceProject)),
			server.Options{Listener: ln, PubSubClient: fake.Client, Store: st, Tracer: tracer})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("consumer stopped with %v", err)
		}
	})
	return &consumer{url: "http://" + ln.Addr().String(), spans: spans, log: log, store: st, publisher: publisher, receiver: recv}
}

// waitSpan waits for an ended span that match accepts.
func (c *consumer) waitSpan(t *testing.T, what string, match func(sdktrace.ReadOnlySpan) bool) sdktrace.ReadOnlySpan {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, s := range c.spans.Ended() {
			if match(s) {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s span; ended spans: %v", what, names(c.spans.Ended()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// deliverySpan waits for the consumer span of message id.
func (c *consumer) deliverySpan(t *testing.T, id string) sdktrace.ReadOnlySpan {
	t.Helper()
	return c.waitSpan(t, "delivery of "+id, func(s sdktrace.ReadOnlySpan) bool {
		return s.SpanKind() == trace.SpanKindConsumer && attr(s, "messaging.message.id") == id
	})
}

// children returns the ended spans whose parent is parent.
func (c *consumer) children(parent sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range c.spans.Ended() {
		if s.Parent().SpanID() == parent.SpanContext().SpanID() {
			out = append(out, s)
		}
	}
	return out
}

// line returns the log line with key = value, waiting for it.
func (c *consumer) line(t *testing.T, key string, value any) map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if l := ct.With(c.log.Lines(t), key, value); len(l) > 0 {
			return l[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %s = %v", key, value)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (c *consumer) post(t *testing.T, path string, body []byte, header http.Header) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, c.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == key {
			return a.Value.Emit()
		}
	}
	return ""
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

// wantTraceFields checks that line names span's trace and span for Cloud Logging.
func wantTraceFields(t *testing.T, line map[string]any, span trace.SpanContext) {
	t.Helper()
	want := map[string]any{
		logfields.Trace:        "projects/" + traceProject + "/traces/" + span.TraceID().String(),
		logfields.SpanID:       span.SpanID().String(),
		logfields.TraceSampled: span.IsSampled(),
	}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("log line %s = %v, want %v (line %v)", k, line[k], v, line)
		}
	}
}

func systemEvent(service string) string {
	return fmt.Sprintf(`{"service":%q,"status":"healthy","producedAt":"2026-01-02T03:04:05Z"}`, service)
}

// A message published by a client with OpenTelemetry tracing on is
// consumed in the publisher's trace: the consumer span's parent is the
// publisher's create span, its store transaction is its child, and its
// log line names both.
func TestPulledMessageContinuesThePublishersTrace(t *testing.T) {
	c := start(t, true)
	id, err := c.publisher.Publish(t.Context(), &pubsub.Message{Data: []byte(systemEvent("checkout"))}).Get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	publish := c.waitSpan(t, "publisher create", func(s sdktrace.ReadOnlySpan) bool {
		return s.SpanKind() == trace.SpanKindProducer && attr(s, "messaging.message.id") == id
	})
	if publish.Name() != topicID+" create" {
		t.Errorf("publisher span %q: Google's client names its create span TOPIC create", publish.Name())
	}
	delivery := c.deliverySpan(t, id)
	if delivery.Parent().SpanID() != publish.SpanContext().SpanID() || delivery.SpanContext().TraceID() != publish.SpanContext().TraceID() {
		t.Fatalf("consumer span parent %v, want the publisher's create span %v", delivery.Parent(), publish.SpanContext())
	}
	want := map[string]string{
		"messaging.system":                        "gcp_pubsub",
		"messaging.operation.type":                "process",
		"messaging.destination.subscription.name": "projects/" + project + "/subscriptions/" + subID,
		"eventpipe.ingress":                       "pull",
		"eventpipe.outcome":                       "applied",
		"eventpipe.ack_action":                    "ack",
		"eventpipe.route":                         "system_events",
	}
	for k, v := range want {
		if got := attr(delivery, k); got != v {
			t.Errorf("consumer span %s = %q, want %q", k, got, v)
		}
	}
	if delivery.Name() != "process "+subID {
		t.Errorf("consumer span name %q, want %q", delivery.Name(), "process "+subID)
	}
	var tx []string
	for _, s := range c.children(delivery) {
		if s.SpanKind() == trace.SpanKindClient && strings.HasPrefix(s.Name(), "transaction ") {
			tx = append(tx, attr(s, "db.system.name")+" attempts="+attr(s, "eventpipe.store.tx_attempts"))
		}
	}
	if len(tx) != 1 || tx[0] != "mem attempts=1" {
		t.Errorf("store transactions under the consumer span: %v, want one mem transaction", tx)
	}
	wantTraceFields(t, c.line(t, logfields.MessageID, id), delivery.SpanContext())
}

// A push carries the message's attributes: its googclient_traceparent is
// the parent; without it, the push request's traceparent header is.
func TestPushedMessageParentIsItsTraceparentAttribute(t *testing.T) {
	c := start(t, true)
	producer := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled})
	// What Google's clients write: the W3C traceparent of the publisher's span.
	attrs := map[string]string{"googclient_traceparent": "00-" + producer.TraceID().String() + "-" + producer.SpanID().String() + "-01"}
	frontend := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{9}, TraceFlags: trace.FlagsSampled})
	header := http.Header{"Traceparent": {"00-" + frontend.TraceID().String() + "-" + frontend.SpanID().String() + "-01"}}

	cases := []struct {
		name, id string
		attrs    map[string]string
		attempt  int
		parent   trace.SpanContext
	}{
		{"attribute", "push-1", attrs, 3, producer},
		{"header only", "push-2", nil, 0, frontend},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := ct.PushBody(t, ct.Envelope{ID: tc.id, Payload: systemEvent(tc.id), Attributes: tc.attrs, DeliveryAttempt: tc.attempt})
			if code := c.post(t, "/pubsub/push", body, header.Clone()); code != http.StatusOK {
				t.Fatalf("push answered %d", code)
			}
			delivery := c.deliverySpan(t, tc.id)
			if delivery.Parent().SpanID() != tc.parent.SpanID() || delivery.SpanContext().TraceID() != tc.parent.TraceID() {
				t.Fatalf("parent %v, want %v", delivery.Parent(), tc.parent)
			}
			if got := attr(delivery, "http.response.status_code"); got != "200" {
				t.Errorf("http.response.status_code = %q", got)
			}
			wantAttempt := ""
			if tc.attempt > 0 {
				wantAttempt = fmt.Sprint(tc.attempt)
			}
			if got := attr(delivery, "messaging.gcp_pubsub.message.delivery_attempt"); got != wantAttempt {
				t.Errorf("delivery attempt %q, want %q", got, wantAttempt)
			}
			wantTraceFields(t, c.line(t, logfields.MessageID, tc.id), delivery.SpanContext())
		})
	}
}

// A push that fails is an error span; its log line is still in the trace.
func TestFailedPushIsAnErrorSpan(t *testing.T) {
	c := start(t, true)
	body := ct.PushBody(t, ct.Envelope{ID: "bad-1", Payload: `{"service":"x","status":"up","producedAt":"not a time"}`, DeliveryAttempt: 1})
	if code := c.post(t, "/pubsub/push", body, http.Header{}); code < 400 {
		t.Fatalf("a malformed event answered %d", code)
	}
	delivery := c.deliverySpan(t, "bad-1")
	if delivery.Status().Code != codes.Error || attr(delivery, "eventpipe.outcome") != logfields.OutcomePoison {
		t.Errorf("status %v, outcome %q: want an error span with outcome poison", delivery.Status(), attr(delivery, "eventpipe.outcome"))
	}
	line := c.line(t, logfields.MessageID, "bad-1")
	if line[logfields.SpanID] != delivery.SpanContext().SpanID().String() {
		t.Errorf("log line %v is not in the delivery's span", line)
	}
}

// A callback's parent is its traceparent header; its store transactions
// are its children.
func TestCallbackContinuesTheCallersTrace(t *testing.T) {
	c := start(t, true)
	ct.Put(t, c.store, store.Key{Collection: "validation_runs", ID: "test__run-7"}, map[string]any{"status": "running"})
	caller := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{7}, SpanID: trace.SpanID{7}, TraceFlags: trace.FlagsSampled})
	header := http.Header{"Traceparent": {"00-" + caller.TraceID().String() + "-" + caller.SpanID().String() + "-01"}}
	body := []byte(`{"callback_id":"cb-7","run_id":"run-7","status":"passed"}`)
	if code := c.post(t, "/callbacks/validation", body, header); code != http.StatusOK {
		t.Fatalf("callback answered %d", code)
	}
	span := c.waitSpan(t, "callback", func(s sdktrace.ReadOnlySpan) bool { return s.SpanKind() == trace.SpanKindServer })
	if span.Parent().SpanID() != caller.SpanID() || span.SpanContext().TraceID() != caller.TraceID() {
		t.Fatalf("callback span parent %v, want the caller's %v", span.Parent(), caller)
	}
	if attr(span, "eventpipe.outcome") != logfields.OutcomeApplied || attr(span, "eventpipe.route") != "validation" {
		t.Errorf("callback span attributes %v", span.Attributes())
	}
	if n := len(c.children(span)); n < 2 {
		t.Errorf("callback span has %d child spans, want its store transactions (target check, receipt, apply)", n)
	}
	wantTraceFields(t, c.line(t, logfields.IdempotencyKey, "cb-7"), span.SpanContext())
}

// A lease action's downstream request is a client span under the delivery
// and carries its traceparent, so the receiver joins the trace.
func TestLeaseActionCarriesTraceparent(t *testing.T) {
	c := start(t, true)
	id, err := c.publisher.Publish(t.Context(), &pubsub.Message{Data: []byte(`{"eventType":"document_uploaded","fileHash":"h1"}`)}).Get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	delivery := c.deliverySpan(t, id)
	if got := attr(delivery, "eventpipe.outcome"); got != logfields.OutcomeApplied {
		t.Fatalf("lease delivery outcome %q", got)
	}
	var call sdktrace.ReadOnlySpan
	for _, s := range c.children(delivery) {
		if s.SpanKind() == trace.SpanKindClient && attr(s, "http.request.method") == http.MethodPost {
			call = s
		}
	}
	if call == nil {
		t.Fatalf("no HTTP client span under the delivery; children: %v", names(c.children(delivery)))
	}
	want := "00-" + call.SpanContext().TraceID().String() + "-" + call.SpanContext().SpanID().String() + "-01"
	if got := c.receiver.seen(); len(got) != 1 || got[0] != want {
		t.Errorf("downstream got traceparent %v, want [%s]", got, want)
	}
}

// With tracing off the consumer starts no span and its lines carry no
// trace fields, whatever the message says.
func TestTracingOffTracesNothing(t *testing.T) {
	c := start(t, false)
	attrs := map[string]string{"googclient_traceparent": "00-01020300000000000000000000000000-0405060000000000-01"}
	body := ct.PushBody(t, ct.Envelope{ID: "off-1", Payload: systemEvent("off"), Attributes: attrs})
	if code := c.post(t, "/pubsub/push", body, http.Header{"Traceparent": {"00-09000000000000000000000000000000-0900000000000000-01"}}); code != http.StatusOK {
		t.Fatalf("push answered %d", code)
	}
	line := c.line(t, logfields.MessageID, "off-1")
	for _, k := range []string{logfields.Trace, logfields.SpanID, logfields.TraceSampled} {
		if _, ok := line[k]; ok {
			t.Errorf("untraced line has %s: %v", k, line)
		}
	}
	if n := len(c.spans.Ended()); n != 0 {
		t.Errorf("%d spans with tracing off: %v", n, names(c.spans.Ended()))
	}
}

// message is a pulled message of subscription projects/p/subscriptions/sub.
func message(id string, attrs map[string]string) *envelope.Message {
	return &envelope.Message{ID: id, Subscription: "projects/p/subscriptions/sub", Attributes: attrs}
}

// The engine's own warnings (here: an event time too far ahead of its
// publish time) are lines of the delivery's trace too.
func TestEngineWarningIsInTheDeliverysTrace(t *testing.T) {
	c := start(t, true)
	body := ct.PushBody(t, ct.Envelope{ID: "skewed-1", Payload: `{"service":"skewed","status":"degraded","producedAt":"9999-12-31T00:00:00Z"}`})
	if code := c.post(t, "/pubsub/push", body, http.Header{}); code != http.StatusOK {
		t.Fatalf("push answered %d", code)
	}
	delivery := c.deliverySpan(t, "skewed-1")
	warning := c.line(t, "message", "event time is beyond the window ahead of the publish time: it holds its aggregate at most the window")
	wantTraceFields(t, warning, delivery.SpanContext())
}
