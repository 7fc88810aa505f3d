package components

import (
	"fmt"

	"github.com/eventpipe/eventpipe/alerts"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// PipelineArgs configures a Pipeline.
type PipelineArgs struct {
	// Stack is the validated stack the pipeline belongs to.
	Stack *spec.Stack
	// Spec is the validated pipeline.
	Spec *spec.Pipeline
}

// Pipeline composes one named pipeline of a stack: its source Topic, the
// Consumer service, one Subscription per entry of the spec's subscriptions
// map (push ones delivering to the consumer's /pubsub/push, pull ones
// readable by the consumer's account) and, when the consumer's store is
// Firestore, the FirestoreTTL policies of its collections (the pipeline's
// own: EVENTPIPE_COLLECTION_PREFIX and EVENTPIPE_STORE of its consumer name
// exactly the collections and database the policies cover), and (unless the
// pipeline opts out) its alerts.
type Pipeline struct {
	pulumi.ResourceState

	// Spec is the pipeline's validated spec.
	Spec *spec.Pipeline
	// Topic is the source topic.
	Topic *Topic
	// Consumer is the Cloud Run consumer.
	Consumer *Consumer
	// Subscriptions are keyed like the spec's subscriptions.
	Subscriptions map[string]*Subscription
	// TTL is nil when the store is not Firestore (bbolt, PostgreSQL and
	// memory stores need no TTL policy).
	TTL *FirestoreTTL
	// Alerts are the pipeline's metrics, alert policies and SLOs; nil when
	// the pipeline opted out of alerts.
	Alerts *alerts.Alerts
}

// NewPipeline declares the pipeline args.Spec under the logical name name.
func NewPipeline(ctx *pulumi.Context, name string, args *PipelineArgs, opts ...pulumi.ResourceOption) (*Pipeline, error) {
	st, p := args.Stack, args.Spec
	pl := &Pipeline{Spec: p, Subscriptions: map[string]*Subscription{}}
	if err := ctx.RegisterComponentResource(TypePipeline, name, pl, opts...); err != nil {
		return nil, fmt.Errorf("register pipeline component %s: %w", name, err)
	}
	parent := pulumi.Parent(pl)
	var err error
	pl.Topic, err = NewTopic(ctx, name, &TopicArgs{
		Project:          st.Project,
		Name:             p.Topic.Name,
		Labels:           st.Labels(p, spec.RoleSource),
		MessageRetention: *p.Topic.MessageRetention,
		Schema:           p.Topic.Schema,
		SchemaEncoding:   p.Topic.SchemaEncoding,
		KMSKeyName:       p.Topic.KMSKeyName,
	}, parent)
	if err != nil {
		return nil, err
	}
	pl.Consumer, err = NewConsumer(ctx, name, &ConsumerArgs{Stack: st, Pipeline: p}, parent)
	if err != nil {
		return nil, err
	}
	push := &PushTarget{
		Endpoint: pl.Consumer.URI.ApplyT(func(uri string) string { return uri + spec.PushPath }).(pulumi.StringOutput),
		Audience: p.Consumer.Audience,
		Service:  pl.Consumer.ServiceName,
		Location: st.Region,
	}
	for _, sp := range p.SortedSubscriptions() {
		sa := &SubscriptionArgs{Stack: st, Pipeline: p, Spec: sp, Topic: pl.Topic.ID}
		if sp.Push() {
			sa.Push = push
		} else {
			sa.Subscribers = map[string]pulumi.StringInput{"consumer": pl.Consumer.Account.Member}
		}
		sub, err := NewSubscription(ctx, sp.Name, sa, parent)
		if err != nil {
			return nil, err
		}
		pl.Subscriptions[sp.Key] = sub
	}
	if project, database, ok := p.Consumer.FirestoreDatabase(); ok {
		pl.TTL, err = NewFirestoreTTL(ctx, name, &FirestoreTTLArgs{
			Project:     project,
			Database:    database,
			Collections: TTLCollections(p.Consumer.CollectionPrefix),
			Field:       spec.ExpiryField,
		}, parent)
		if err != nil {
			return nil, err
		}
	}
	if p.Alerts.Enabled() {
		pl.Alerts, err = alerts.New(ctx, name, alerts.Args{Target: st.AlertTarget(p), Config: st.Alerts.Thresholds}, parent)
		if err != nil {
			return nil, err
		}
	}

	outputs := pulumi.Map{"topic": pl.Topic.Name, "consumerUri": pl.Consumer.URI}
	subs := pulumi.StringArray{}
	for _, key := range spec.SortedKeys(pl.Subscriptions) {
		subs = append(subs, pl.Subscriptions[key].Name)
	}
	outputs["subscriptions"] = subs
	if err := ctx.RegisterResourceOutputs(pl, outputs); err != nil {
		return nil, fmt.Errorf("register pipeline outputs %s: %w", name, err)
	}
	return pl, nil
}
