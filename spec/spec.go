// Package spec is the typed, declarative description of one eventpipe stack:
// the pipelines of one environment and the stack-wide settings they share.
//
// It is read from Pulumi stack config (the `eventpipe:` namespace of
// stacks/Pulumi.<env>.yaml), completed with eventpipe's reliability defaults
// and validated before anything is declared. It holds no
// Pulumi resources: the Pulumi components, the offline renderer, the policy
// checker and the local runner all read the same Stack value, and the
// settings of a pipeline's parts (Topic, Consumer, Subscription, …) are
// also the arguments the components and their provider take.
package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// Namespace is the Pulumi config namespace every eventpipe key lives in.
const Namespace = "eventpipe"

// Config keys read from the stack (without the namespace prefix).
const (
	KeyProject              = "project"
	KeyProjectNumber        = "projectNumber"
	KeyRegion               = "region"
	KeyEnv                  = "env"
	KeyStore                = "store"
	KeyNotificationChannels = "notificationChannels"
	KeyDefaults             = "defaults"
	KeyPipelines            = "pipelines"
	// KeyManageAPIs turns the enabling of the stack's Google Cloud APIs off (see Stack.ManageAPIs).
	KeyManageAPIs = "manageApis"
)

// Delivery modes of a subscription.
const (
	DeliveryPush = "push"
	DeliveryPull = "pull"
)

// Stack is the whole, validated configuration of one environment.
type Stack struct {
	// Name is the Pulumi stack name (dev, staging, prod).
	Name string `json:"-"`
	// Project is the GCP project id every resource is created in. Required.
	Project string `json:"project"`
	// ProjectNumber is the numeric id of the project; it names the Pub/Sub service agent
	// (service-NUMBER@gcp-sa-pubsub.iam.gserviceaccount.com) that dead-lettering needs. Required.
	ProjectNumber string `json:"projectNumber"`
	// Region is the Cloud Run region of the consumers (default europe-west1).
	Region string `json:"region"`
	// Env is the environment label value (defaults to the stack name).
	Env string `json:"env"`
	// Store is the stack-wide consumer store URL; it may be a Pulumi secret.
	// A pipeline's consumer.store overrides it.
	Store string `json:"store"`
	// StoreSecret is true when Store came from a secure config value.
	StoreSecret bool `json:"-"`
	// NotificationChannels are the Cloud Monitoring channels (projects/P/notificationChannels/ID)
	// the stack's alerts notify.
	NotificationChannels []string `json:"notificationChannels"`
	// Defaults are the per-environment defaults every pipeline inherits.
	Defaults Defaults `json:"defaults"`
	// Pipelines are the pipelines of the stack, keyed by name: adding one never renames another.
	Pipelines map[string]*Pipeline `json:"pipelines"`
	// Alerts are the stack-wide alerting settings: team, channels per severity, thresholds (see below).
	Alerts StackAlerts `json:"alerts"`
	// ManageAPIs enables the Google Cloud APIs the stack's resources use (projects.Service, never disabled
	// on destroy) and makes every resource wait for its API (default true). Set false where an
	// organisation enables APIs centrally.
	ManageAPIs *bool `json:"manageApis,omitempty"`
	// Setup configures the waits for API enablement and IAM grants to take effect, and whether the stack
	// creates its Firestore databases.
	Setup Setup `json:"setup"`
}

// Defaults are the per-environment values a pipeline inherits when it does
// not set them itself.
type Defaults struct {
	// MaxDeliveryAttempts is how many deliveries are tried before a message is dead-lettered (5–100, default 5).
	MaxDeliveryAttempts *int `json:"maxDeliveryAttempts,omitempty"`
	// MinBackoff is the retry policy's shortest wait before redelivery (0s–10m, default 10s).
	MinBackoff string `json:"minBackoff,omitempty"`
	// MaxBackoff is the retry policy's longest wait before redelivery (0s–10m, default 10m).
	MaxBackoff string `json:"maxBackoff,omitempty"`
	// DLQRetention is how long dead-letter subscriptions keep messages (7d–14d, default 14d).
	DLQRetention string `json:"dlqRetention,omitempty"`
	// MinInstances is how many consumer instances are kept warm (0–100, default 0).
	MinInstances *int `json:"minInstances,omitempty"`
	// MaxInstances is the most instances a consumer scales to (1–1000, default 10).
	MaxInstances *int `json:"maxInstances,omitempty"`
	// Protect guards the environment's state against deletion (default true): Pulumi's protect on every
	// topic, subscription, dead-letter topic and dead-letter subscription, so a deletion or a replacement
	// (which drops a subscription's backlog) fails until it is set false, and Cloud Run deletion protection
	// on every consumer. Set false in development and short-lived stacks so `pulumi destroy` works.
	Protect *bool `json:"protect,omitempty"`
	// TraceCollector adds the Google-Built OpenTelemetry Collector as a sidecar of every consumer (default
	// false): the consumer exports its traces to it over OTLP (localhost:4317) and it writes them to Cloud
	// Trace; the consumer's service account gets roles/cloudtrace.agent.
	TraceCollector *bool `json:"traceCollector,omitempty"`
}

