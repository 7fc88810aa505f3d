package components

import (
	"errors"
	"fmt"

	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/pubsub"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// TopicArgs configure a Topic on its own (a Pipeline declares its topic from
// PipelineArgs.Topic).
type TopicArgs struct {
	// Project is the GCP project id the topic is created in.
	Project pulumi.StringInput `pulumi:"project"`
	// Environment labels the topic eventpipe_env (default: the stack name).
	Environment string `pulumi:"environment,optional"`
	// Labels are extra GCP labels on the topic.
	Labels map[string]string `pulumi:"labels,optional"`
	// Protect protects the topic from deletion and replacement (default true).
	Protect *bool `pulumi:"protect,optional"`
	// Topic is the topic's settings (existing is not allowed: this component declares the topic).
	Topic spec.Topic `pulumi:"topic"`
	// Apis makes every resource wait for a Project's apis output: the APIs enabled and propagated.
	Apis pulumi.StringArrayInput `pulumi:"apis,optional"`
}

// Topic is a pipeline's source topic: a pubsub.Topic with labels, message
// retention (so messages can be replayed with seek), optionally a schema
// publishers must satisfy and a customer-managed encryption key, and
// roles/pubsub.publisher for the named producers (IAMMember: other members
// of the topic's policy are kept). It is protected from deletion unless
// protect is false.
type Topic struct {
	pulumi.ResourceState

	// ID is the full topic name, projects/P/topics/T: what a subscription's topic takes.
	ID pulumi.StringOutput `pulumi:"topicId"`
	// Name is the topic id.
	Name pulumi.StringOutput `pulumi:"name"`

	// Topic is the Pub/Sub topic.
	Topic *pubsub.Topic
}

// NewTopic validates args and declares a Topic named name (also its topic
// id unless args set one).
func NewTopic(ctx *pulumi.Context, name string, args *TopicArgs, opts ...pulumi.ResourceOption) (_ *Topic, err error) {
	defer declaredAt(calledAt(), &err)
	if args == nil {
		return nil, fmt.Errorf("topic %s: no arguments; set at least project", name)
	}
	sc := newScope(ctx, name, args.Project, nil, "", args.Environment, args.Labels, args.Protect)
	if args.Topic.Existing != nil {
		return nil, argsError("topic", name, spec.Errors{{Path: "topic.existing", Value: "(set)",
			Allowed: "only in a Pipeline or Subscription", Fix: "remove it: a Topic component declares its topic; subscribe to an existing topic with Subscription or Pipeline"}})
	}
	sc.pipeline.Topic = sc.d.topic(&args.Topic)
	if errs := spec.ValidateTopic(sc.stack, sc.pipeline, "topic"); errs != nil {
		return nil, argsError("topic", name, errs)
	}
	return declareTopic(ctx, name, sc, withAPIs(opts, args.Apis))
}

// declareTopic declares the topic of sc under name.
func declareTopic(ctx *pulumi.Context, name string, sc *scope, opts []pulumi.ResourceOption) (*Topic, error) {
	t := &Topic{}
	if err := register(ctx, TypeTopic, name, t, opts); err != nil {
		return nil, fmt.Errorf("register topic component %s: %w", name, err)
	}
	st := &sc.pipeline.Topic
	ta := &pubsub.TopicArgs{
		Project:                  sc.project,
		Name:                     pulumi.String(st.Name),
		Labels:                   sc.labels(spec.RoleSource),
		MessageRetentionDuration: pulumi.String(spec.Seconds(spec.Length(st.MessageRetention))),
	}
	if st.Schema != "" {
		ta.SchemaSettings = &pubsub.TopicSchemaSettingsArgs{
			Schema:   pulumi.String(st.Schema),
			Encoding: pulumi.String(st.SchemaEncoding),
		}
	}
	if key := spec.Text(st.KMSKeyName); key != "" {
		ta.KmsKeyName = sc.d.str(key)
	}
	topic, err := pubsub.NewTopic(ctx, name, ta, pulumi.Parent(t), sc.protect())
	if err != nil {
		return nil, fmt.Errorf("declare topic %s: %w", st.Name, err)
	}
	t.Topic, t.ID, t.Name = topic, topic.ID().ToStringOutput(), topic.Name
	if err := grantPublishers(ctx, name, sc, t.ID, pulumi.Parent(t)); err != nil {
		return nil, err
	}
	if err := ctx.RegisterResourceOutputs(t, outputs(t)); err != nil {
		return nil, fmt.Errorf("register topic outputs %s: %w", name, err)
	}
	return t, nil
}

// grantPublishers grants the topic's publishers roles/pubsub.publisher on
// topic (a full name), one IAMMember per member, named after it so the
// order of the list does not matter.
func grantPublishers(ctx *pulumi.Context, name string, sc *scope, topic pulumi.StringInput, parent pulumi.ResourceOption) error {
	var errs []error
	for _, member := range sc.pipeline.Topic.Publishers {
		_, err := pubsub.NewTopicIAMMember(ctx, name+"-publisher-"+member, &pubsub.TopicIAMMemberArgs{
			Topic:  topic,
			Role:   pulumi.String(RolePublisher),
			Member: pulumi.String(member),
		}, parent)
		if err != nil {
			errs = append(errs, fmt.Errorf("grant %s publisher on topic %s: %w", member, name, err))
		}
	}
	return errors.Join(errs...)
}
