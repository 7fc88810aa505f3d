package spec

import (
	"strings"
	"time"

	"github.com/eventpipe/eventpipe/consumer/settings"
)

// eventpipe's reliability defaults and the limits Google Cloud
// enforces (see docs/configuration.md for the sources). Every default is
// secure and complete; the comment says why.
const (
	// DefaultRegion is where consumers run when eventpipe:region is unset.
	DefaultRegion = "europe-west1"

	// DefaultMaxDeliveryAttempts: 5 sends poison to the DLQ quickly on high-signal streams.
	DefaultMaxDeliveryAttempts = 5
	// MinMaxDeliveryAttempts and MaxMaxDeliveryAttempts are Pub/Sub's limits.
	MinMaxDeliveryAttempts = 5
	MaxMaxDeliveryAttempts = 100

	// DefaultMinBackoff: without a retry policy Pub/Sub redelivers at once; 10s gives a
	// transient fault room to clear.
	DefaultMinBackoff = 10 * time.Second
	// DefaultMaxBackoff caps backoff at 10 minutes, Pub/Sub's own maximum.
	DefaultMaxBackoff = 600 * time.Second
	// MaxBackoffLimit is Pub/Sub's upper bound for either backoff.
	MaxBackoffLimit = 600 * time.Second

	// DefaultPullAckDeadline: 60s, long enough for a transaction and a retry.
	DefaultPullAckDeadline = 60 * time.Second
	// MinAckDeadline and MaxAckDeadline are Pub/Sub's limits.
	MinAckDeadline = 10 * time.Second
	MaxAckDeadline = 600 * time.Second

	// DefaultRequestTimeout of consumers; push ack deadlines follow it.
	DefaultRequestTimeout = settings.DefaultRequestTimeout

	// DefaultRetention of topics and subscriptions keeps a week for replay/seek.
	DefaultRetention = 7 * Day
	// MinRetention and MaxRetention are Pub/Sub's limits.
	MinRetention = 10 * time.Minute
	MaxRetention = 31 * Day

	// DefaultDLQRetention: 7–14 days of DLQ retention leaves time for triage.
	DefaultDLQRetention = 14 * Day
	MinDLQRetention     = 7 * Day
	MaxDLQRetention     = 14 * Day

	// MaxFilterBytes is Pub/Sub's limit on a subscription filter.
	MaxFilterBytes = 256

	// DefaultConcurrency is Cloud Run's default request concurrency.
	DefaultConcurrency = 80
	MaxConcurrency     = 1000
	// DefaultMinInstances: scale to zero unless an environment says otherwise.
	DefaultMinInstances = 0
	MaxMinInstances     = 100
	// DefaultMaxInstances bounds cost and Firestore write pressure.
	DefaultMaxInstances = 10
	MaxMaxInstances     = 1000

	// IngressInternal accepts only traffic from the project/VPC (Pub/Sub push
	// from the same project counts as internal).
	IngressInternal = "internal"
	// IngressInternalLB additionally accepts traffic from Cloud Load Balancing.
	IngressInternalLB = "internal-and-cloud-load-balancing"

	DefaultCPU    = "1"
	DefaultMemory = "512Mi"

	// DefaultCollectionPrefix is the consumer binary's own default collection
	// prefix (EVENTPIPE_COLLECTION_PREFIX unset); stacks give each pipeline
	// its own, see PipelineCollectionPrefix.
	DefaultCollectionPrefix = settings.DefaultCollectionPrefix
	// ExpiryField is the timestamp field Firestore TTL deletes documents by.
	ExpiryField = "expireAt"

	// HealthPath is the consumer's startup and liveness endpoint.
	HealthPath = "/healthz"
	// PushPath is the consumer's Pub/Sub push endpoint.
	PushPath = "/pubsub/push"
	// ContainerPort is the port Cloud Run sends requests to (it sets $PORT).
	ContainerPort = 8080
)

// StoreCollections are the consumer's collections that carry ExpiryField and
// get a Firestore TTL policy (without the prefix).
func StoreCollections() []string {
	return []string{"dedupe", "leases", "receipts", "poison"}
}

// PipelineCollectionPrefix is the collection prefix a pipeline's consumer
// gets when consumer.collectionPrefix is unset: DefaultCollectionPrefix, the
// pipeline name with '-' written '_', and '_' (eventpipe_system_events_ for
// pipeline system-events; pipeline names have no '_', so distinct pipelines
// get distinct prefixes).
//
// Each pipeline owns its collections rather than sharing one set per
// database, for three reasons:
//   - the engine's record ids are {env}__{event key}, without the pipeline,
//     so pipelines sharing {prefix}dedupe or {prefix}poison would take the
//     same event id arriving on two pipelines for a duplicate (the second
//     effect silently skipped) or, with another payload, for poison;
//   - a Firestore TTL policy (one gcp:firestore/field:Field per collection
//     group and field) is a single object of the database: with collections
//     of its own, each pipeline declares exactly the TTL policies it needs,
//     and adding or removing a pipeline never touches another's;
//   - it keeps the layout where each pipeline has its own dedupe
//     collection (ops_dedupe, ingest_pipelines_dedupe).
//
// The cost is four TTL policies and index exemptions per Firestore-backed
// pipeline instead of four per database. Validation rejects two pipelines
// using the same prefix in the same shared store (see Consumer.SharedStore).
func PipelineCollectionPrefix(pipeline string) string {
	return DefaultCollectionPrefix + strings.ReplaceAll(pipeline, "-", "_") + "_"
}