// Pipeline is one named event pipeline: a topic, the subscriptions on it and
// the consumer service they deliver to.
type Pipeline struct {
	// Name is the map key in eventpipe:pipelines.
	Name string `json:"-"`
	// Description is free text for humans; it is not deployed.
	Description string `json:"description,omitempty"`
	// Labels are extra GCP labels put on the pipeline's topic, subscriptions and service.
	Labels map[string]string `json:"labels,omitempty"`
	// Topic is the source topic (see below).
	Topic Topic `json:"topic"`
	// Consumer is the Cloud Run service the subscriptions feed (see below). Required.
	Consumer Consumer `json:"consumer"`
	// Subscriptions are the subscriptions on the topic, keyed by a short name unique within the pipeline. At least one.
	Subscriptions map[string]*Subscription `json:"subscriptions"`
	// Alerts are the pipeline's alerting settings; every pipeline gets its alerts unless it opts out (see below).
	Alerts PipelineAlerts `json:"alerts"`
	// Protect overrides eventpipe:defaults.protect for this pipeline, e.g. false to decommission it.
	Protect *bool `json:"protect,omitempty"`
}

// The settings of a pipeline's parts (Topic, Consumer, VPCAccess, Handler,
// Subscription, DeadLetter, PipelineAlerts) are one type each, for every
// way they are given: decoded from stack config by their `json` names, and
// taken by the Pulumi components (package components) and the component
// provider's schema by their `pulumi` names, which are the same. A field
// whose value may be another resource's output is a pulumi.StringInput: a
// stack file sets it as a string (pulumi.String), a program may pass an
// output, and Text reads it. Durations are strings with a unit: "10s",
// "10m", "14d". Unset values take the defaults documented on each field;
// Validate fills them in.

// Topic configures a pipeline's source topic.
type Topic struct {
	// Existing is the full name (projects/P/topics/T) of a topic another team owns: the pipeline
	// subscribes to it and declares no topic of its own. The other topic settings, except publishers, are then its owner's.
	Existing pulumi.StringInput `json:"existing,omitempty" pulumi:"existing,optional"`
	// Name is the topic id (default: the pipeline or component name).
	Name string `json:"name,omitempty" pulumi:"name,optional"`
	// MessageRetention is how long the topic keeps messages for replay with seek (10m–31d, default 7d).
	MessageRetention string `json:"messageRetention,omitempty" pulumi:"messageRetention,optional"`
	// Schema is an optional Pub/Sub schema publishers must satisfy, projects/P/schemas/S.
	Schema string `json:"schema,omitempty" pulumi:"schema,optional"`
	// SchemaEncoding is JSON or BINARY (default JSON when schema is set).
	SchemaEncoding string `json:"schemaEncoding,omitempty" pulumi:"schemaEncoding,optional"`
	// KMSKeyName is an optional customer-managed key encrypting messages at rest,
	// projects/P/locations/L/keyRings/R/cryptoKeys/K.
	KMSKeyName pulumi.StringInput `json:"kmsKeyName,omitempty" pulumi:"kmsKeyName,optional"`
	// Publishers are IAM members (serviceAccount:EMAIL, group:…) granted roles/pubsub.publisher on the topic:
	// the producers allowed to publish to it.
	Publishers []string `json:"publishers,omitempty" pulumi:"publishers,optional"`
}

