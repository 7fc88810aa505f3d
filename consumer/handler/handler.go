// Package handler makes the consumer an idempotency gateway in front of a
// team's own container (the handler), whatever its language: see
// docs/handlers.md for the contract.
//
// Two kinds of traffic reach the handler through the consumer:
//
//   - Pub/Sub deliveries of routes that name the handler (a lease route
//     whose action has no URL of its own): the consumer's lease machinery
//     (package process) POSTs a Delivery to DeliveryPath(route) once per
//     logical event, with an Idempotency-Key header.
//   - API requests: every request whose path is not one of the consumer's
//     own is proxied to the handler by a Gateway; a POST or PATCH carrying
//     Idempotency-Key is forwarded at most once per key (the IETF HTTPAPI
//     draft "The Idempotency-Key HTTP Header Field") and its response
//     stored and replayed.
package handler

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/consumer/settings"
)

// URLEnv names the environment variable with the handler's base URL, e.g.
// http://localhost:8081 (the handler container beside the consumer).
const URLEnv = settings.HandlerURL

// IdempotencyKeyHeader carries the key, on deliveries and API requests.
const IdempotencyKeyHeader = "Idempotency-Key"

// ReservedPrefix is the path prefix of the consumer's deliveries to the
// handler. The gateway never proxies a request under it, so a handler can
// trust that requests there come from the consumer.
const ReservedPrefix = "/eventpipe/"

// DeliveryPath is the path of the handler that receives route's events.
func DeliveryPath(route string) string { return ReservedPrefix + "deliveries/" + route }

// DeliveryURL is base (the handler URL) joined with DeliveryPath(route).
func DeliveryURL(base, route string) string {
	return strings.TrimRight(base, "/") + DeliveryPath(route)
}

// CallbackPath is the path of the handler that receives route's callbacks
// (a receipt route without a target of its own).
func CallbackPath(route string) string { return ReservedPrefix + "callbacks/" + route }

// CallbackURL is base (the handler URL) joined with CallbackPath(route).
func CallbackURL(base, route string) string {
	return strings.TrimRight(base, "/") + CallbackPath(route)
}

// Callback is the JSON body of a callback forwarded to the handler.
type Callback struct {
	// IdempotencyKey is the Idempotency-Key header's value: the callback
	// id. A callback id reaches the handler once but in the cases
	// docs/handlers.md names (an answer of 5xx, 408, 425 or 429, a lost
	// connection, a call cut at its bound, a consumer that died).
	IdempotencyKey string `json:"idempotencyKey"`
	// Route names the callback route (/callbacks/{route}).
	Route string `json:"route"`
	// ReceivedAt is when the consumer first received this callback id.
	ReceivedAt time.Time `json:"receivedAt"`
	// Callback is the callback's body, unchanged.
	Callback json.RawMessage `json:"callback"`
	// Fields are the route's output fields.
	Fields map[string]any `json:"fields"`
}

// ParseURL checks a handler URL: http(s), a host, no query or fragment.
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%s=%q is not an http(s) base URL (fix: use the handler container's address, e.g. http://localhost:8081)", URLEnv, raw)
	}
	return u, nil
}

// Delivery is the JSON body of a delivery to the handler.
type Delivery struct {
	// IdempotencyKey is the Idempotency-Key header's value: the lease
	// record of (route, logical event). The same event always has the same
	// key, across redeliveries and consumer instances.
	IdempotencyKey string `json:"idempotencyKey"`
	// Route names the route that matched the event.
	Route string `json:"route"`
	// Attempt is the attempt number (the Eventpipe-Attempt header): the
	// claims of the event so far, this one included (a retried, cut or
	// crashed one counts).
	Attempt int64 `json:"attempt"`
	// MessageID, PublishTime, OrderingKey, Subscription and
	// DeliveryAttempt describe the Pub/Sub message (DeliveryAttempt is 0
	// when the subscription has no dead-letter policy).
	MessageID       string    `json:"messageId"`
	PublishTime     time.Time `json:"publishTime"`
	OrderingKey     string    `json:"orderingKey,omitempty"`
	Subscription    string    `json:"subscription,omitempty"`
	DeliveryAttempt int       `json:"deliveryAttempt"`
	// Attributes are the message's attributes (never null).
	Attributes map[string]string `json:"attributes"`
	// Event is the message payload, unchanged.
	Event json.RawMessage `json:"event"`
	// Fields are the route's output fields.
	Fields map[string]any `json:"fields"`
}

// NewDelivery builds the delivery of msg for a handler call.
func NewDelivery(key, route string, attempt int64, msg *envelope.Message, fields map[string]any) Delivery {
	attrs := msg.Attributes
	if attrs == nil {
		attrs = map[string]string{}
	}
	if fields == nil {
		fields = map[string]any{}
	}
	return Delivery{IdempotencyKey: key, Route: route, Attempt: attempt, MessageID: msg.ID, PublishTime: msg.PublishTime,
		OrderingKey: msg.OrderingKey, Subscription: msg.Subscription, DeliveryAttempt: msg.DeliveryAttempt,
		Attributes: attrs, Event: json.RawMessage(msg.Data), Fields: fields}
}
