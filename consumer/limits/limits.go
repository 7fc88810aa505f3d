// Package limits holds the consumer's size limits and memory model: the facts the consumer
// enforces on every delivery and the Cloud Run component sizes instances by (GOMEMLIMIT and
// the per-instance request concurrency). It imports only the standard library, so
// infrastructure code can use it without linking the consumer.
package limits

// MaxMessageBytes is the largest Pub/Sub message: 10 MB (10,000,000 bytes, the service's
// publish request limit, data and attributes together).
const MaxMessageBytes = 10_000_000

// MaxIDBytes is the longest id a message may carry: its message id,
// ordering key and subscription, the producer's event id, the aggregate id
// a route reads, a callback's idempotency key. Longer ids are poison: an id
// is copied into log lines and documents, so an unbounded one could make
// either too large (Cloud Logging's entries are at most 256 KB, Firestore's
// documents 1 MiB). Pub/Sub's own ids and ordering keys are far shorter.
const MaxIDBytes = 1024

// MemoryLimitPercent is the share of the container's memory given to the Go runtime as its
// soft limit (GOMEMLIMIT); the rest is headroom for what the runtime does not count (the
// binary, stacks, a bbolt store's mapped file, the kernel's page tables). Under a burst of
// large messages the heap grows to the limit before the collector reclaims it, so the peak
// is the limit plus that headroom: at 70 % it stays under 85 % of the container for valid
// and poison messages alike (scripts/consumer-memory.sh).
const MemoryLimitPercent = 70

// MemoryLimit is the GOMEMLIMIT value, in bytes, for a container with containerBytes of
// memory.
func MemoryLimit(containerBytes int64) int64 {
	return containerBytes / 100 * MemoryLimitPercent
}

// MaxPushBodyBytes is the largest push request body a message of maxMessageBytes can make:
// its data grows by 4/3 in base64, and the envelope (ids, times, the subscription name and
// the attributes, JSON-escaped) adds EnvelopeOverheadBytes at most.
func MaxPushBodyBytes(maxMessageBytes int64) int64 {
	return (maxMessageBytes+2)/3*4 + EnvelopeOverheadBytes
}

// EnvelopeOverheadBytes bounds what a push envelope adds to the base64 data.
const EnvelopeOverheadBytes = 1 << 20

// PerMessagePercent is how much memory a delivery in flight may hold at once, in percent of
// its push body: the body as read, the decoded data and payload while it is processed, and
// for a poison message the record of it being written. Measured (scripts/consumer-memory.sh,
// 2026-11-27): a valid message takes about 2.7x its body, a poison one about 3.1x (the
// RFC 8785 fingerprint holds the canonical form and, for an object whose keys are out of
// order, a sorted copy of its members), more than this budget, which GOMEMLIMIT's headroom
// (MemoryLimitPercent) absorbs: at the concurrency MaxConcurrency derives, both peak under
// 85 % of the container (72 % and 81 % for 512 MiB).
const PerMessagePercent = 225

// BaseBytes is the consumer's own heap and runtime with no message in flight.
const BaseBytes = 32 << 20

// PerMessageBytes is the memory one delivery of a maxMessageBytes message may take.
func PerMessageBytes(maxMessageBytes int64) int64 {
	return DeliveryBytes(MaxPushBodyBytes(maxMessageBytes))
}

// DeliveryBytes is the memory a delivery whose push body is bodyBytes long may take while it
// is read and processed.
func DeliveryBytes(bodyBytes int64) int64 {
	return bodyBytes / 100 * PerMessagePercent
}

// DeliveryBudget is the memory an instance whose Go runtime has memoryLimit bytes
// (GOMEMLIMIT) may give to deliveries in flight: the limit less BaseBytes. The consumer
// admits a push only while the DeliveryBytes of those in flight fit in it; MaxConcurrency is
// how many maximum-size deliveries fit in it.
func DeliveryBudget(memoryLimit int64) int64 {
	return memoryLimit - BaseBytes
}

// MaxConcurrency is how many deliveries of maxMessageBytes messages an instance with
// containerBytes of memory can hold at once without passing its memory limit, at most
// requested. It is 0 when not even one fits: the container is too small for the message
// size, which configuration validation reports.
func MaxConcurrency(containerBytes, maxMessageBytes int64, requested int) int {
	fit := DeliveryBudget(MemoryLimit(containerBytes)) / PerMessageBytes(maxMessageBytes)
	if fit < 0 {
		return 0
	}
	return int(min(fit, int64(requested)))
}