// Consumer configures the Cloud Run v2 service running the eventpipe consumer.
type Consumer struct {
	// Image is the consumer container image, by digest (REPO@sha256:<64 hex>) or tag (REPO:TAG). Required.
	Image pulumi.StringInput `json:"image" pulumi:"image"`
	// ServiceName is the Cloud Run service name (default PIPELINE-consumer).
	ServiceName string `json:"serviceName,omitempty" pulumi:"serviceName,optional"`
	// RequestTimeout is the service's request timeout; push ack deadlines equal it (10s–10m, default 60s).
	RequestTimeout string `json:"requestTimeout,omitempty" pulumi:"requestTimeout,optional"`
	// Concurrency is the most messages an instance handles at once, pushed or pulled (1–1000, default 80).
	// When memory cannot hold that many messages of maxMessageBytes, the service gets the lower number
	// that fits (see "Instance sizing").
	Concurrency *int `json:"concurrency,omitempty" pulumi:"concurrency,optional"`
	// MinInstances is how many instances are kept warm (0–100, default eventpipe:defaults.minInstances, else 0). A pipeline that pulls a subscription must set at least 1: nothing sets it for you, and a stack whose pulling consumer may scale to zero is refused.
	MinInstances *int `json:"minInstances,omitempty" pulumi:"minInstances,optional"`
	// MaxInstances is the most instances the service scales to (1–1000, default eventpipe:defaults.maxInstances, else 10).
	MaxInstances *int `json:"maxInstances,omitempty" pulumi:"maxInstances,optional"`
	// Ingress is internal or internal-and-cloud-load-balancing (default internal), or all with
	// callbackAccounts, for callbacks from Cloud Run jobs that do not send them through a VPC: requests
	// then pass only with an OIDC token of a push or callback account (see README, Deploying).
	Ingress string `json:"ingress,omitempty" pulumi:"ingress,optional"`
	// CPU is the CPU limit per instance: "1", "2", "4", "6" or "8", or below 1 ("0.5", "500m") with
	// concurrency 1 in the first generation (default "1"). See "Instance sizing" for what memory each allows.
	CPU string `json:"cpu,omitempty" pulumi:"cpu,optional"`
	// Memory is the memory limit per instance, 128Mi–32Gi in Mi or Gi, e.g. "512Mi" or "2Gi" (default "512Mi").
	Memory string `json:"memory,omitempty" pulumi:"memory,optional"`
	// ExecutionEnvironment is Cloud Run's execution environment: gen2 (default; at least 512Mi) or gen1
	// (down to 128Mi, and CPU below 1).
	ExecutionEnvironment string `json:"executionEnvironment,omitempty" pulumi:"executionEnvironment,optional"`
	// MaxMessageBytes is the largest message the pipeline's producers publish (1–10000000 bytes, default
	// 10000000, Pub/Sub's limit). It sizes the instance: GOMEMLIMIT and the concurrency memory can hold.
	MaxMessageBytes *int `json:"maxMessageBytes,omitempty" pulumi:"maxMessageBytes,optional"`
	// ServiceAccount is the email of an existing service account to run the consumer as (default: the
	// pipeline gets its own, PIPELINE-run). It is granted the store, subscriber and secret roles the consumer needs.
	ServiceAccount pulumi.StringInput `json:"serviceAccount,omitempty" pulumi:"serviceAccount,optional"`
	// Routes is the path of a routes file inside the image (default: the embedded routes).
	Routes string `json:"routes,omitempty" pulumi:"routes,optional"`
	// Store is the consumer's store URL: firestore://PROJECT/DATABASE, postgres://…, bbolt:///PATH or mem://
	// (default eventpipe:store, else firestore://PROJECT/(default)). Firestore stores get TTL policies.
	Store string `json:"store,omitempty" pulumi:"store,optional"`
	// StoreSecret is a store URL carrying a credential (a PostgreSQL URL with its password), best a secret
	// output; it is kept in a Secret Manager secret the consumer reads, never in the service definition.
	// A stack file sets it as a secret eventpipe:store.
	StoreSecret pulumi.StringInput `json:"-" pulumi:"storeSecret,optional" provider:"secret"`
	// CollectionPrefix is prepended to the store's collection names: {prefix}dedupe, leases, receipts, poison
	// (default eventpipe_PIPELINE_, the pipeline name with - as _). Unique per store: pipelines never share these collections.
	CollectionPrefix string `json:"collectionPrefix,omitempty" pulumi:"collectionPrefix,optional"`
	// Audience is the OIDC audience of push tokens (default PROJECT/PIPELINE/pubsub-push);
	// it is registered as a custom audience of the service.
	Audience string `json:"audience,omitempty" pulumi:"audience,optional"`
	// CallbackAccounts are the emails of the service accounts (NAME@PROJECT.iam.gserviceaccount.com) whose
	// jobs may call the consumer's callback endpoint; each is granted roles/run.invoker on the service
	// (default none: callbacks are refused).
	CallbackAccounts []string `json:"callbackAccounts,omitempty" pulumi:"callbackAccounts,optional"`
	// CallbackAudience is the OIDC audience callers request their tokens for (default: audience); it is
	// registered as a custom audience of the service. Only with callbackAccounts.
	CallbackAudience string `json:"callbackAudience,omitempty" pulumi:"callbackAudience,optional"`
	// VPCAccess gives the consumer Direct VPC egress, for a store on a private address (see below).
	VPCAccess *VPCAccess `json:"vpcAccess,omitempty" pulumi:"vpcAccess,optional"`
	// CloudSQLInstances are Cloud SQL instances (PROJECT:REGION:INSTANCE) the consumer connects to through
	// the Cloud Run Cloud SQL volume at /cloudsql; a postgres store with host=/cloudsql/INSTANCE needs its
	// instance listed. The consumer's account gets roles/cloudsql.client on each instance's project.
	CloudSQLInstances []string `json:"cloudSqlInstances,omitempty" pulumi:"cloudSqlInstances,optional"`
	// WorkerPool runs the consumer on a Cloud Run worker pool instead of a service (default false): no
	// HTTP endpoint and no request-driven scaling, for pipelines whose consumer only pulls. It runs
	// minInstances instances; push subscriptions, callbacks and ingress need a service.
	WorkerPool bool `json:"workerPool,omitempty" pulumi:"workerPool,optional"`
	// Handler is the team's own container beside the consumer (see the Handler section and
	// docs/handlers.md); default none.
	Handler *Handler `json:"handler,omitempty" pulumi:"handler,optional"`
}

