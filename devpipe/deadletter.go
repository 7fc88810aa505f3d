package devpipe

import (
	"context"
	"log/slog"

	pubsubpb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// deadLetterHold is how long a pulled message whose last attempt failed stays
// out of delivery while it is dead-lettered (Pub/Sub's longest ack deadline).
const deadLetterHold = 600

// deadLetterRetry is how soon a message whose dead-lettering failed is
// delivered again; its next failed attempt dead-letters it again.
const deadLetterRetry = 1

// deadLetterPulled moves the pulled messages whose last attempt failed, as
// pullRetry queues them, to their dead-letter topics (deadLetter) and counts
// them, until ctx is done.
func (e *Env) deadLetterPulled(ctx context.Context, r *pullRetry, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	subs := e.fake.Client.SubscriptionAdminClient
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.wake:
		}
		for _, j := range r.take() {
			l := log.With("subscription", j.sub.Name, "messageId", j.msgID, "deliveryAttempt", j.attempt)
			// Out of delivery first: the consumer's nack was taken out of its request, so
			// the message is out only until the deadline of its delivery.
			_ = subs.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: j.sub.Name, AckIds: []string{j.ackID}, AckDeadlineSeconds: deadLetterHold})
			m := e.fake.Server.Message(j.msgID)
			if m == nil { // pstest knows every message it delivered
				l.Error("dead-lettering: pstest has no such message; it stays on its subscription")
				r.done(j)
				continue
			}
			pm := &pubsubpb.PubsubMessage{Data: m.Data, Attributes: m.Attributes, MessageId: m.ID,
				PublishTime: timestamppb.New(m.PublishTime), OrderingKey: m.OrderingKey}
			dlqID, err := deadLetter(ctx, e.fake.Client, j.sub, pm, j.ackID, j.attempt)
			r.done(j)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				// Delivered again soon; its next failed attempt is dead-lettered again.
				l.Error("dead-lettering failed; the message stays on its subscription", "error", err.Error())
				_ = subs.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: j.sub.Name, AckIds: []string{j.ackID}, AckDeadlineSeconds: deadLetterRetry})
				continue
			}
			e.Tally.DeadLettered(j.sub.Name, j.msgID)
			l.Warn("dead-lettered", "dlqTopic", j.sub.DLQTopic, "dlqMessageId", dlqID)
		}
	}
}
