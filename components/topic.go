package components

import (
	"fmt"

	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/pubsub"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// TopicArgs configures a Topic.
type TopicArgs struct {
	// Project is the GCP project id.
	Project string
	// Name is the topic id.
	Name string
	// Labels go on the topic.
	Labels map[string]string
	// MessageRetention keeps messages for replay and seek.
	MessageRetention spec.Duration
	// Schema is an optional projects/P/schemas/S the topic enforces.
	Schema string
	// SchemaEncoding is JSON or BINARY (used with Schema).
	SchemaEncoding string
	// KMSKeyName is an optional CMEK key that encrypts messages at rest.
	KMSKeyName string
}

// Topic is a pipeline's source topic: a pubsub.Topic with labels, message
// retention (so messages can be replayed with seek), and optionally a schema
// the publisher must satisfy and a customer-managed encryption key.
type Topic struct {
	pulumi.ResourceState

	// Topic is the Pub/Sub topic.
	Topic *pubsub.Topic
	// ID is the full topic name, projects/P/topics/T.
	ID pulumi.StringOutput
	// Name is the topic id.
	Name pulumi.StringOutput
}

// NewTopic declares a Topic named name.
func NewTopic(ctx *pulumi.Context, name string, args *TopicArgs, opts ...pulumi.ResourceOption) (*Topic, error) {
	t := &Topic{}
	if err := ctx.RegisterComponentResource(TypeTopic, name, t, opts...); err != nil {
		return nil, fmt.Errorf("register topic component %s: %w", name, err)
	}
	ta := &pubsub.TopicArgs{
		Project:                  pulumi.String(args.Project),
		Name:                     pulumi.String(args.Name),
		Labels:                   pulumi.ToStringMap(args.Labels),
		MessageRetentionDuration: pulumi.String(spec.Seconds(args.MessageRetention.D)),
	}
	if args.Schema != "" {
		ta.SchemaSettings = &pubsub.TopicSchemaSettingsArgs{
			Schema:   pulumi.String(args.Schema),
			Encoding: pulumi.String(args.SchemaEncoding),
		}
	}
	if args.KMSKeyName != "" {
		ta.KmsKeyName = pulumi.String(args.KMSKeyName)
	}
	topic, err := pubsub.NewTopic(ctx, name, ta, pulumi.Parent(t))
	if err != nil {
		return nil, fmt.Errorf("declare topic %s: %w", args.Name, err)
	}
	t.Topic, t.ID, t.Name = topic, topic.ID().ToStringOutput(), topic.Name
	if err := ctx.RegisterResourceOutputs(t, pulumi.Map{"id": t.ID, "name": t.Name}); err != nil {
		return nil, fmt.Errorf("register topic outputs %s: %w", name, err)
	}
	return t, nil
}