// VPCAccess is a consumer's Direct VPC egress: its instances get an address
// in subnetwork and send traffic to the VPC by egress.
type VPCAccess struct {
	// Network is the VPC network name or full name (projects/P/global/networks/N). Required.
	Network string `json:"network" pulumi:"network"`
	// Subnetwork is the subnet in the consumer's region the instances take addresses from (default: the
	// subnet named like the network).
	Subnetwork string `json:"subnetwork,omitempty" pulumi:"subnetwork,optional"`
	// Tags are network tags on the instances, for firewall rules.
	Tags []string `json:"tags,omitempty" pulumi:"tags,optional"`
	// Egress is PRIVATE_RANGES_ONLY (default: only private addresses go through the VPC) or ALL_TRAFFIC.
	Egress string `json:"egress,omitempty" pulumi:"egress,optional"`
}

// Subscription configures one subscription on the pipeline topic, with its dead-letter queue.
type Subscription struct {
	// Key is the map key in the pipeline's subscriptions.
	Key string `json:"-"`
	// Delivery is push (Pub/Sub calls the consumer) or pull (the consumer, or external subscribers, pull). Required.
	Delivery string `json:"delivery" pulumi:"delivery"`
	// Name is the subscription id (default PIPELINE-KEY; a Subscription component's name on its own).
	Name string `json:"name,omitempty" pulumi:"name,optional"`
	// AckDeadline is how long Pub/Sub waits for an ack (10s–10m; pull default 60s, push: the consumer's requestTimeout).
	AckDeadline string `json:"ackDeadline,omitempty" pulumi:"ackDeadline,optional"`
	// MaxDeliveryAttempts is how many deliveries are tried before dead-lettering (5–100, default eventpipe:defaults.maxDeliveryAttempts, else 5).
	MaxDeliveryAttempts *int `json:"maxDeliveryAttempts,omitempty" pulumi:"maxDeliveryAttempts,optional"`
	// MinBackoff is the retry policy's shortest wait (0s–10m, default eventpipe:defaults.minBackoff, else 10s).
	MinBackoff string `json:"minBackoff,omitempty" pulumi:"minBackoff,optional"`
	// MaxBackoff is the retry policy's longest wait (0s–10m, default eventpipe:defaults.maxBackoff, else 10m).
	MaxBackoff string `json:"maxBackoff,omitempty" pulumi:"maxBackoff,optional"`
	// Retention is how long unacknowledged messages are kept (10m–31d, default 7d).
	Retention string `json:"retention,omitempty" pulumi:"retention,optional"`
	// Filter is a Pub/Sub filter expression, at most 256 bytes; it cannot be changed later.
	Filter string `json:"filter,omitempty" pulumi:"filter,optional"`
	// Ordering delivers messages with the same ordering key in order (default false); it cannot be changed later.
	Ordering bool `json:"ordering,omitempty" pulumi:"ordering,optional"`
	// ExactlyOnce enables exactly-once delivery; pull only (default false).
	ExactlyOnce bool `json:"exactlyOnce,omitempty" pulumi:"exactlyOnce,optional"`
	// PushEndpoint overrides the push URL; push only, https only (default SERVICE_URL/pubsub/push).
	PushEndpoint string `json:"pushEndpoint,omitempty" pulumi:"pushEndpoint,optional"`
	// DeadLetter is the dead-letter queue (default: one, with the retention below); validation fills it in.
	DeadLetter *DeadLetter `json:"deadLetter,omitempty" pulumi:"deadLetter,optional"`
	// Subscribers are IAM members (serviceAccount:EMAIL, …) granted roles/pubsub.subscriber on a pull
	// subscription, so consumers outside the pipeline can read it.
	Subscribers []string `json:"subscribers,omitempty" pulumi:"subscribers,optional"`
	// External marks a pull subscription its subscribers read instead of the pipeline's consumer: it is left
	// out of the consumer's EVENTPIPE_PULL_SUBSCRIPTIONS (default false). Needs delivery: pull and subscribers.
	External bool `json:"external,omitempty" pulumi:"external,optional"`
}

