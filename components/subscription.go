package components

import (
	"fmt"
	"strings"

	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/cloudrunv2"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/pubsub"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/serviceaccount"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// SubscriptionArgs configures a Subscription. Spec must come from a validated
// spec.Stack (spec.Load fills every default).
type SubscriptionArgs struct {
	// Stack supplies project, environment and the Pub/Sub service agent.
	Stack *spec.Stack
	// Pipeline is the pipeline the subscription belongs to.
	Pipeline *spec.Pipeline
	// Spec is the subscription's validated settings.
	Spec *spec.Subscription
	// Topic is the full name of the source topic.
	Topic pulumi.StringInput
	// Push is the delivery target; required when Spec is a push subscription.
	Push *PushTarget
	// Subscribers are members (serviceAccount:…) granted roles/pubsub.subscriber
	// on the subscription so they can pull from it, keyed by a short stable
	// name that becomes part of the grant's resource name.
	Subscribers map[string]pulumi.StringInput
}

// PushTarget is the Cloud Run service a push subscription delivers to.
type PushTarget struct {
	// Endpoint is the https URL Pub/Sub POSTs to (…/pubsub/push).
	Endpoint pulumi.StringInput
	// Audience is the OIDC token audience the consumer checks.
	Audience string
	// Service is the Cloud Run service name the push account may invoke.
	Service pulumi.StringInput
	// Location is the service's region.
	Location string
}

// Subscription is one subscription on a topic, push or pull, with everything
// reliable delivery needs:
//
//   - a dead-letter topic <subscription>.dlq and a dead-letter policy
//     (maxDeliveryAttempts), so poison messages stop being redelivered;
//   - a subscription on the dead-letter topic that never expires, because a
//     topic without subscriptions silently drops what is published to it;
//   - the Pub/Sub service agent's roles/pubsub.publisher on the DLQ topic and
//     roles/pubsub.subscriber on this subscription, without which
//     dead-lettering silently fails (IAMMember: other members are kept);
//   - an explicit retry policy (without one Pub/Sub redelivers at once) and
//     expiration "never" (an idle subscription would otherwise be deleted
//     after 31 days);
//   - for push: a dedicated push service account whose OIDC token (with an
//     explicit audience) authenticates every request, roles/run.invoker for it
//     on the target service, and token creator for the service agent on it.
//
// A DLQ opt-out (spec DeadLetter.OptOut) drops the dead-letter resources and
// records the opt-out and its reason as labels so policies can see it.
type Subscription struct {
	pulumi.ResourceState

	// Subscription is the source subscription.
	Subscription *pubsub.Subscription
	// DeadLetterTopic is the DLQ topic (nil on opt-out).
	DeadLetterTopic *pubsub.Topic
	// DeadLetterSubscription keeps the DLQ topic's messages (nil on opt-out).
	DeadLetterSubscription *pubsub.Subscription
	// PushAccount is the push service account (nil for pull).
	PushAccount *serviceaccount.Account
	// Name is the subscription id.
	Name pulumi.StringOutput
}

// NewSubscription declares a Subscription named name.
func NewSubscription(ctx *pulumi.Context, name string, args *SubscriptionArgs, opts ...pulumi.ResourceOption) (*Subscription, error) {
	st, p, sp := args.Stack, args.Pipeline, args.Spec
	if sp.Push() && args.Push == nil {
		return nil, fmt.Errorf("subscription %s: push delivery needs a PushTarget", sp.Name)
	}
	if sp.Push() && args.Push.Audience == "" {
		return nil, fmt.Errorf("subscription %s: push delivery needs an explicit OIDC audience", sp.Name)
	}
	s := &Subscription{}
	if err := ctx.RegisterComponentResource(TypeSubscription, name, s, opts...); err != nil {
		return nil, fmt.Errorf("register subscription component %s: %w", name, err)
	}
	parent := pulumi.Parent(s)
	project := pulumi.String(st.Project)
	agent := pulumi.String(st.PubSubServiceAgent())

	sa := &pubsub.SubscriptionArgs{
		Project:                  project,
		Name:                     pulumi.String(sp.Name),
		Topic:                    args.Topic,
		Labels:                   pulumi.ToStringMap(st.SubscriptionLabels(p, sp)),
		AckDeadlineSeconds:       pulumi.Int(int(sp.AckDeadline.D.Seconds())),
		MessageRetentionDuration: pulumi.String(spec.Seconds(sp.Retention.D)),
		RetryPolicy: &pubsub.SubscriptionRetryPolicyArgs{
			MinimumBackoff: pulumi.String(spec.Seconds(sp.MinBackoff.D)),
			MaximumBackoff: pulumi.String(spec.Seconds(sp.MaxBackoff.D)),
		},
		// ttl "" means never: an idle subscription is not deleted after 31 days.
		ExpirationPolicy:          &pubsub.SubscriptionExpirationPolicyArgs{Ttl: pulumi.String("")},
		EnableMessageOrdering:     pulumi.Bool(sp.Ordering),
		EnableExactlyOnceDelivery: pulumi.Bool(sp.ExactlyOnce),
	}
	if sp.Filter != "" {
		sa.Filter = pulumi.String(sp.Filter)
	}
	var deps []pulumi.Resource

	if sp.HasDLQ() {
		dlqLabels := st.Labels(p, spec.RoleDLQ)
		dlqRetention := pulumi.String(spec.Seconds(sp.DeadLetter.Retention.D))
		topic, err := pubsub.NewTopic(ctx, sp.Name+"-dlq", &pubsub.TopicArgs{
			Project:                  project,
			Name:                     pulumi.String(sp.DLQTopicName()),
			Labels:                   pulumi.ToStringMap(dlqLabels),
			MessageRetentionDuration: dlqRetention,
		}, parent)
		if err != nil {
			return nil, fmt.Errorf("declare dead-letter topic of %s: %w", sp.Name, err)
		}
		s.DeadLetterTopic = topic
		s.DeadLetterSubscription, err = pubsub.NewSubscription(ctx, sp.Name+"-dlq", &pubsub.SubscriptionArgs{
			Project:                  project,
			Name:                     pulumi.String(sp.DLQSubscriptionName()),
			Topic:                    topic.ID(),
			Labels:                   pulumi.ToStringMap(dlqLabels),
			AckDeadlineSeconds:       pulumi.Int(int(spec.DefaultPullAckDeadline.Seconds())),
			MessageRetentionDuration: dlqRetention,
			RetainAckedMessages:      pulumi.Bool(true),
			ExpirationPolicy:         &pubsub.SubscriptionExpirationPolicyArgs{Ttl: pulumi.String("")},
		}, parent)
		if err != nil {
			return nil, fmt.Errorf("declare dead-letter subscription of %s: %w", sp.Name, err)
		}
		publisher, err := pubsub.NewTopicIAMMember(ctx, sp.Name+"-dlq-agent-publisher", &pubsub.TopicIAMMemberArgs{
			Project: project,
			Topic:   topic.Name,
			Role:    pulumi.String(RolePublisher),
			Member:  agent,
		}, parent)
		if err != nil {
			return nil, fmt.Errorf("grant service agent publisher on %s: %w", sp.DLQTopicName(), err)
		}
		deps = append(deps, publisher)
		sa.DeadLetterPolicy = &pubsub.SubscriptionDeadLetterPolicyArgs{
			DeadLetterTopic:     topic.ID(),
			MaxDeliveryAttempts: pulumi.Int(*sp.MaxDeliveryAttempts),
		}
	}

	if sp.Push() {
		account, err := serviceaccount.NewAccount(ctx, sp.Name+"-push", &serviceaccount.AccountArgs{
			Project:     project,
			AccountId:   pulumi.String(p.PushAccountID(sp)),
			DisplayName: pulumi.String("eventpipe push " + sp.Name),
			Description: pulumi.String("Signs the OIDC tokens Pub/Sub sends with push deliveries of " + sp.Name),
		}, parent)
		if err != nil {
			return nil, fmt.Errorf("declare push service account of %s: %w", sp.Name, err)
		}
		s.PushAccount = account
		tokenCreator, err := serviceaccount.NewIAMMember(ctx, sp.Name+"-push-agent-token-creator", &serviceaccount.IAMMemberArgs{
			ServiceAccountId: account.Name,
			Role:             pulumi.String(RoleTokenCreator),
			Member:           agent,
		}, parent)
		if err != nil {
			return nil, fmt.Errorf("grant service agent token creator on %s: %w", sp.Name, err)
		}
		invoker, err := cloudrunv2.NewServiceIamMember(ctx, sp.Name+"-push-invoker", &cloudrunv2.ServiceIamMemberArgs{
			Project:  project,
			Location: pulumi.String(args.Push.Location),
			Name:     args.Push.Service,
			Role:     pulumi.String(RoleRunInvoker),
			Member:   account.Member,
		}, parent)
		if err != nil {
			return nil, fmt.Errorf("grant push account run.invoker for %s: %w", sp.Name, err)
		}
		deps = append(deps, tokenCreator, invoker)
		endpoint := args.Push.Endpoint
		if sp.PushEndpoint != "" {
			endpoint = pulumi.String(sp.PushEndpoint)
		}
		// OIDC tokens must never travel over plain http.
		endpoint = endpoint.ToStringOutput().ApplyT(func(url string) (string, error) {
			if !strings.HasPrefix(url, "https://") {
				return "", fmt.Errorf("subscription %s: push endpoint %q is not https", sp.Name, url)
			}
			return url, nil
		}).(pulumi.StringOutput)
		sa.PushConfig = &pubsub.SubscriptionPushConfigArgs{
			PushEndpoint: endpoint,
			OidcToken: &pubsub.SubscriptionPushConfigOidcTokenArgs{
				ServiceAccountEmail: account.Email,
				Audience:            pulumi.String(args.Push.Audience),
			},
		}
	}

	// The grants come first so the first dead-lettered or pushed message
	// already finds them in place.
	sub, err := pubsub.NewSubscription(ctx, sp.Name, sa, parent, pulumi.DependsOn(deps))
	if err != nil {
		return nil, fmt.Errorf("declare subscription %s: %w", sp.Name, err)
	}
	s.Subscription, s.Name = sub, sub.Name
	if sp.HasDLQ() {
		if _, err := pubsub.NewSubscriptionIAMMember(ctx, sp.Name+"-agent-subscriber", &pubsub.SubscriptionIAMMemberArgs{
			Project:      project,
			Subscription: sub.Name,
			Role:         pulumi.String(RoleSubscriber),
			Member:       agent,
		}, parent); err != nil {
			return nil, fmt.Errorf("grant service agent subscriber on %s: %w", sp.Name, err)
		}
	}
	for _, key := range spec.SortedKeys(args.Subscribers) {
		if _, err := pubsub.NewSubscriptionIAMMember(ctx, sp.Name+"-"+key+"-subscriber", &pubsub.SubscriptionIAMMemberArgs{
			Project:      project,
			Subscription: sub.Name,
			Role:         pulumi.String(RoleSubscriber),
			Member:       args.Subscribers[key],
		}, parent); err != nil {
			return nil, fmt.Errorf("grant subscriber on %s: %w", sp.Name, err)
		}
	}

	outputs := pulumi.Map{"name": sub.Name}
	if s.DeadLetterTopic != nil {
		outputs["deadLetterTopic"] = s.DeadLetterTopic.Name
		outputs["deadLetterSubscription"] = s.DeadLetterSubscription.Name
	}
	if s.PushAccount != nil {
		outputs["pushServiceAccount"] = s.PushAccount.Email
	}
	if err := ctx.RegisterResourceOutputs(s, outputs); err != nil {
		return nil, fmt.Errorf("register subscription outputs %s: %w", name, err)
	}
	return s, nil
}
