// Package devpipe runs a stack's pipelines on one machine with no cloud:
// Google's pstest server holds the topology the stack declares (topics,
// subscriptions, dead-letter and retry policies, DLQ subscriptions), one
// consumer per pipeline (the code of cmd/consumer, via server.Run) writes to
// an embedded bbolt store, a push bridge delivers push subscriptions to the
// consumers as Pub/Sub does, and a scenario checks that nothing is lost.
package devpipe

import (
	"context"
	"fmt"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pubsubpb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/eventpipe/eventpipe/internal/gcpname"
	"github.com/eventpipe/eventpipe/spec"
)

// Topology is the Pub/Sub part of a stack: what the components declare in
// the cloud, declared in pstest instead.
type Topology struct {
	// Project is the stack's project id; every name below is in it.
	Project string
	// Pipelines are in name order.
	Pipelines []PipelineTopology
}

// PipelineTopology is one pipeline's topic and subscriptions.
type PipelineTopology struct {
	// Name is the pipeline key.
	Name string
	// Topic is the full topic name: projects/P/topics/T.
	Topic string
	// Existing is true when the topic belongs to another team (topic.existing):
	// locally it is created as a stand-in, once however many pipelines read it.
	Existing bool
	// Retention is the topic's message retention (0: the server's default).
	Retention time.Duration
	// Labels are the topic's labels, as the components give them.
	Labels map[string]string
	// Subscriptions are in key order.
	Subscriptions []SubscriptionTopology
}

// SubscriptionTopology is one subscription with its dead-letter queue.
type SubscriptionTopology struct {
	// Key is the subscription key in the pipeline.
	Key string
	// Name is the full subscription name: projects/P/subscriptions/S.
	Name string
	// Push is true for push delivery (the bridge delivers it), false for pull.
	Push bool
	// AckDeadline is the subscription's ack deadline (the push timeout).
	AckDeadline time.Duration
	// MinBackoff and MaxBackoff are the retry policy.
	MinBackoff, MaxBackoff time.Duration
	// Retention is how long unacked messages are kept; DLQRetention the
	// same for the DLQ subscription.
	Retention, DLQRetention time.Duration
	// MaxAttempts is the dead-letter policy's maximum delivery attempts; 0
	// when the subscription opted out of its DLQ.
	MaxAttempts int
	// PstestMaxAttempts, when not 0, is the maxDeliveryAttempts declared in
	// pstest instead of MaxAttempts (ForPstest: the local pipeline counts
	// the attempts itself).
	PstestMaxAttempts int
	// DLQTopic and DLQSubscription are full names; empty without a DLQ.
	DLQTopic, DLQSubscription string
	// Filter, Ordering and ExactlyOnce are copied from the spec.
	Filter      string
	Ordering    bool
	ExactlyOnce bool
	// Labels and DLQLabels are the subscription's and its dead-letter topic's and
	// subscription's labels, as the components give them.
	Labels, DLQLabels map[string]string
	// PushEndpoint, PushAccount and PushAudience are the push configuration the
	// components declare (the consumer's Cloud Run URL, the push account, the OIDC
	// audience): declared in pstest, which does not push, as the stack holds them; the
	// bridge delivers to the local consumer instead. Empty for pull.
	PushEndpoint, PushAccount, PushAudience string
}

// HasDLQ reports whether the subscription dead-letters.
func (s SubscriptionTopology) HasDLQ() bool { return s.MaxAttempts > 0 }

// FromSpec builds the topology of a validated stack (spec.Load fills in
// every default, so the values here are the ones the components declare).
func FromSpec(st *spec.Stack) Topology {
	name := func(kind, id string) string { return "projects/" + st.Project + "/" + kind + "/" + id }
	t := Topology{Project: st.Project}
	for _, p := range st.SortedPipelines() {
		pt := PipelineTopology{Name: p.Name, Topic: st.TopicName(p), Existing: spec.Text(p.Topic.Existing) != "", Retention: spec.Length(p.Topic.MessageRetention),
			Labels: st.Labels(p, spec.RoleSource)}
		for _, s := range p.SortedSubscriptions() {
			sub := SubscriptionTopology{
				Key: s.Key, Name: name("subscriptions", s.Name), Push: s.Push(),
				AckDeadline: spec.Length(s.AckDeadline), MinBackoff: spec.Length(s.MinBackoff), MaxBackoff: spec.Length(s.MaxBackoff),
				Retention: spec.Length(s.Retention), DLQRetention: spec.Length(s.DeadLetter.Retention),
				Filter: s.Filter, Ordering: s.Ordering, ExactlyOnce: s.ExactlyOnce,
				Labels: st.SubscriptionLabels(p, s), DLQLabels: st.Labels(p, spec.RoleDLQ),
			}
			if s.Push() {
				sub.PushEndpoint = s.PushEndpoint
				if sub.PushEndpoint == "" {
					sub.PushEndpoint = gcpname.RunServiceURL(p.Consumer.ServiceName, st.ProjectNumber, st.Region) + spec.PushPath
				}
				sub.PushAccount, sub.PushAudience = st.ServiceAccountEmail(p.PushAccountID(s)), p.Consumer.Audience
			}
			if s.HasDLQ() && s.MaxDeliveryAttempts != nil {
				sub.MaxAttempts = *s.MaxDeliveryAttempts
				sub.DLQTopic = name("topics", s.DLQTopicName())
				sub.DLQSubscription = name("subscriptions", s.DLQSubscriptionName())
			}
			pt.Subscriptions = append(pt.Subscriptions, sub)
		}
		t.Pipelines = append(t.Pipelines, pt)
	}
	return t
}

