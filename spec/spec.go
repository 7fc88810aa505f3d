// Package spec is the typed, declarative description of one eventpipe stack:
// the pipelines of one environment and the stack-wide settings they share.
//
// It is read from Pulumi stack config (the `eventpipe:` namespace of
// stacks/Pulumi.<env>.yaml), completed with the defaults of the reliability
// design (seed 001) and validated before anything is declared. It holds no
// Pulumi resources: the Pulumi components, the offline renderer, the policy
// checker and the local runner all read the same Stack value.
package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
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
	// Project is the GCP project id every resource is created in.
	Project string `json:"project"`
	// ProjectNumber is the numeric id of Project; it names the Pub/Sub
	// service agent service-NUMBER@gcp-sa-pubsub.iam.gserviceaccount.com.
	ProjectNumber string `json:"projectNumber"`
	// Region is where the Cloud Run consumers run.
	Region string `json:"region"`
	// Env is the environment label value (defaults to the stack name).
	Env string `json:"env"`
	// Store is the stack-wide consumer store URL; it may be a Pulumi secret.
	// A pipeline's consumer.store overrides it.
	Store string `json:"store"`
	// StoreSecret is true when Store came from a secure config value.
	StoreSecret bool `json:"-"`
	// NotificationChannels are Cloud Monitoring channel resource names
	// (projects/P/notificationChannels/ID) that alerts of this stack page.
	NotificationChannels []string `json:"notificationChannels"`
	// Defaults are per-environment defaults every pipeline inherits.
	Defaults Defaults `json:"defaults"`
	// Pipelines are keyed by name: adding one never renames another.
	Pipelines map[string]*Pipeline `json:"pipelines"`
}

// Defaults are the per-environment values a pipeline inherits when it does
// not set them itself.
type Defaults struct {
	// MaxDeliveryAttempts before a message is dead-lettered (5–100).
	MaxDeliveryAttempts *int `json:"maxDeliveryAttempts,omitempty"`
	// MinBackoff of the retry policy (0s–600s).
	MinBackoff *Duration `json:"minBackoff,omitempty"`
	// MaxBackoff of the retry policy (0s–600s).
	MaxBackoff *Duration `json:"maxBackoff,omitempty"`
	// DLQRetention of dead-letter subscriptions (7d–14d).
	DLQRetention *Duration `json:"dlqRetention,omitempty"`
	// MinInstances of consumers (0–100).
	MinInstances *int `json:"minInstances,omitempty"`
	// MaxInstances of consumers (1–1000).
	MaxInstances *int `json:"maxInstances,omitempty"`
}

// Pipeline is one named event pipeline: a topic, the subscriptions on it and
// the consumer service they deliver to.
type Pipeline struct {
	// Name is the map key in eventpipe:pipelines.
	Name string `json:"-"`
	// Description is free text for humans.
	Description string `json:"description,omitempty"`
	// Labels are extra GCP labels put on every resource of the pipeline.
	Labels map[string]string `json:"labels,omitempty"`
	// Topic configures the source topic.
	Topic Topic `json:"topic"`
	// Consumer configures the Cloud Run service the subscriptions feed.
	Consumer Consumer `json:"consumer"`
	// Subscriptions are keyed by a short name unique within the pipeline.
	Subscriptions map[string]*Subscription `json:"subscriptions"`
}

// Topic configures a pipeline's source topic.
type Topic struct {
	// Name is the topic id (default: the pipeline name).
	Name string `json:"name,omitempty"`
	// MessageRetention keeps acknowledged messages for replay (10m–31d, default 7d).
	MessageRetention *Duration `json:"messageRetention,omitempty"`
	// Schema is an optional Pub/Sub schema, projects/P/schemas/S.
	Schema string `json:"schema,omitempty"`
	// SchemaEncoding is JSON or BINARY (default JSON when Schema is set).
	SchemaEncoding string `json:"schemaEncoding,omitempty"`
	// KMSKeyName is an optional CMEK key,
	// projects/P/locations/L/keyRings/R/cryptoKeys/K.
	KMSKeyName string `json:"kmsKeyName,omitempty"`
}

// Consumer configures the Cloud Run v2 service running the eventpipe consumer.
type Consumer struct {
	// Image is the container image, by digest (…@sha256:<64 hex>) or tag (…:tag).
	Image string `json:"image"`
	// ServiceName is the Cloud Run service name (default <pipeline>-consumer).
	ServiceName string `json:"serviceName,omitempty"`
	// RequestTimeout of the service; push ack deadlines are aligned to it (10s–600s, default 60s).
	RequestTimeout *Duration `json:"requestTimeout,omitempty"`
	// Concurrency is the maximum concurrent requests per instance (1–1000, default 80).
	Concurrency *int `json:"concurrency,omitempty"`
	// MinInstances kept warm (0–100, default from eventpipe:defaults, else 0).
	MinInstances *int `json:"minInstances,omitempty"`
	// MaxInstances the service scales to (1–1000, default from eventpipe:defaults, else 10).
	MaxInstances *int `json:"maxInstances,omitempty"`
	// Ingress is internal or internal-and-cloud-load-balancing (default internal).
	Ingress string `json:"ingress,omitempty"`
	// CPU limit per instance (default "1").
	CPU string `json:"cpu,omitempty"`
	// Memory limit per instance (default "512Mi").
	Memory string `json:"memory,omitempty"`
	// Routes is the path of a routes file inside the image (default: the embedded routes).
	Routes string `json:"routes,omitempty"`
	// Store is the store URL (default eventpipe:store, else firestore://PROJECT/(default)).
	Store string `json:"store,omitempty"`
	// CollectionPrefix prefixes the store collections (default eventpipe_).
	CollectionPrefix string `json:"collectionPrefix,omitempty"`
	// Audience is the OIDC audience of push tokens (default <project>/<pipeline>/pubsub-push);
	// it is also registered as a custom audience of the service.
	Audience string `json:"audience,omitempty"`
}

