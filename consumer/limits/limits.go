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

// PerMessagePercent is how much memory a push delivery in flight may hold at once, in
// percent of its push body: the body as read, the data decoded from it (in place) and the
// payload indexed in it while it is processed, and for a poison message the record of it
// being written. A valid message holds about 1.4 times its body at most (its buffer
// growing to the declared length); a poison one about 2.9 (its payload's names, the
// record's chunks and their encodings beside the body: live heap sampled with the
// collector at every 1% of growth, the megabyte-key payload of scripts/consumer-memory.sh
// on bbolt). The budget is set for the poison one, so that the deliveries it admits never
// hold more than GOMEMLIMIT whatever they turn out to be (docs/benchmarks.md).
const PerMessagePercent = 300

// BaseBytes is the consumer's own heap and runtime with no message in flight.
const BaseBytes = 32 << 20

// MaxKeyedBodyBytes is the largest body of a request with an Idempotency-Key that the
// handler gateway reads (it is fingerprinted whole before it is forwarded); a larger one
// gets 413.
const MaxKeyedBodyBytes = 10 << 20

// MaxCallbackBodyBytes is the largest callback body; a larger one gets 413.
const MaxCallbackBodyBytes = 1 << 20

// KeyedPercent is how much memory a keyed request in flight may hold, in percent of its
// body, besides StoredResponseBytes: the body as read and the fingerprint's scratch (the
// body is forwarded from the same buffer).
const KeyedPercent = 150

// CallbackPercent is how much memory a callback in flight may hold, in percent of its
// body, besides StoredResponseBytes: the body, the payload decoded from it, the receipt
// that keeps it and the request to the handler that carries it.
const CallbackPercent = 500

// StoredResponseBytes bounds what a request holds of the handler's answer while it is
// stored for replay, whatever its body: the answer's first 700 KiB (the most
// EVENTPIPE_IDEMPOTENCY_MAX_STORED_BODY keeps), base64-encoded in the record.
const StoredResponseBytes = 2 << 20

// A Door is a way a request body comes into the consumer, and what a request coming
// through it may hold in memory while it is read and answered: all of them share the
// instance's one budget (DeliveryBudget).
type Door struct {
	// Name names the door in errors: "push", "keyed request", "callback".
	Name string
	// MaxBody is the largest body the door reads; a larger one is refused (413).
	MaxBody int64
	// Percent is how much memory a request may hold in flight, in percent of its body.
	Percent int64
	// Fixed is what a request may hold whatever its body.
	Fixed int64
}

// Bytes is the memory a request whose body declares bodyBytes may hold in flight; a body
// of unknown length (-1) or one declared longer than MaxBody counts as MaxBody long.
func (d Door) Bytes(bodyBytes int64) int64 {
	if bodyBytes < 0 || bodyBytes > d.MaxBody {
		bodyBytes = d.MaxBody
	}
	return bodyBytes/100*d.Percent + d.Fixed
}

// PushDoor is Pub/Sub's pushes: bodies up to MaxPushBodyBytes(MaxMessageBytes).
func PushDoor() Door {
	return Door{Name: "push", MaxBody: MaxPushBodyBytes(MaxMessageBytes), Percent: PerMessagePercent}
}

// KeyedDoor is the handler gateway's requests with an Idempotency-Key: bodies up to
// maxBody.
func KeyedDoor(maxBody int64) Door {
	return Door{Name: "keyed request", MaxBody: maxBody, Percent: KeyedPercent, Fixed: StoredResponseBytes}
}

// CallbackDoor is POST /callbacks/{route}: bodies up to MaxCallbackBodyBytes.
func CallbackDoor() Door {
	return Door{Name: "callback", MaxBody: MaxCallbackBodyBytes, Percent: CallbackPercent, Fixed: StoredResponseBytes}
}

// Doors are every door, push first.
func Doors() []Door {
	return []Door{PushDoor(), KeyedDoor(MaxKeyedBodyBytes), CallbackDoor()}
}

// PerMessageBytes is the memory one push delivery of a maxMessageBytes message may take.
func PerMessageBytes(maxMessageBytes int64) int64 {
	return PushDoor().Bytes(MaxPushBodyBytes(maxMessageBytes))
}

// DeliveryBudget is the memory an instance whose Go runtime has memoryLimit bytes
// (GOMEMLIMIT) may give to the requests in flight at every door together: the limit less
// BaseBytes. The consumer admits a request only while what the requests in flight may
// hold (Door.Bytes) fits in it; MaxConcurrency is how many maximum-size pushes fit in it.
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