// Declare creates every topic and subscription of t through client's admin
// API (t must fit pstest: see ForPstest): DLQ topics and their never-expiring subscriptions first (a dead-letter
// policy must name an existing topic), then the pipeline topics and their
// subscriptions with the dead-letter and retry policies of the spec.
func Declare(ctx context.Context, client *pubsub.Client, t Topology) error {
	created := map[string]bool{}
	createTopic := func(name string, retention time.Duration, labels map[string]string) error {
		if created[name] {
			return nil
		}
		if _, err := client.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: name, MessageRetentionDuration: durationOrNil(retention), Labels: labels}); err != nil {
			return fmt.Errorf("devpipe: create topic %s: %w", name, err)
		}
		created[name] = true
		return nil
	}
	createSub := func(s *pubsubpb.Subscription) error {
		if _, err := client.SubscriptionAdminClient.CreateSubscription(ctx, s); err != nil {
			return fmt.Errorf("devpipe: create subscription %s: %w", s.Name, err)
		}
		return nil
	}
	for _, p := range t.Pipelines {
		labels := p.Labels
		if p.Existing {
			labels = nil // another team's topic: the stack does not declare it
		}
		if err := createTopic(p.Topic, p.Retention, labels); err != nil {
			return err
		}
		for _, s := range p.Subscriptions {
			pb := &pubsubpb.Subscription{
				Name: s.Name, Topic: p.Topic, AckDeadlineSeconds: int32(s.AckDeadline / time.Second),
				RetryPolicy: &pubsubpb.RetryPolicy{MinimumBackoff: durationpb.New(s.MinBackoff), MaximumBackoff: durationpb.New(s.MaxBackoff)},
				Filter:      s.Filter, EnableMessageOrdering: s.Ordering, EnableExactlyOnceDelivery: s.ExactlyOnce,
				MessageRetentionDuration: durationOrNil(s.Retention),
				// The components never let a subscription expire; neither do we.
				ExpirationPolicy: &pubsubpb.ExpirationPolicy{},
				Labels:           s.Labels,
			}
			if s.Push {
				pb.PushConfig = &pubsubpb.PushConfig{PushEndpoint: s.PushEndpoint,
					AuthenticationMethod: &pubsubpb.PushConfig_OidcToken_{OidcToken: &pubsubpb.PushConfig_OidcToken{ServiceAccountEmail: s.PushAccount, Audience: s.PushAudience}}}
			}
			if s.HasDLQ() {
				// As the components declare them: the topic and the never-expiring
				// subscription keep messages for the DLQ retention, acked ones too.
				if err := createTopic(s.DLQTopic, s.DLQRetention, s.DLQLabels); err != nil {
					return err
				}
				if err := createSub(&pubsubpb.Subscription{Name: s.DLQSubscription, Topic: s.DLQTopic, Labels: s.DLQLabels,
					AckDeadlineSeconds: int32(dlqAckDeadline / time.Second), ExpirationPolicy: &pubsubpb.ExpirationPolicy{},
					MessageRetentionDuration: durationOrNil(s.DLQRetention), RetainAckedMessages: true}); err != nil {
					return err
				}
				attempts := s.MaxAttempts
				if s.PstestMaxAttempts != 0 {
					attempts = s.PstestMaxAttempts
				}
				pb.DeadLetterPolicy = &pubsubpb.DeadLetterPolicy{DeadLetterTopic: s.DLQTopic, MaxDeliveryAttempts: int32(attempts)}
			}
			if err := createSub(pb); err != nil {
				return err
			}
		}
	}
	return nil
}

// durationOrNil is d as a proto duration, or nil (the server's default) for 0.
func durationOrNil(d time.Duration) *durationpb.Duration {
	if d <= 0 {
		return nil
	}
	return durationpb.New(d)
}
