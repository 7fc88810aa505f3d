// Package envelope defines the consumer's view of one Pub/Sub message and
// decodes it, strictly, from a Pub/Sub push request body.
//
// Push envelope (cloud.google.com/pubsub/docs/push):
//
//	{"message": {"data": "<base64>", "attributes": {...}, "messageId": "...",
//	  "publishTime": "RFC 3339", "orderingKey": "..."},
//	 "subscription": "projects/P/subscriptions/S", "deliveryAttempt": N}
//
// Pub/Sub sends both camelCase and snake_case spellings of messageId and
// publishTime; either is accepted. deliveryAttempt is present only when the
// subscription has a dead-letter policy, which is how the consumer tells from
// the request alone whether a DLQ exists.
package envelope

import (
	"fmt"
	"time"

	"github.com/eventpipe/eventpipe/consumer/limits"
)

// Message is one Pub/Sub message as the consumer sees it, whether it came
// from a push request or a streaming pull.
type Message struct {
	// ID is the Pub/Sub message id: the transport-level dedupe key.
	ID string
	// Data is the decoded message payload (raw JSON bytes).
	Data []byte
	// Payload is Data as a JSON object, its values decoded on demand.
	Payload Payload
	// Attributes are the message attributes (never nil after decoding).
	Attributes map[string]string
	// PublishTime is when Pub/Sub accepted the message.
	PublishTime time.Time
	// OrderingKey is the message's ordering key, if any.
	OrderingKey string
	// Subscription is the full subscription name the message came from.
	Subscription string
	// DeliveryAttempt is the delivery count; 0 when Pub/Sub did not send it
	// (the subscription has no dead-letter policy).
	DeliveryAttempt int
}

// CheckIDs reports, as a *FieldError, an id of the message longer than
// limits.MaxIDBytes: its message id, ordering key or subscription.
func (m *Message) CheckIDs() error {
	for _, id := range []struct{ field, value string }{
		{"message.messageId", m.ID}, {"message.orderingKey", m.OrderingKey}, {"subscription", m.Subscription},
	} {
		if err := CheckID(id.field, id.value); err != nil {
			return err
		}
	}
	return nil
}

// CheckID reports an id longer than limits.MaxIDBytes as a *FieldError
// naming field.
func CheckID(field, id string) error {
	if len(id) <= limits.MaxIDBytes {
		return nil
	}
	return fieldError(field, fmt.Sprintf("is %d bytes long; ids are at most %d bytes", len(id), limits.MaxIDBytes),
		fmt.Sprintf("send an id of at most %d bytes", limits.MaxIDBytes))
}
