// Package limits holds the consumer's size limits and memory model: the facts the consumer
// enforces on every delivery and the Cloud Run component sizes instances by (GOMEMLIMIT and
// the per-instance request concurrency). It imports only the standard library, so
// infrastructure code can use it without linking the consumer.
package limits

// MaxMessageBytes is the largest Pub/Sub message: 10 MB (10,000,000 bytes, the service's
// publish request limit, data and attributes together).
const MaxMessageBytes = 10_000_000

// MemoryLimitPercent is the share of the container's memory given to the Go runtime as its
// soft limit (GOMEMLIMIT); the rest is headroom for what the runtime does not count
// (stacks in flight, the binary itself, the kernel's page tables).
const MemoryLimitPercent = 90

// MemoryLimit is the GOMEMLIMIT value, in bytes, for a container with containerBytes of
// memory.
func MemoryLimit(containerBytes int64) int64 {
	return containerBytes / 100 * MemoryLimitPercent
}
