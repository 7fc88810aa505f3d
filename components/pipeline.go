package components

import (
	"errors"
	"fmt"
	"strings"

	"github.com/eventpipe/eventpipe/alerts"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// PipelineArgs configure a Pipeline. Only project, projectNumber,
// consumer.image and one subscription are required; everything else has
// the defaults documented on its field.
type PipelineArgs struct {
	// Project is the GCP project id the pipeline's resources are created in.
	Project pulumi.StringInput `pulumi:"project"`
	// ProjectNumber is the project's number; it names the Pub/Sub service agent dead-lettering needs.
	ProjectNumber pulumi.StringInput `pulumi:"projectNumber"`
	// Region is the Cloud Run region of the consumer (default europe-west1).
	Region string `pulumi:"region,optional"`
	// Environment labels every resource eventpipe_env, names the log-based metrics and qualifies the
	// consumer's records (default: the stack name).
	Environment string `pulumi:"environment,optional"`
	// Labels are extra GCP labels on the topic, subscriptions and service.
	Labels map[string]string `pulumi:"labels,optional"`
	// Protect guards the pipeline's state (default true): Pulumi's protect on the topic, subscriptions and
	// dead-letter queues, and Cloud Run deletion protection on the consumer. Set false in short-lived stacks.
	Protect *bool `pulumi:"protect,optional"`
	// TraceCollector adds the OpenTelemetry Collector as a sidecar of the consumer, which then exports its
	// traces to Cloud Trace through it (default false).
	TraceCollector bool `pulumi:"traceCollector,optional"`
	// Topic is the source topic: one the pipeline declares, or an existing one.
	Topic *spec.Topic `pulumi:"topic,optional"`
	// Consumer is the Cloud Run service the subscriptions feed.
	Consumer spec.Consumer `pulumi:"consumer"`
	// Subscriptions are the subscriptions on the topic, keyed by a short name unique in the pipeline
	// (1–30 lowercase letters, digits or hyphens). At least one.
	Subscriptions map[string]spec.Subscription `pulumi:"subscriptions"`
	// Alerts configure the pipeline's alerts, on unless opted out.
	Alerts *spec.PipelineAlerts `pulumi:"alerts,optional"`
	// Apis makes every resource wait for a Project's apis output: the APIs enabled and propagated.
	Apis pulumi.StringArrayInput `pulumi:"apis,optional"`
	// GrantPropagation is how long the consumer's service waits after the roles it needs are granted, and a push
	// subscription after the roles its deliveries need, for the grants to take effect (default 120s; 0s: no wait).
	GrantPropagation string `pulumi:"grantPropagation,optional"`
}

// Pipeline composes one named pipeline: its source Topic (or an existing
// topic, with the named publishers' grants), the Consumer service, one
// Subscription per entry of subscriptions (push ones delivering to the
// consumer's /pubsub/push, pull ones readable by the consumer's account or,
// when external, by their subscribers), the FirestoreTTL policies of the
// consumer's own collections when its store is Firestore, and (unless opted
// out) its alerts.
type Pipeline struct {
	pulumi.ResourceState

	// TopicID is the full name of the source topic, projects/P/topics/T.
	TopicID pulumi.StringOutput `pulumi:"topicId"`
	// TopicName is the source topic's id.
	TopicName pulumi.StringOutput `pulumi:"topicName"`
	// ConsumerURI is the consumer service's URL.
	ConsumerURI pulumi.StringOutput `pulumi:"consumerUri"`
	// ConsumerServiceAccount is the email of the account the consumer runs as.
	ConsumerServiceAccount pulumi.StringOutput `pulumi:"consumerServiceAccount"`
	// SubscriptionNames are the subscription ids, by key.
	SubscriptionNames pulumi.StringMapOutput `pulumi:"subscriptionNames"`
	// DeadLetterSubscriptions are the ids of the subscriptions keeping the dead letters, by key (none on a DLQ opt-out).
	DeadLetterSubscriptions pulumi.StringMapOutput `pulumi:"deadLetterSubscriptions"`

	// Topic is the source topic; nil when the pipeline reads an existing one.
	Topic *Topic
	// Consumer is the Cloud Run consumer.
	Consumer *Consumer
	// Subscriptions are keyed like PipelineArgs.Subscriptions.
	Subscriptions map[string]*Subscription
	// TTL is nil when the store is not Firestore (bbolt, PostgreSQL and
	// memory stores need no TTL policy).
	TTL *FirestoreTTL
	// Alerts are the pipeline's metrics, alert policies and SLOs; nil when
	// the pipeline opted out of alerts.
	Alerts *alerts.Alerts
}

// NewPipeline validates args and declares the pipeline name. Every problem
// with args is reported at once, before anything is declared, on the
// argument's path (consumer.memory, subscriptions.main.delivery).
func NewPipeline(ctx *pulumi.Context, name string, args *PipelineArgs, opts ...pulumi.ResourceOption) (_ *Pipeline, err error) {
	defer declaredAt(calledAt(), &err)
	if args == nil {
		return nil, fmt.Errorf("pipeline %s: no arguments; set at least project, projectNumber, consumer.image and one subscription", name)
	}
	sc, thresholds, err := resolvePipeline(ctx, name, args)
	if err != nil {
		return nil, err
	}
	return declarePipeline(ctx, name, sc, args.Alerts, thresholds, withAPIs(opts, args.Apis))
}

// declarePipeline declares the pipeline name of the resolved scope sc;
// alertArgs are the alert arguments given (nil: none), for the channels
// only known at deploy time.
func declarePipeline(ctx *pulumi.Context, name string, sc *scope, alertArgs *spec.PipelineAlerts, thresholds alerts.Config, opts []pulumi.ResourceOption) (*Pipeline, error) {
	var err error
	p := sc.pipeline
	pl := &Pipeline{Subscriptions: map[string]*Subscription{}}
	if err := register(ctx, TypePipeline, name, pl, opts); err != nil {
		return nil, fmt.Errorf("register pipeline component %s: %w", name, err)
	}
	parent := pulumi.Parent(pl)

	var topicID pulumi.StringInput
	if existing := spec.Text(p.Topic.Existing); existing == "" {
		if pl.Topic, err = declareTopic(ctx, name, sc, []pulumi.ResourceOption{parent}); err != nil {
			return nil, err
		}
		topicID, pl.TopicName = pl.Topic.ID, pl.Topic.Name
	} else {
		topicID = sc.d.str(existing)
		pl.TopicName = topicID.ToStringOutput().ApplyT(func(id string) string { return id[strings.LastIndex(id, "/")+1:] }).(pulumi.StringOutput)
		if err := grantPublishers(ctx, name, sc, topicID, parent); err != nil {
			return nil, err
		}
	}
	pl.TopicID = topicID.ToStringOutput()

	if sc.needsAgent() {
		if sc.agentIdentity, err = declarePubSubAgent(ctx, name, sc, parent); err != nil {
			return nil, err
		}
	}
	names, dlqs := pulumi.StringMap{}, pulumi.StringMap{}
	add := func(key string, s *Subscription) {
		pl.Subscriptions[key], names[key] = s, s.Name
		if s.DLQSubscription != nil {
			dlqs[key] = s.DeadLetterSubscription
		}
	}
	// The subscriptions the consumer pulls, and its grants on them, exist
	// before its service starts: a consumer pulling a subscription that is
	// not there yet, or not readable yet, fails its first start.
	pullFirst := func(member pulumi.StringInput, _ pulumi.ResourceOption) ([]pulumi.Resource, error) {
		var waits []pulumi.Resource
		for _, sub := range p.SortedSubscriptions() {
			if !sub.ConsumerPulls() {
				continue
			}
			s, err := declareSubscription(ctx, sub.Name, sc, sub, topicID, nil, map[string]pulumi.StringInput{"consumer": member}, []pulumi.ResourceOption{parent})
			if err != nil {
				return nil, err
			}
			add(sub.Key, s)
			waits = append(waits, s.Subscription)
			waits = append(waits, s.grants...)
		}
		return waits, nil
	}
	pulls := sc.stack.PullSubscriptions(p)
	pl.Consumer, err = declareConsumer(ctx, name, sc, sc.d.strs(sc.stack.PushAccounts(p)), sc.d.strs(pulls), len(sc.stack.PushAccounts(p)) > 0, len(pulls) > 0,
		pullFirst, []pulumi.ResourceOption{parent})
	if err != nil {
		return nil, err
	}
	push := &pushTarget{
		endpoint: pulumi.Sprintf("%s%s", pl.Consumer.URI, spec.PushPath),
		audience: p.Consumer.Audience,
		service:  pl.Consumer.ServiceName,
	}
	for _, sub := range p.SortedSubscriptions() {
		if sub.ConsumerPulls() {
			continue
		}
		s, err := declareSubscription(ctx, sub.Name, sc, sub, topicID, push, nil, []pulumi.ResourceOption{parent})
		if err != nil {
			return nil, err
		}
		add(sub.Key, s)
	}
	pl.SubscriptionNames, pl.DeadLetterSubscriptions = names.ToStringMapOutput(), dlqs.ToStringMapOutput()

	if project, database, ok := p.Consumer.FirestoreDatabase(); ok {
		pl.TTL, err = NewFirestoreTTL(ctx, name, &FirestoreTTLArgs{
			Project:     sc.d.str(project),
			Database:    database,
			Collections: TTLCollections(p.Consumer.CollectionPrefix),
			Field:       spec.ExpiryField,
		}, parent)
		if err != nil {
			return nil, err
		}
	}
	if p.Alerts.Enabled() {
		aa := alerts.Args{Target: alertTarget(sc), Config: thresholds, Project: sc.project, Expand: sc.d.str}
		if a := alertArgs; a != nil {
			if _, ok := knownStrings(a.CriticalChannels); !ok {
				aa.CriticalChannels = a.CriticalChannels
			}
			if _, ok := knownStrings(a.WarningChannels); !ok {
				aa.WarningChannels = a.WarningChannels
			}
		}
		if pl.Alerts, err = alerts.New(ctx, name, aa, parent); err != nil {
			return nil, err
		}
	}

	pl.ConsumerURI, pl.ConsumerServiceAccount = pl.Consumer.URI, pl.Consumer.ServiceAccount
	if err := ctx.RegisterResourceOutputs(pl, outputs(pl)); err != nil {
		return nil, fmt.Errorf("register pipeline outputs %s: %w", name, err)
	}
	return pl, nil
}

// resolvePipeline completes and validates args as the pipeline name, and
// returns its scope and alert thresholds, or every problem at once.
func resolvePipeline(ctx *pulumi.Context, name string, args *PipelineArgs) (*scope, alerts.Config, error) {
	sc := newScope(ctx, name, args.Project, args.ProjectNumber, args.Region, args.Environment, args.Labels, nil)
	sc.inPipeline = true
	st, p := sc.stack, sc.pipeline
	st.Defaults.TraceCollector = &args.TraceCollector
	st.Setup.GrantPropagation = args.GrantPropagation
	sc.ready = args.Apis
	p.Protect = args.Protect
	p.Topic = sc.d.topic(args.Topic)
	p.Consumer = sc.d.consumer(&args.Consumer)
	problems := sc.storeSecret(args.Consumer.StoreSecret)
	p.Subscriptions = map[string]*spec.Subscription{}
	for key, s := range args.Subscriptions {
		p.Subscriptions[key] = subscription(s, key)
	}
	thresholds := alerts.Defaults()
	if a := args.Alerts; a != nil {
		p.Alerts = *a
		st.Alerts.Channels.Critical, _ = knownStrings(a.CriticalChannels)
		st.Alerts.Channels.Warning, _ = knownStrings(a.WarningChannels)
		if a.Thresholds != nil {
			thresholds = a.Thresholds.WithDefaults()
			problems = append(problems, thresholdErrors("alerts.thresholds.", thresholds.Validate())...)
		}
	}
	errs := spec.Validate(st) // first: it fills the defaults deployProblems reads
	if all := append(append(errs, problems...), deployProblems(st, p)...); len(all) > 0 {
		return nil, alerts.Config{}, argsError("pipeline", name, all)
	}
	return sc, thresholds, nil
}

// alertTarget is what the alerts of sc's pipeline watch: its consumer
// service and its subscriptions with their dead-letter queues.
func alertTarget(sc *scope) alerts.Target {
	st, p := sc.stack, sc.pipeline
	t := alerts.Target{
		Project:    st.Project,
		Pipeline:   p.Name,
		Env:        st.Env,
		Team:       p.Alerts.Team,
		Service:    p.Consumer.ServiceName,
		Channels:   alerts.Channels{Critical: st.Alerts.Channels.Critical, Warning: st.Alerts.Channels.Warning},
		WorkerPool: p.Consumer.WorkerPool,
	}
	for _, sub := range p.SortedSubscriptions() {
		as := alerts.Subscription{Name: sub.Name, Topic: st.TopicName(p), Push: sub.Push()}
		if sub.HasDLQ() {
			as.DLQSubscription = sub.DLQSubscriptionName()
			as.DLQTopic = sub.DLQTopicName()
		}
		t.Subscriptions = append(t.Subscriptions, as)
	}
	return t
}

// knownStrings returns the values of in when the program knows them all
// (nil for a nil input).
func knownStrings(in pulumi.StringArrayInput) ([]string, bool) {
	if in == nil {
		return nil, true
	}
	arr, ok := in.(pulumi.StringArray)
	if !ok {
		return nil, false
	}
	out := make([]string, len(arr))
	for i, s := range arr {
		if out[i], ok = known(s); !ok {
			return nil, false
		}
	}
	return out, true
}

// thresholdErrors turns the errors of alerts.Config.Validate into field
// errors under prefix.
func thresholdErrors(prefix string, err error) spec.Errors {
	if err == nil {
		return nil
	}
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	var out spec.Errors
	for _, e := range list {
		var fe *alerts.FieldError
		if errors.As(e, &fe) {
			moved := *fe // the same type, at its place in the stack
			moved.Path = prefix + strings.TrimPrefix(fe.Path, "alerts.")
			out = append(out, moved)
			continue
		}
		out = append(out, spec.FieldError{Path: prefix[:len(prefix)-1], Allowed: "valid alert thresholds", Fix: e.Error()})
	}
	return out
}