// DeadLetter configures a subscription's dead-letter queue.
type DeadLetter struct {
	// Retention is how long the never-expiring DLQ subscription keeps messages (7d–14d, default eventpipe:defaults.dlqRetention, else 14d).
	Retention string `json:"retention,omitempty" pulumi:"retention,optional"`
	// OptOut removes the dead-letter queue; allowed only with a reason, and recorded as labels.
	OptOut bool `json:"optOut,omitempty" pulumi:"optOut,optional"`
	// Reason explains an opt-out; it becomes the eventpipe_dlq_opt_out_reason label.
	Reason string `json:"reason,omitempty" pulumi:"reason,optional"`
}

// Push reports whether the subscription delivers by HTTP push.
func (s *Subscription) Push() bool { return s.Delivery == DeliveryPush }

// ConsumerPulls reports whether the pipeline's consumer pulls the
// subscription (a pull subscription not left to external subscribers).
func (s *Subscription) ConsumerPulls() bool { return s.Delivery == DeliveryPull && !s.External }

// HasDLQ reports whether the subscription gets a dead-letter topic.
func (s *Subscription) HasDLQ() bool { return s.DeadLetter == nil || !s.DeadLetter.OptOut }

// DLQTopicName is the dead-letter topic id: <subscription-id>.dlq.
func (s *Subscription) DLQTopicName() string { return s.Name + ".dlq" }

// DLQSubscriptionName is the id of the subscription that keeps the
// dead-letter topic's messages (a topic with no subscription drops them).
func (s *Subscription) DLQSubscriptionName() string { return s.Name + ".dlq-sub" }

// SortedPipelines returns the pipelines ordered by name, for deterministic output.
func (s *Stack) SortedPipelines() []*Pipeline { return sortedValues(s.Pipelines) }

// SortedSubscriptions returns the pipeline's subscriptions ordered by key.
func (p *Pipeline) SortedSubscriptions() []*Subscription { return sortedValues(p.Subscriptions) }

// sortedValues returns the values of m by key order.
func sortedValues[V any](m map[string]V) []V {
	out := make([]V, 0, len(m))
	for _, k := range SortedKeys(m) {
		out = append(out, m[k])
	}
	return out
}

// PushAccountID is the account id of the subscription's dedicated push
// service account: <pipeline>-<key>-push when that fits GCP's 30 characters,
// else a shortened form made unique by a hash of the full name.
func (p *Pipeline) PushAccountID(sub *Subscription) string {
	id := p.Name + "-" + sub.Key + "-push"
	if len(id) <= 30 {
		return id
	}
	sum := sha256.Sum256([]byte(p.Name + "/" + sub.Key))
	return strings.TrimRight((p.Name + "-" + sub.Key)[:24], "-") + "-" + hex.EncodeToString(sum[:])[:5]
}

