package devpipe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pubsubpb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

// Attributes Pub/Sub adds to a message it dead-letters; the bridge adds the
// same ones so that tools reading a DLQ see what they would see in the cloud.
const (
	AttrDLQDeliveryCount = "CloudPubSubDeadLetterSourceDeliveryCount"
	AttrDLQSubscription  = "CloudPubSubDeadLetterSourceSubscription"
	AttrDLQProject       = "CloudPubSubDeadLetterSourceSubscriptionProject"
	AttrDLQPublishTime   = "CloudPubSubDeadLetterSourceTopicPublishTime"
)

// Bridge delivers one push subscription to an HTTP endpoint the way Pub/Sub
// push does: it pulls from pstest (which does not push), POSTs the push
// envelope, acks on 102, 200, 201, 202 or 204 and nacks anything else with
// the subscription's retry backoff, and dead-letters after the last attempt.
//
// Dead-lettering is done by the bridge, not by pstest, on purpose: pstest
// v2.8.0 acks a dead-lettered message with its message id instead of its ack
// id, so the message never leaves the source subscription and pstest's
// delivery loop publishes it to the DLQ again every 10 ms. Real Pub/Sub moves
// it once. So, as Pub/Sub does, the bridge publishes the message to the DLQ
// topic after the final failed attempt and then acks it on the source
// subscription; pstest's own dead-lettering never triggers because the
// message is gone before pstest would see a further delivery. pstest does not
// implement retry backoff either: a nack here is a ModifyAckDeadline to the
// backoff (so the message stays invisible), then a deadline of 0 when the
// backoff has passed, which releases it for the next attempt.
type Bridge struct {
	// Client reaches pstest.
	Client *pubsub.Client
	// Sub is the push subscription to deliver.
	Sub SubscriptionTopology
	// Endpoint is the consumer's push URL (http://HOST/pubsub/push).
	Endpoint string
	// HTTP is the client for pushes (default: a client of its own that keeps
	// a connection per concurrent push and closes them when Run returns).
	// Each push is bounded by the subscription's ack deadline.
	HTTP *http.Client
	// Scale multiplies the backoff (1 = the policy's real durations).
	Scale float64
	// Concurrency is the most pushes in flight (default 32).
	Concurrency int
	// Tally records dead-lettered messages; may be nil.
	Tally *Tally
	// Logger receives one line per dead-lettered message and per error.
	Logger *slog.Logger

	mu       sync.Mutex
	attempts map[string]int // message id -> deliveries so far, until acked or dead-lettered
}

// Acked reports whether Pub/Sub push treats status as an ack: 102, 200,
// 201, 202 and 204; anything else is a nack.
func Acked(status int) bool {
	switch status {
	case 102, 200, 201, 202, 204:
		return true
	}
	return false
}

// Run delivers until ctx is done; it returns nil then, or the first pull error.
func (b *Bridge) Run(ctx context.Context) error {
	conc := b.Concurrency
	if conc <= 0 {
		conc = 32
	}
	if b.Logger == nil {
		b.Logger = slog.New(slog.DiscardHandler)
	}
	if b.HTTP == nil {
		b.HTTP = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc}}
		defer b.HTTP.CloseIdleConnections() // after wg.Wait below: no push is in flight
	}
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		// Wait for a free slot before pulling, so that pulled messages are
		// not held back while their ack deadline runs.
		select {
		case sem <- struct{}{}:
			<-sem
		case <-ctx.Done():
			return nil
		}
		free := conc - len(sem) // only this loop takes slots, so they stay free
		resp, err := b.Client.SubscriptionAdminClient.Pull(ctx, &pubsubpb.PullRequest{Subscription: b.Sub.Name, MaxMessages: int32(free)})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("devpipe: bridge pull %s: %w", b.Sub.Name, err)
		}
		for _, rm := range resp.GetReceivedMessages() {
			sem <- struct{}{}
			wg.Add(1)
			go func(rm *pubsubpb.ReceivedMessage) {
				defer wg.Done()
				backoff := b.deliver(ctx, rm)
				<-sem // a message waiting out its backoff does not hold a slot
				if backoff > 0 {
					b.release(ctx, rm.GetAckId(), backoff)
				}
			}(rm)
		}
	}
}

