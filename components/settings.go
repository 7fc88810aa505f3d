package components

import (
	"github.com/eventpipe/eventpipe/alerts"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// The settings below are the parts of a pipeline: a Pipeline takes all of
// them, the standalone components the one they declare. Field names are the
// keys of stack config (docs/configuration.md), so an error names the same
// path in both. Durations are strings with a unit: "10s", "10m", "14d".
// Unset values take the defaults documented on each field.

// TopicSettings configure a pipeline's source topic.
type TopicSettings struct {
	// Existing is the full name (projects/P/topics/T) of a topic another team owns: the pipeline subscribes
	// to it and declares no topic. The other settings, except publishers, are then its owner's.
	Existing pulumi.StringInput `pulumi:"existing,optional"`
	// Name is the topic id (default: the pipeline or component name).
	Name string `pulumi:"name,optional"`
	// MessageRetention is how long the topic keeps messages for replay with seek (10m–31d, default 7d).
	MessageRetention string `pulumi:"messageRetention,optional"`
	// Schema is an optional Pub/Sub schema publishers must satisfy, projects/P/schemas/S.
	Schema string `pulumi:"schema,optional"`
	// SchemaEncoding is JSON or BINARY (default JSON when schema is set).
	SchemaEncoding string `pulumi:"schemaEncoding,optional"`
	// KMSKeyName is an optional customer-managed key encrypting messages at rest,
	// projects/P/locations/L/keyRings/R/cryptoKeys/K.
	KMSKeyName pulumi.StringInput `pulumi:"kmsKeyName,optional"`
	// Publishers are IAM members (serviceAccount:EMAIL, group:…) granted roles/pubsub.publisher on the topic.
	Publishers []string `pulumi:"publishers,optional"`
}

// ConsumerSettings configure the Cloud Run v2 service running the eventpipe consumer.
type ConsumerSettings struct {
	// Image is the consumer container image, by digest (REPO@sha256:<64 hex>) or tag (REPO:TAG).
	Image pulumi.StringInput `pulumi:"image"`
	// ServiceAccount is the email of an existing service account to run as (default: an account of its
	// own, NAME-run). It is granted the store, subscriber and secret roles the consumer needs.
	ServiceAccount pulumi.StringInput `pulumi:"serviceAccount,optional"`
	// ServiceName is the Cloud Run service name (default NAME-consumer).
	ServiceName string `pulumi:"serviceName,optional"`
	// RequestTimeout is the service's request timeout; push ack deadlines equal it (10s–10m, default 60s).
	RequestTimeout string `pulumi:"requestTimeout,optional"`
	// Concurrency is the most messages an instance handles at once (1–1000, default 80), lowered to what
	// memory holds for messages of maxMessageBytes.
	Concurrency *int `pulumi:"concurrency,optional"`
	// MinInstances is how many instances are kept warm (0–100, default 0; at least 1 when the consumer pulls).
	MinInstances *int `pulumi:"minInstances,optional"`
	// MaxInstances is the most instances the service scales to (1–1000, default 10).
	MaxInstances *int `pulumi:"maxInstances,optional"`
	// Ingress is internal or internal-and-cloud-load-balancing (default internal), or all with
	// callbackAccounts, for Cloud Run jobs calling back without VPC egress (OIDC is then the guard).
	Ingress string `pulumi:"ingress,optional"`
	// CPU is the CPU limit per instance: "1", "2", "4", "6" or "8", or below 1 ("0.5") with concurrency 1
	// in gen1 (default "1").
	CPU string `pulumi:"cpu,optional"`
	// Memory is the memory limit per instance, 128Mi–32Gi, e.g. "512Mi" or "2Gi" (default "512Mi").
	Memory string `pulumi:"memory,optional"`
	// ExecutionEnvironment is gen2 (default; at least 512Mi) or gen1 (down to 128Mi, and CPU below 1).
	ExecutionEnvironment string `pulumi:"executionEnvironment,optional"`
	// MaxMessageBytes is the largest message producers publish (1–10000000, default 10000000). It sizes
	// the instance: GOMEMLIMIT and how many messages memory holds at once.
	MaxMessageBytes *int `pulumi:"maxMessageBytes,optional"`
	// Routes is the path of a routes file inside the image (default: the embedded routes).
	Routes string `pulumi:"routes,optional"`
	// Store is the store URL without credentials: firestore://PROJECT/DATABASE, postgres://HOST/DB,
	// bbolt:///PATH or mem:// (default firestore://PROJECT/(default)). Firestore stores get TTL policies.
	Store string `pulumi:"store,optional"`
	// StoreSecret is a store URL carrying a credential (a PostgreSQL URL with its password), best a secret
	// output; it is kept in a Secret Manager secret the consumer reads, never in the service definition.
	StoreSecret pulumi.StringInput `pulumi:"storeSecret,optional" provider:"secret"`
	// CollectionPrefix is prepended to the store's collection names (default eventpipe_NAME_); unique per store.
	CollectionPrefix string `pulumi:"collectionPrefix,optional"`
	// Audience is the OIDC audience of push tokens (default PROJECT/NAME/pubsub-push).
	Audience string `pulumi:"audience,optional"`
	// CallbackAccounts are the emails of the service accounts whose jobs may call the consumer's callback
	// endpoint; each is granted roles/run.invoker on the service (default none: callbacks are refused).
	CallbackAccounts []string `pulumi:"callbackAccounts,optional"`
	// CallbackAudience is the OIDC audience callers request their tokens for (default: audience); only with
	// callbackAccounts.
	CallbackAudience string `pulumi:"callbackAudience,optional"`
	// VPCAccess gives the consumer Direct VPC egress, which a store on a private address needs.
	VPCAccess *VPCAccessSettings `pulumi:"vpcAccess,optional"`
	// CloudSQLInstances are Cloud SQL instances (PROJECT:REGION:INSTANCE) mounted at /cloudsql; the
	// consumer's account gets roles/cloudsql.client on each one's project.
	CloudSQLInstances []string `pulumi:"cloudSqlInstances,optional"`
	// WorkerPool runs the consumer on a Cloud Run worker pool (minInstances instances, no HTTP endpoint)
	// instead of a service; only when every subscription is pulled (default false).
	WorkerPool bool `pulumi:"workerPool,optional"`
	// Handler is the team's own container beside the consumer (docs/handlers.md); default none.
	Handler *HandlerSettings `pulumi:"handler,optional"`
}

// VPCAccessSettings are a consumer's Direct VPC egress.
type VPCAccessSettings struct {
	// Network is the VPC network name or projects/P/global/networks/N.
	Network string `pulumi:"network"`
	// Subnetwork is the subnet in the consumer's region (default: the one named like the network).
	Subnetwork string `pulumi:"subnetwork,optional"`
	// Tags are network tags on the instances, for firewall rules.
	Tags []string `pulumi:"tags,optional"`
	// Egress is PRIVATE_RANGES_ONLY (default) or ALL_TRAFFIC.
	Egress string `pulumi:"egress,optional"`
}

// SubscriptionSettings configure one subscription, with its dead-letter queue.
type SubscriptionSettings struct {
	// Delivery is push (Pub/Sub calls the consumer) or pull (the consumer, or external subscribers, pull).
	Delivery string `pulumi:"delivery"`
	// Name is the subscription id (default PIPELINE-KEY in a pipeline, the component name on its own).
	Name string `pulumi:"name,optional"`
	// AckDeadline is how long Pub/Sub waits for an ack (10s–10m; pull default 60s, push: the consumer's requestTimeout).
	AckDeadline string `pulumi:"ackDeadline,optional"`
	// MaxDeliveryAttempts is how many deliveries are tried before dead-lettering (5–100, default 5).
	MaxDeliveryAttempts *int `pulumi:"maxDeliveryAttempts,optional"`
	// MinBackoff is the retry policy's shortest wait (0s–10m, default 10s).
	MinBackoff string `pulumi:"minBackoff,optional"`
	// MaxBackoff is the retry policy's longest wait (0s–10m, default 10m).
	MaxBackoff string `pulumi:"maxBackoff,optional"`
	// Retention is how long unacknowledged messages are kept (10m–31d, default 7d).
	Retention string `pulumi:"retention,optional"`
	// Filter is a Pub/Sub filter expression, at most 256 bytes; changing it replaces the subscription.
	Filter string `pulumi:"filter,optional"`
	// Ordering delivers messages with the same ordering key in order; changing it replaces the subscription.
	Ordering bool `pulumi:"ordering,optional"`
	// ExactlyOnce enables exactly-once delivery; pull only.
	ExactlyOnce bool `pulumi:"exactlyOnce,optional"`
	// PushEndpoint overrides the push URL; push only, https only (default CONSUMER_URL/pubsub/push).
	PushEndpoint string `pulumi:"pushEndpoint,optional"`
	// DeadLetter configures the dead-letter queue.
	DeadLetter *DeadLetterSettings `pulumi:"deadLetter,optional"`
	// Subscribers are IAM members granted roles/pubsub.subscriber, for consumers outside the pipeline; pull only.
	Subscribers []string `pulumi:"subscribers,optional"`
	// External leaves a pull subscription to its subscribers: the pipeline's consumer does not read it.
	External bool `pulumi:"external,optional"`
}

// DeadLetterSettings configure a subscription's dead-letter queue.
type DeadLetterSettings struct {
	// Retention is how long the never-expiring DLQ subscription keeps messages (7d–14d, default 14d).
	Retention string `pulumi:"retention,optional"`
	// OptOut removes the dead-letter queue; allowed only with a reason, and recorded as labels.
	OptOut bool `pulumi:"optOut,optional"`
	// Reason explains an opt-out; it becomes the eventpipe_dlq_opt_out_reason label.
	Reason string `pulumi:"reason,optional"`
}

// AlertSettings configure a pipeline's alerts: log-based metrics, alert
// policies with runbooks, and an ack-ratio SLO per push subscription.
type AlertSettings struct {
	// OptOut turns the pipeline's alerts off; allowed only with a reason.
	OptOut bool `pulumi:"optOut,optional"`
	// Reason explains an opt-out.
	Reason string `pulumi:"reason,optional"`
	// Team owns the alerts; it labels every policy eventpipe_team (default unowned).
	Team string `pulumi:"team,optional"`
	// CriticalChannels are the notification channels (projects/P/notificationChannels/ID) CRITICAL policies notify.
	CriticalChannels pulumi.StringArrayInput `pulumi:"criticalChannels,optional"`
	// WarningChannels are the notification channels WARNING policies notify.
	WarningChannels pulumi.StringArrayInput `pulumi:"warningChannels,optional"`
	// Thresholds override the default alert thresholds; unset values keep the defaults.
	Thresholds *alerts.Config `pulumi:"thresholds,optional"`
}

// toSpec is t as stack config, its inputs read through d.
func (t *TopicSettings) toSpec(d *deferrals) spec.Topic {
	if t == nil {
		return spec.Topic{}
	}
	return spec.Topic{
		Existing:         d.value(t.Existing, placeholderTopic),
		Name:             t.Name,
		MessageRetention: spec.NewDuration(t.MessageRetention),
		Schema:           t.Schema,
		SchemaEncoding:   t.SchemaEncoding,
		KMSKeyName:       d.value(t.KMSKeyName, placeholderKMSKey),
		Publishers:       t.Publishers,
	}
}

// toSpec is c as stack config, its inputs read through d.
func (c *ConsumerSettings) toSpec(d *deferrals) spec.Consumer {
	return spec.Consumer{
		Image:                d.value(c.Image, placeholderImage),
		ServiceAccount:       d.value(c.ServiceAccount, placeholderAccount),
		ServiceName:          c.ServiceName,
		RequestTimeout:       spec.NewDuration(c.RequestTimeout),
		Concurrency:          c.Concurrency,
		MinInstances:         c.MinInstances,
		MaxInstances:         c.MaxInstances,
		Ingress:              c.Ingress,
		CPU:                  c.CPU,
		Memory:               c.Memory,
		ExecutionEnvironment: c.ExecutionEnvironment,
		MaxMessageBytes:      c.MaxMessageBytes,
		Routes:               c.Routes,
		Store:                c.Store,
		CollectionPrefix:     c.CollectionPrefix,
		Audience:             c.Audience,
		CallbackAccounts:     c.CallbackAccounts,
		CallbackAudience:     c.CallbackAudience,
		VPCAccess:            c.VPCAccess.toSpec(),
		CloudSQLInstances:    c.CloudSQLInstances,
		WorkerPool:           c.WorkerPool,
		Handler:              c.Handler.toSpec(),
	}
}

// toSpec is v as stack config (nil for none).
func (v *VPCAccessSettings) toSpec() *spec.VPCAccess {
	if v == nil {
		return nil
	}
	return &spec.VPCAccess{Network: v.Network, Subnetwork: v.Subnetwork, Tags: v.Tags, Egress: v.Egress}
}

// toSpec is s as stack config, keyed key.
func (s *SubscriptionSettings) toSpec(key string) *spec.Subscription {
	sub := &spec.Subscription{
		Key:                 key,
		Delivery:            s.Delivery,
		Name:                s.Name,
		AckDeadline:         spec.NewDuration(s.AckDeadline),
		MaxDeliveryAttempts: s.MaxDeliveryAttempts,
		MinBackoff:          spec.NewDuration(s.MinBackoff),
		MaxBackoff:          spec.NewDuration(s.MaxBackoff),
		Retention:           spec.NewDuration(s.Retention),
		Filter:              s.Filter,
		Ordering:            s.Ordering,
		ExactlyOnce:         s.ExactlyOnce,
		PushEndpoint:        s.PushEndpoint,
		Subscribers:         s.Subscribers,
		External:            s.External,
	}
	if dl := s.DeadLetter; dl != nil {
		sub.DeadLetter = spec.DeadLetter{Retention: spec.NewDuration(dl.Retention), OptOut: dl.OptOut, Reason: dl.Reason}
	}
	return sub
}

// raw is d as written, "" when unset.
func raw(d *spec.Duration) string {
	if d == nil {
		return ""
	}
	return d.Raw
}

// optional is s as an input, nil when empty.
func optional(s string) pulumi.StringInput {
	if s == "" {
		return nil
	}
	return pulumi.String(s)
}
