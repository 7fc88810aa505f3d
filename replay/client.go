package replay

import (
	"context"

	"cloud.google.com/go/pubsub/v2"
	pubsubpb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

// ClientAPI adapts a Pub/Sub v2 client to [API]. Replay publishes with the
// synchronous Publish RPC rather than the batching Publisher, so that each
// message's publish is known to have succeeded before its DLQ copy is acked.
type ClientAPI struct {
	// Client is the Pub/Sub client; its project does not constrain the fully
	// qualified subscription and topic names passed in Options.
	Client *pubsub.Client
}

// Pull pulls from a subscription.
func (c ClientAPI) Pull(ctx context.Context, req *pubsubpb.PullRequest) (*pubsubpb.PullResponse, error) {
	return c.Client.SubscriptionAdminClient.Pull(ctx, req)
}

// Acknowledge acks messages on a subscription.
func (c ClientAPI) Acknowledge(ctx context.Context, req *pubsubpb.AcknowledgeRequest) error {
	return c.Client.SubscriptionAdminClient.Acknowledge(ctx, req)
}

// ModifyAckDeadline changes the ack deadline of messages (0 releases them).
func (c ClientAPI) ModifyAckDeadline(ctx context.Context, req *pubsubpb.ModifyAckDeadlineRequest) error {
	return c.Client.SubscriptionAdminClient.ModifyAckDeadline(ctx, req)
}

// Publish publishes messages to a topic.
func (c ClientAPI) Publish(ctx context.Context, req *pubsubpb.PublishRequest) (*pubsubpb.PublishResponse, error) {
	return c.Client.TopicAdminClient.Publish(ctx, req)
}