// pushEnvelope is Pub/Sub's push request body.
type pushEnvelope struct {
	Message         envelopeMessage `json:"message"`
	Subscription    string          `json:"subscription"`
	DeliveryAttempt int32           `json:"deliveryAttempt,omitempty"` // only with a dead-letter policy
}

type envelopeMessage struct {
	Data             []byte            `json:"data"`
	Attributes       map[string]string `json:"attributes,omitempty"`
	MessageID        string            `json:"messageId"`
	MessageIDSnake   string            `json:"message_id"`
	PublishTime      string            `json:"publishTime"`
	PublishTimeSnake string            `json:"publish_time"`
	OrderingKey      string            `json:"orderingKey,omitempty"`
}

// PushBody builds the push envelope of a received message.
func PushBody(sub string, rm *pubsubpb.ReceivedMessage) ([]byte, error) {
	m := rm.GetMessage()
	pt := m.GetPublishTime().AsTime().UTC().Format(time.RFC3339Nano)
	return json.Marshal(pushEnvelope{
		Message: envelopeMessage{Data: m.GetData(), Attributes: m.GetAttributes(), MessageID: m.GetMessageId(),
			MessageIDSnake: m.GetMessageId(), PublishTime: pt, PublishTimeSnake: pt, OrderingKey: m.GetOrderingKey()},
		Subscription:    sub,
		DeliveryAttempt: rm.GetDeliveryAttempt(),
	})
}

// attempt counts a delivery of id on the bridge's subscription and returns
// its number. The bridge counts per subscription, as Pub/Sub does: pstest's
// count (the envelope's deliveryAttempt, the ack id's suffix) covers every
// subscription of the topic.
func (b *Bridge) attempt(id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.attempts == nil {
		b.attempts = map[string]int{}
	}
	b.attempts[id]++
	return b.attempts[id]
}

// forget drops id's count once it left the subscription.
func (b *Bridge) forget(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.attempts, id)
}

// deliver pushes one message and acks, nacks or dead-letters it. It returns
// the backoff after which a nacked message must be released (0: none).
func (b *Bridge) deliver(ctx context.Context, rm *pubsubpb.ReceivedMessage) time.Duration {
	id := rm.GetMessage().GetMessageId()
	log := b.Logger.With("subscription", b.Sub.Name, "messageId", id)
	n := b.attempt(id)
	// The envelope carries the subscription's own count, and only with a
	// dead-letter policy, as Pub/Sub's does.
	delivery := &pubsubpb.ReceivedMessage{AckId: rm.GetAckId(), Message: rm.GetMessage()}
	if b.Sub.HasDLQ() {
		delivery.DeliveryAttempt = int32(n)
	}
	status, err := b.push(ctx, delivery)
	if ctx.Err() != nil {
		return 0 // shutting down: the message comes back after its ack deadline
	}
	if err == nil && Acked(status) {
		if err := b.Client.SubscriptionAdminClient.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: b.Sub.Name, AckIds: []string{rm.GetAckId()}}); err != nil && ctx.Err() == nil {
			log.Error("bridge: ack failed; the message will be delivered again", "error", err.Error())
			return 0
		}
		b.forget(id)
		return 0
	}
	if err != nil {
		log.Warn("bridge: push failed", "deliveryAttempt", n, "error", err.Error())
	}
	if b.Sub.HasDLQ() && n >= b.Sub.MaxAttempts {
		dlqID, err := deadLetter(ctx, b.Client, b.Sub, rm.GetMessage(), rm.GetAckId(), n)
		if err != nil {
			if ctx.Err() == nil {
				// Not acked: the message stays and is tried again, nothing is lost.
				log.Error("bridge: dead-lettering failed; the message stays on its subscription", "error", err.Error())
				return b.nack(ctx, rm, n)
			}
			return 0
		}
		b.forget(id)
		if b.Tally != nil {
			b.Tally.DeadLettered(b.Sub.Name, id)
		}
		log.Warn("bridge: dead-lettered", "deliveryAttempt", n, "dlqTopic", b.Sub.DLQTopic, "dlqMessageId", dlqID)
		return 0
	}
	return b.nack(ctx, rm, n)
}