// Subscription configures one subscription on the pipeline topic.
type Subscription struct {
	// Key is the map key in the pipeline's subscriptions.
	Key string `json:"-"`
	// Delivery is push or pull.
	Delivery string `json:"delivery"`
	// Name is the subscription id (default <pipeline>-<key>).
	Name string `json:"name,omitempty"`
	// AckDeadline (10s–600s; pull default 60s, push default the consumer's request timeout).
	AckDeadline *Duration `json:"ackDeadline,omitempty"`
	// MaxDeliveryAttempts before dead-lettering (5–100, default from eventpipe:defaults, else 5).
	MaxDeliveryAttempts *int `json:"maxDeliveryAttempts,omitempty"`
	// MinBackoff of the retry policy (0s–600s, default 10s).
	MinBackoff *Duration `json:"minBackoff,omitempty"`
	// MaxBackoff of the retry policy (0s–600s, default 600s).
	MaxBackoff *Duration `json:"maxBackoff,omitempty"`
	// Retention of unacknowledged messages (10m–31d, default 7d).
	Retention *Duration `json:"retention,omitempty"`
	// Filter is an immutable Pub/Sub filter expression (at most 256 bytes).
	Filter string `json:"filter,omitempty"`
	// Ordering enables message ordering by ordering key.
	Ordering bool `json:"ordering,omitempty"`
	// ExactlyOnce enables exactly-once delivery (pull only).
	ExactlyOnce bool `json:"exactlyOnce,omitempty"`
	// PushEndpoint overrides the push URL (https only; default <service uri>/pubsub/push).
	PushEndpoint string `json:"pushEndpoint,omitempty"`
	// DeadLetter configures the dead-letter topic and subscription.
	DeadLetter DeadLetter `json:"deadLetter"`
}

// DeadLetter configures a subscription's dead-letter queue.
type DeadLetter struct {
	// Retention of the never-expiring DLQ subscription (7d–14d, default 14d).
	Retention *Duration `json:"retention,omitempty"`
	// OptOut removes the DLQ. Allowed only with a Reason; both are recorded as labels.
	OptOut bool `json:"optOut,omitempty"`
	// Reason explains an opt-out; it becomes the eventpipe_dlq_opt_out_reason label.
	Reason string `json:"reason,omitempty"`
}

// Push reports whether the subscription delivers by HTTP push.
func (s *Subscription) Push() bool { return s.Delivery == DeliveryPush }

// HasDLQ reports whether the subscription gets a dead-letter topic.
func (s *Subscription) HasDLQ() bool { return !s.DeadLetter.OptOut }

// DLQTopicName is the dead-letter topic id: <subscription-id>.dlq (seed 001).
func (s *Subscription) DLQTopicName() string { return s.Name + ".dlq" }

// DLQSubscriptionName is the id of the subscription that keeps the
// dead-letter topic's messages (a topic with no subscription drops them).
func (s *Subscription) DLQSubscriptionName() string { return s.Name + ".dlq-sub" }

// SortedPipelines returns the pipelines ordered by name, for deterministic output.
func (s *Stack) SortedPipelines() []*Pipeline {
	out := make([]*Pipeline, 0, len(s.Pipelines))
	for _, name := range SortedKeys(s.Pipelines) {
		out = append(out, s.Pipelines[name])
	}
	return out
}

// SortedSubscriptions returns the pipeline's subscriptions ordered by key.
func (p *Pipeline) SortedSubscriptions() []*Subscription {
	out := make([]*Subscription, 0, len(p.Subscriptions))
	for _, key := range SortedKeys(p.Subscriptions) {
		out = append(out, p.Subscriptions[key])
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
// pipeline's pull subscriptions, by subscription key order.
func (s *Stack) PullSubscriptions(p *Pipeline) []string {
	var out []string
	for _, sub := range p.SortedSubscriptions() {
		if !sub.Push() {
			out = append(out, "projects/"+s.Project+"/subscriptions/"+sub.Name)
		}
	}
	return out
}

// Version is the image tag or digest, reported by the consumer as EVENTPIPE_VERSION.
func (c *Consumer) Version() string {
	if _, digest, ok := strings.Cut(c.Image, "@"); ok {
		return digest
	}
	if i := strings.LastIndex(c.Image, ":"); i > strings.LastIndex(c.Image, "/") {
		return c.Image[i+1:]
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

// ConsumerAccountID is the account id of the consumer's own service account.
func (p *Pipeline) ConsumerAccountID() string { return p.Name + "-run" }

// PubSubServiceAgent is the member string of the project's Pub/Sub service agent.
func (s *Stack) PubSubServiceAgent() string {
	return "serviceAccount:service-" + s.ProjectNumber + "@gcp-sa-pubsub.iam.gserviceaccount.com"
}

// ServiceAccountEmail is the email of account id in the stack's project.
func (s *Stack) ServiceAccountEmail(accountID string) string {
	return accountID + "@" + s.Project + ".iam.gserviceaccount.com"
}
