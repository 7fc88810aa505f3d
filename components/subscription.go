package components

import (
	"fmt"
	"maps"
	"regexp"
	"strings"

	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/cloudrunv2"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/pubsub"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/serviceaccount"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// standaloneKey is the key a Subscription on its own has in its scope: its
// push service account is NAME-sub-push.
const standaloneKey = "sub"

// accountIDPattern is what GCP accepts as a service account id.
var accountIDPattern = regexp.MustCompile(`^[a-z][a-z0-9-]{4,28}[a-z0-9]$`)

// SubscriptionArgs configure a Subscription on its own, on any topic: a
// topic of the same program or one another team owns.
type SubscriptionArgs struct {
	// Project is the GCP project id the subscription (and its dead-letter queue) is created in.
	Project pulumi.StringInput `pulumi:"project"`
	// ProjectNumber is the project's number; it names the Pub/Sub service agent dead-lettering needs.
	ProjectNumber pulumi.StringInput `pulumi:"projectNumber"`
	// Topic is the full name of the topic to subscribe to, projects/P/topics/T (it may be in another project).
	Topic pulumi.StringInput `pulumi:"topic"`
	// Region is the region of the push target's Cloud Run service (default europe-west1).
	Region string `pulumi:"region,optional"`
	// Environment labels the resources eventpipe_env (default: the stack name).
	Environment string `pulumi:"environment,optional"`
	// Labels are extra GCP labels on the subscription and its dead-letter queue.
	Labels map[string]string `pulumi:"labels,optional"`
	// Protect protects the subscription and its dead-letter queue from deletion and replacement (default true).
	Protect *bool `pulumi:"protect,optional"`
	// Subscription is the subscription's settings; its name defaults to the component name.
	Subscription spec.Subscription `pulumi:"subscription"`
	// Push is where a push subscription delivers; required with delivery push.
	Push *PushTarget `pulumi:"push,optional"`
	// Apis makes every resource wait for a Project's apis output: the APIs enabled and propagated.
	Apis pulumi.StringArrayInput `pulumi:"apis,optional"`
	// GrantPropagation is how long a push subscription waits after the roles its deliveries need are granted,
	// for the grants to take effect (default 120s; 0s: no wait).
	GrantPropagation string `pulumi:"grantPropagation,optional"`
}

// PushTarget is the endpoint a push subscription delivers to.
type PushTarget struct {
	// Endpoint is the https URL Pub/Sub POSTs to (for an eventpipe consumer: its URL + /pubsub/push).
	Endpoint pulumi.StringInput `pulumi:"endpoint"`
	// Audience is the OIDC audience of the push tokens; the endpoint checks it.
	Audience string `pulumi:"audience"`
	// Service is the Cloud Run service the push account gets roles/run.invoker on (optional: an endpoint
	// outside Cloud Run checks the token itself).
	Service pulumi.StringInput `pulumi:"service,optional"`
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
//     on the target service, and token creator for the service agent on it;
//   - for pull: roles/pubsub.subscriber for its subscribers.
//
// The subscription, its DLQ topic and DLQ subscription are protected from
// deletion unless protect is false: changing a subscription's topic, filter
// or ordering replaces it, and a replaced subscription loses its backlog.
//
// A DLQ opt-out drops the dead-letter resources and records the opt-out and
// its reason as labels so policies can see it.
type Subscription struct {
	pulumi.ResourceState

	// Name is the subscription id.
	Name pulumi.StringOutput `pulumi:"name"`
	// SubscriptionID is the full subscription name, projects/P/subscriptions/S.
	SubscriptionID pulumi.StringOutput `pulumi:"subscriptionId"`
	// DeadLetterTopic is the dead-letter topic id (empty on a DLQ opt-out).
	DeadLetterTopic pulumi.StringOutput `pulumi:"deadLetterTopic"`
	// DeadLetterSubscription is the id of the subscription keeping the dead letters (empty on a DLQ opt-out).
	DeadLetterSubscription pulumi.StringOutput `pulumi:"deadLetterSubscription"`
	// PushServiceAccount is the email of the push service account (empty for pull).
	PushServiceAccount pulumi.StringOutput `pulumi:"pushServiceAccount"`

	// Subscription is the source subscription.
	Subscription *pubsub.Subscription
	// DLQTopic is the dead-letter topic (nil on opt-out).
	DLQTopic *pubsub.Topic
	// DLQSubscription keeps the dead-letter topic's messages (nil on opt-out).
	DLQSubscription *pubsub.Subscription
	// PushAccount is the push service account (nil for pull).
	PushAccount *serviceaccount.Account
	// grants are the subscriber grants on the subscription.
	grants []pulumi.Resource
}

// NewSubscription validates args and declares a Subscription named name.
func NewSubscription(ctx *pulumi.Context, name string, args *SubscriptionArgs, opts ...pulumi.ResourceOption) (_ *Subscription, err error) {
	defer declaredAt(calledAt(), &err)
	if args == nil {
		return nil, fmt.Errorf("subscription %s: no arguments; set at least project, projectNumber, topic and subscription.delivery", name)
	}
	sc := newScope(ctx, name, args.Project, args.ProjectNumber, args.Region, args.Environment, args.Labels, args.Protect)
	sc.ready = args.Apis
	sc.stack.Setup.GrantPropagation = args.GrantPropagation
	opts = withAPIs(opts, args.Apis)
	sub := subscription(args.Subscription, standaloneKey)
	if sub.Name == "" {
		sub.Name = name
	}
	sc.pipeline.Subscriptions = map[string]*spec.Subscription{standaloneKey: sub}
	problems := spec.ValidateSetup("", &sc.stack.Setup)
	if args.Topic == nil {
		problems = append(problems, spec.FieldError{Path: "topic", Allowed: "a full topic name, projects/PROJECT/topics/TOPIC",
			Fix: "pass the topic to subscribe to, e.g. a Topic's topicId output or another team's topic name"})
	}
	var push *pushTarget
	switch {
	case sub.Push() && (args.Push == nil || args.Push.Audience == "" || args.Push.Endpoint == nil && sub.PushEndpoint == ""):
		problems = append(problems, spec.FieldError{Path: "push", Allowed: "an endpoint and an audience with delivery: push",
			Fix: "set push.endpoint (the consumer's URL + /pubsub/push) and push.audience (the audience the endpoint checks)"})
	case sub.Push() && !accountIDPattern.MatchString(sc.pipeline.PushAccountID(sub)):
		problems = append(problems, spec.FieldError{Path: "name", Value: fmt.Sprintf("%q", name),
			Allowed: "lowercase letters, digits and hyphens, starting with a letter, for a push subscription",
			Fix:     "rename the component: it names the push service account " + name + "-" + standaloneKey + "-push, and GCP account ids allow only these characters"})
	case sub.Push():
		push = &pushTarget{endpoint: args.Push.Endpoint, audience: args.Push.Audience, service: args.Push.Service}
	case args.Push != nil:
		problems = append(problems, spec.FieldError{Path: "push", Value: "(set)", Allowed: "only with delivery: push", Fix: "remove push, or set subscription.delivery: push"})
	}
	if errs := append(spec.ValidateSubscription(sc.stack, sc.pipeline, sub, "subscription"), problems...); len(errs) > 0 {
		return nil, argsError("subscription", name, errs)
	}
	return declareSubscription(ctx, name, sc, sub, args.Topic, push, nil, opts)
}

// pushTarget is where a push subscription of a scope delivers.
type pushTarget struct {
	endpoint pulumi.StringInput
	// audience may hold placeholders (the project): the scope completes it.
	audience string
	// service is the Cloud Run service to grant run.invoker on; nil for none.
	service pulumi.StringInput
}

// declareSubscription declares sub of sc under name. topic is its topic's
// full name; push is required for a push subscription; readers are members
// (such as the pipeline consumer's account) granted roles/pubsub.subscriber
// besides sub.Subscribers, keyed by a short stable name.
func declareSubscription(ctx *pulumi.Context, name string, sc *scope, sub *spec.Subscription, topic pulumi.StringInput, push *pushTarget,
	readers map[string]pulumi.StringInput, opts []pulumi.ResourceOption) (*Subscription, error) {
	s := &Subscription{}
	if err := register(ctx, TypeSubscription, name, s, opts); err != nil {
		return nil, fmt.Errorf("register subscription component %s: %w", name, err)
	}
	parent := pulumi.Parent(s)
	project := sc.project
	agent := sc.agent()
	if sc.agentIdentity == nil && (sub.HasDLQ() || sub.Push()) {
		// A subscription on its own declares the agent it grants to.
		identity, err := declarePubSubAgent(ctx, name, sc, parent)
		if err != nil {
			return nil, err
		}
		sc.agentIdentity = identity
	}

	sa := &pubsub.SubscriptionArgs{
		Project:                  project,
		Name:                     pulumi.String(sub.Name),
		Topic:                    topic,
		Labels:                   sc.subscriptionLabels(sub),
		AckDeadlineSeconds:       pulumi.Int(int(spec.Length(sub.AckDeadline).Seconds())),
		MessageRetentionDuration: pulumi.String(spec.Seconds(spec.Length(sub.Retention))),
		RetryPolicy: &pubsub.SubscriptionRetryPolicyArgs{
			MinimumBackoff: pulumi.String(spec.Seconds(spec.Length(sub.MinBackoff))),
			MaximumBackoff: pulumi.String(spec.Seconds(spec.Length(sub.MaxBackoff))),
		},
		// ttl "" means never: an idle subscription is not deleted after 31 days.
		ExpirationPolicy:          &pubsub.SubscriptionExpirationPolicyArgs{Ttl: pulumi.String("")},
		EnableMessageOrdering:     pulumi.Bool(sub.Ordering),
		EnableExactlyOnceDelivery: pulumi.Bool(sub.ExactlyOnce),
	}
	if sub.Filter != "" {
		sa.Filter = pulumi.String(sub.Filter)
	}
	var deps []pulumi.Resource

	if sub.HasDLQ() {
		dlqLabels := sc.labels(spec.RoleDLQ)
		dlqRetention := pulumi.String(spec.Seconds(spec.Length(sub.DeadLetter.Retention)))
		topic, err := pubsub.NewTopic(ctx, sub.Name+"-dlq", &pubsub.TopicArgs{
			Project:                  project,
			Name:                     pulumi.String(sub.DLQTopicName()),
			Labels:                   dlqLabels,
			MessageRetentionDuration: dlqRetention,
		}, parent, sc.protect())
		if err != nil {
			return nil, fmt.Errorf("declare dead-letter topic of %s: %w", sub.Name, err)
		}
		s.DLQTopic = topic
		s.DLQSubscription, err = pubsub.NewSubscription(ctx, sub.Name+"-dlq", &pubsub.SubscriptionArgs{
			Project:                  project,
			Name:                     pulumi.String(sub.DLQSubscriptionName()),
			Topic:                    topic.ID(),
			Labels:                   dlqLabels,
			AckDeadlineSeconds:       pulumi.Int(int(spec.DefaultPullAckDeadline.Seconds())),
			MessageRetentionDuration: dlqRetention,
			RetainAckedMessages:      pulumi.Bool(true),
			ExpirationPolicy:         &pubsub.SubscriptionExpirationPolicyArgs{Ttl: pulumi.String("")},
		}, parent, sc.protect())
		if err != nil {
			return nil, fmt.Errorf("declare dead-letter subscription of %s: %w", sub.Name, err)
		}
		publisher, err := pubsub.NewTopicIAMMember(ctx, sub.Name+"-dlq-agent-publisher", &pubsub.TopicIAMMemberArgs{
			Project: project,
			Topic:   topic.Name,
			Role:    pulumi.String(RolePublisher),
			Member:  agent,
		}, parent, sc.agentWait())
		if err != nil {
			return nil, fmt.Errorf("grant service agent publisher on %s: %w", sub.DLQTopicName(), err)
		}
		deps = append(deps, publisher)
		sa.DeadLetterPolicy = &pubsub.SubscriptionDeadLetterPolicyArgs{
			DeadLetterTopic:     topic.ID(),
			MaxDeliveryAttempts: pulumi.Int(*sub.MaxDeliveryAttempts),
		}
	}

	if sub.Push() {
		pushDeps, err := declarePush(ctx, sc, sub, push, sa, s, parent)
		if err != nil {
			return nil, err
		}
		// A push subscription delivers from its creation on: the grants its
		// deliveries need (Cloud Run's invoker for its account, the agent's token
		// creator on it and publisher on the DLQ topic) must have taken effect by
		// then, or Cloud Run refuses the pushes and, once the subscription counts
		// attempts, good messages are dead-lettered.
		_, wait := sc.stack.Setup.Waits()
		if deps, err = waitForGrants(ctx, sub.Name+"-push", wait, append(deps, pushDeps...), parent); err != nil {
			return nil, err
		}
	}

	// The grants come first so the first dead-lettered or pushed message
	// already finds them in place.
	created, err := pubsub.NewSubscription(ctx, sub.Name, sa, parent, pulumi.DependsOn(deps), sc.protect())
	if err != nil {
		return nil, fmt.Errorf("declare subscription %s: %w", sub.Name, err)
	}
	s.Subscription, s.Name, s.SubscriptionID = created, created.Name, created.ID().ToStringOutput()
	// The service agent acknowledges what it dead-letters; readers and
	// subscribers read. Each grant is named after its key or member.
	grants := map[string]pulumi.StringInput{}
	if sub.HasDLQ() {
		grants["agent"] = agent
	}
	maps.Copy(grants, readers)
	for _, member := range sub.Subscribers {
		grants[member] = pulumi.String(member)
	}
	for _, key := range spec.SortedKeys(grants) {
		opts := []pulumi.ResourceOption{parent}
		if key == "agent" {
			opts = append(opts, sc.agentWait())
		}
		grant, err := pubsub.NewSubscriptionIAMMember(ctx, sub.Name+"-"+key+"-subscriber", &pubsub.SubscriptionIAMMemberArgs{
			Project:      project,
			Subscription: created.Name,
			Role:         pulumi.String(RoleSubscriber),
			Member:       grants[key],
		}, opts...)
		if err != nil {
			return nil, fmt.Errorf("grant %s subscriber on %s: %w", key, sub.Name, err)
		}
		s.grants = append(s.grants, grant)
	}

	s.DeadLetterTopic, s.DeadLetterSubscription, s.PushServiceAccount = pulumi.String("").ToStringOutput(), pulumi.String("").ToStringOutput(), pulumi.String("").ToStringOutput()
	if s.DLQTopic != nil {
		s.DeadLetterTopic, s.DeadLetterSubscription = s.DLQTopic.Name, s.DLQSubscription.Name
	}
	if s.PushAccount != nil {
		s.PushServiceAccount = s.PushAccount.Email
	}
	if err := ctx.RegisterResourceOutputs(s, outputs(s)); err != nil {
		return nil, fmt.Errorf("register subscription outputs %s: %w", name, err)
	}
	return s, nil
}

// declarePush declares the push service account of sub and its grants, and
// fills sa's push config; it returns the grants the subscription waits for.
func declarePush(ctx *pulumi.Context, sc *scope, sub *spec.Subscription, push *pushTarget, sa *pubsub.SubscriptionArgs, s *Subscription, parent pulumi.ResourceOption) ([]pulumi.Resource, error) {
	account, err := serviceaccount.NewAccount(ctx, sub.Name+"-push", &serviceaccount.AccountArgs{
		Project:     sc.project,
		AccountId:   pulumi.String(sc.pipeline.PushAccountID(sub)),
		DisplayName: pulumi.String("eventpipe push " + sub.Name),
		Description: pulumi.String("Signs the OIDC tokens Pub/Sub sends with push deliveries of " + sub.Name),
	}, parent)
	if err != nil {
		return nil, fmt.Errorf("declare push service account of %s: %w", sub.Name, err)
	}
	s.PushAccount = account
	tokenCreator, err := serviceaccount.NewIAMMember(ctx, sub.Name+"-push-agent-token-creator", &serviceaccount.IAMMemberArgs{
		ServiceAccountId: account.Name,
		Role:             pulumi.String(RoleTokenCreator),
		Member:           sc.agent(),
	}, parent, sc.agentWait())
	if err != nil {
		return nil, fmt.Errorf("grant service agent token creator on %s: %w", sub.Name, err)
	}
	deps := []pulumi.Resource{tokenCreator}
	if push.service != nil {
		invoker, err := cloudrunv2.NewServiceIamMember(ctx, sub.Name+"-push-invoker", &cloudrunv2.ServiceIamMemberArgs{
			Project:  sc.project,
			Location: pulumi.String(sc.stack.Region),
			Name:     push.service,
			Role:     pulumi.String(RoleRunInvoker),
			Member:   account.Member,
		}, parent)
		if err != nil {
			return nil, fmt.Errorf("grant push account run.invoker for %s: %w", sub.Name, err)
		}
		deps = append(deps, invoker)
	}
	endpoint := push.endpoint
	if sub.PushEndpoint != "" {
		endpoint = pulumi.String(sub.PushEndpoint)
	}
	// OIDC tokens must never travel over plain http.
	endpoint = endpoint.ToStringOutput().ApplyT(func(url string) (string, error) {
		if !strings.HasPrefix(url, "https://") {
			return "", fmt.Errorf("subscription %s: push endpoint %q is not https; OIDC tokens must never travel over plain http", sub.Name, url)
		}
		return url, nil
	}).(pulumi.StringOutput)
	sa.PushConfig = &pubsub.SubscriptionPushConfigArgs{
		PushEndpoint: endpoint,
		OidcToken: &pubsub.SubscriptionPushConfigOidcTokenArgs{
			ServiceAccountEmail: account.Email,
			Audience:            sc.d.str(push.audience),
		},
	}
	return deps, nil
}