// PushAccounts are the emails of the pipeline's push service accounts, by
// subscription key order.
func (s *Stack) PushAccounts(p *Pipeline) []string {
	var out []string
	for _, sub := range p.SortedSubscriptions() {
		if sub.Push() {
			out = append(out, s.ServiceAccountEmail(p.PushAccountID(sub)))
		}
	}
	return out
}

// PullSubscriptions are the full names (projects/P/subscriptions/S) of the
// pipeline's pull subscriptions its consumer reads, by subscription key order.
func (s *Stack) PullSubscriptions(p *Pipeline) []string {
	var out []string
	for _, sub := range p.SortedSubscriptions() {
		if sub.ConsumerPulls() {
			out = append(out, "projects/"+s.Project+"/subscriptions/"+sub.Name)
		}
	}
	return out
}

// Text is the value of in when the program knows it: a stack file's value,
// a literal a program or another language passes, or a placeholder a
// component validates in the place of another resource's output; "" for
// none (nil) and for an output.
func Text(in pulumi.StringInput) string {
	v, _ := in.(pulumi.String)
	return string(v)
}

// Length is a duration setting as validated ("10s", "14d"), 0 when unset
// or invalid (Validate reports those and fills the defaults).
func Length(setting string) time.Duration {
	d, err := ParseDuration(setting)
	if err != nil {
		return 0
	}
	return d
}

// Version is the image tag or digest, reported by the consumer as EVENTPIPE_VERSION.
func (c *Consumer) Version() string { return ImageVersion(Text(c.Image)) }

// ImageVersion is the tag or digest of image ("" for none).
func ImageVersion(image string) string {
	if _, digest, ok := strings.Cut(image, "@"); ok {
		return digest
	}
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[i+1:]
	}
	return ""
}

// FirestoreDatabase returns project and database of a firestore:// store URL.
func (c *Consumer) FirestoreDatabase() (project, database string, ok bool) {
	rest, found := strings.CutPrefix(c.Store, "firestore://")
	if !found {
		return "", "", false
	}
	project, database, ok = strings.Cut(rest, "/")
	return project, database, ok && project != "" && database != ""
}

// SharedStore returns the database a store URL names when consumers of
// different pipelines would share it: firestore://PROJECT/DATABASE for
// Firestore, the URL itself for PostgreSQL. bbolt and mem stores live inside
// one instance and are never shared (ok false).
func (c *Consumer) SharedStore() (target string, ok bool) {
	if project, database, ok := c.FirestoreDatabase(); ok {
		return "firestore://" + project + "/" + database, true
	}
	if strings.HasPrefix(c.Store, "postgres://") || strings.HasPrefix(c.Store, "postgresql://") {
		return c.Store, true
	}
	return "", false
}

// ConsumerAccountID is the account id of the consumer's own service account.
func (p *Pipeline) ConsumerAccountID() string { return p.Name + "-run" }

// TopicName is the full name of the pipeline's topic: topic.existing, or
// projects/PROJECT/topics/NAME of the topic it declares.
func (s *Stack) TopicName(p *Pipeline) string {
	if existing := Text(p.Topic.Existing); existing != "" {
		return existing
	}
	return "projects/" + s.Project + "/topics/" + p.Topic.Name
}

// Protected reports whether the pipeline's state is protected from deletion
// (pipeline protect, else eventpipe:defaults.protect; validation fills both).
func (s *Stack) Protected(p *Pipeline) bool {
	if p.Protect != nil {
		return *p.Protect
	}
	return s.Defaults.Protect == nil || *s.Defaults.Protect
}

// Traced reports whether the stack's consumers get the trace collector
// sidecar (eventpipe:defaults.traceCollector).
func (s *Stack) Traced() bool { return s.Defaults.TraceCollector != nil && *s.Defaults.TraceCollector }

// PubSubAgent is the IAM member of the Pub/Sub service agent of the project numbered
// number: the account dead-lettering publishes and acknowledges as.
func PubSubAgent(number string) string {
	return "serviceAccount:service-" + number + "@gcp-sa-pubsub.iam.gserviceaccount.com"
}

// ServiceAccountEmail is the email of account id in the stack's project.
func (s *Stack) ServiceAccountEmail(accountID string) string {
	return accountID + "@" + s.Project + ".iam.gserviceaccount.com"
}