// push POSTs the envelope and returns the HTTP status.
func (b *Bridge) push(ctx context.Context, rm *pubsubpb.ReceivedMessage) (int, error) {
	body, err := PushBody(b.Sub.Name, rm)
	if err != nil {
		return 0, fmt.Errorf("encode push envelope: %w", err)
	}
	timeout := b.Sub.AckDeadline
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, b.Endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("build push request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.HTTP.Do(req)
	if err != nil {
		return 0, fmt.Errorf("push to %s: %w", b.Endpoint, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// nack hides the message for its backoff and returns the backoff; the
// caller releases it when the backoff has passed (see release).
func (b *Bridge) nack(ctx context.Context, rm *pubsubpb.ReceivedMessage, n int) time.Duration {
	d := Backoff(b.Sub.MinBackoff, b.Sub.MaxBackoff, n, b.Scale)
	ack := []string{rm.GetAckId()}
	if d <= 0 {
		_ = b.Client.SubscriptionAdminClient.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: b.Sub.Name, AckIds: ack})
		return 0
	}
	// Invisible for at least the backoff, in whole seconds as the API counts,
	// so that pstest releases it by itself should release never run.
	_ = b.Client.SubscriptionAdminClient.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: b.Sub.Name, AckIds: ack, AckDeadlineSeconds: seconds(d)})
	return d
}

// release makes a nacked message available again once d has passed.
func (b *Bridge) release(ctx context.Context, ackID string, d time.Duration) {
	if sleep(ctx, d) {
		_ = b.Client.SubscriptionAdminClient.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: b.Sub.Name, AckIds: []string{ackID}})
	}
}

// sleep waits d or until ctx is done, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// deadLetter moves m, delivered on sub with ackID at attempt n, to sub's
// dead-letter topic as Pub/Sub does: it publishes it there with Pub/Sub's
// dead-letter attributes, then acks it on sub. It returns the dead letter's
// message id. When the publish fails nothing is acked: m stays on sub.
func deadLetter(ctx context.Context, client *pubsub.Client, sub SubscriptionTopology, m *pubsubpb.PubsubMessage, ackID string, n int) (string, error) {
	attrs := map[string]string{}
	maps.Copy(attrs, m.GetAttributes())
	attrs[AttrDLQDeliveryCount] = strconv.Itoa(n)
	attrs[AttrDLQSubscription] = sub.Name[strings.LastIndex(sub.Name, "/")+1:]
	attrs[AttrDLQProject] = strings.Split(sub.Name, "/")[1]
	attrs[AttrDLQPublishTime] = m.GetPublishTime().AsTime().UTC().Format(time.RFC3339Nano)
	resp, err := client.TopicAdminClient.Publish(ctx, &pubsubpb.PublishRequest{Topic: sub.DLQTopic,
		Messages: []*pubsubpb.PubsubMessage{{Data: m.GetData(), Attributes: attrs, OrderingKey: m.GetOrderingKey()}}})
	if err != nil {
		return "", fmt.Errorf("publish to %s: %w", sub.DLQTopic, err)
	}
	dlqID := strings.Join(resp.GetMessageIds(), ",")
	if err := client.SubscriptionAdminClient.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: sub.Name, AckIds: []string{ackID}}); err != nil {
		// The copy is in the DLQ; the source message comes back once more and
		// may be dead-lettered twice, which Pub/Sub also allows ("best effort").
		return dlqID, fmt.Errorf("ack %s after dead-lettering it as %s: %w", m.GetMessageId(), dlqID, err)
	}
	return dlqID, nil
}
