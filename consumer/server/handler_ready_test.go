package server

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/eventpipe/eventpipe/consumer/handler"
	"github.com/eventpipe/eventpipe/consumer/logging"
	"github.com/eventpipe/eventpipe/internal/localpubsub"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

// slowHandler is a handler that is still starting: until ready is closed
// it answers every request, health included, 503, as a handler container
// does that has not bound its port yet (a refused connection fails the
// same way). It records the deliveries it gets.
type slowHandler struct {
	ready      chan struct{}
	probed     chan struct{} // a health probe while starting
	delivered  chan struct{} // closed at the first delivery after ready
	once       sync.Once
	mu         sync.Mutex
	deliveries []handler.Delivery
	early      int // deliveries before ready
}

func (h *slowHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case <-h.ready:
	default:
		if r.URL.Path == "/ready" {
			select {
			case h.probed <- struct{}{}:
			default:
			}
		} else {
			h.mu.Lock()
			h.early++
			h.mu.Unlock()
		}
		http.Error(w, "starting", http.StatusServiceUnavailable)
		return
	}
	if r.URL.Path == "/ready" {
		return
	}
	var d handler.Delivery
	raw, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(raw, &d)
	h.mu.Lock()
	h.deliveries = append(h.deliveries, d)
	h.mu.Unlock()
	h.once.Do(func() { close(h.delivered) })
}

// TestPullWaitsForHandler: a pulling consumer with a handler pulls nothing
// until the handler answers its health path (EVENTPIPE_HANDLER_HEALTH_PATH):
// a message published while the handler starts reaches it once, as attempt
// 1, and never while it was refusing. On a worker pool this is what orders
// the consumer after its handler (pulumi-gcp v8 declares no startup probe
// there). Without the wait the first pull would spend attempt 1 on a 503.
func TestPullWaitsForHandler(t *testing.T) {
	const project, topic, sub = "p", "orders", "orders-consumer"
	fake, err := localpubsub.Start(t.Context(), project)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	if _, err := fake.Client.TopicAdminClient.CreateTopic(t.Context(), &pb.Topic{Name: "projects/p/topics/" + topic}); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.Client.SubscriptionAdminClient.CreateSubscription(t.Context(), &pb.Subscription{
		Name: "projects/p/subscriptions/" + sub, Topic: "projects/p/topics/" + topic, AckDeadlineSeconds: 10}); err != nil {
		t.Fatal(err)
	}
	h := &slowHandler{ready: make(chan struct{}), probed: make(chan struct{}, 1), delivered: make(chan struct{})}
	hsrv := httptest.NewServer(h)
	t.Cleanup(hsrv.Close)
	routes := `{"routes":[{"name":"orders","topic":"orders","match":{"typeField":"eventType","types":["order_placed"]},"mode":"lease",
	  "fields":{"orderId":{"from":["orderId"],"type":"string"}},"dedupe":{"eventIdField":"eventId"},
	  "action":{"maxAttempts":5,"timeout":"5s","leaseTTL":"30s","heartbeat":"5s"}}]}`
	cfg := testConfig(t, map[string]string{"EVENTPIPE_ROUTES": routes, handler.URLEnv: hsrv.URL, handler.HealthPathEnv: "/ready",
		"EVENTPIPE_PULL_SUBSCRIPTIONS": "projects/p/subscriptions/" + sub})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := &ct.Log{}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cfg, logging.New(log, slog.LevelInfo), Options{Listener: ln, PubSubClient: fake.Client})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("consumer stopped with %v", err)
		}
	})
	publisher := fake.Client.Publisher("projects/p/topics/" + topic)
	defer publisher.Stop()
	if _, err := publisher.Publish(t.Context(), &pubsub.Message{Data: []byte(`{"eventType":"order_placed","eventId":"e-1","orderId":"o-1"}`)}).Get(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The consumer asks the handler's health path, and pulls nothing, until it answers.
	for range 3 {
		select {
		case <-h.probed:
		case <-time.After(10 * time.Second):
			t.Fatal("the consumer never asked the handler's health path")
		}
	}
	close(h.ready)
	select {
	case <-h.delivered:
	case <-time.After(20 * time.Second):
		t.Fatal("no delivery reached the handler after it became ready")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.early != 0 || h.deliveries[0].Attempt != 1 || h.deliveries[0].Event == nil {
		t.Fatalf("%d deliveries while the handler was starting; first delivery after %+v, want attempt 1", h.early, h.deliveries[0])
	}
}
