// Package logfields is the one place where the consumer's structured log
// field names and their closed value sets are defined.
//
// Every message or request the consumer handles produces exactly one JSON log
// line built from these keys. The alert policies' log-based metrics filter on
// them, so a rename here is a breaking change for alerts/: change both
// together. The "Log fields" table of docs/consumer.md documents the same
// names; its test reads every constant here as a key but for the groups
// whose comment starts "<Key> values." (a key's closed value set).
package logfields

// Cloud Logging reserved keys. Cloud Logging reads the entry's severity and
// its summary text from these two keys of a JSON payload.
const (
	Severity = "severity"
	Message  = "message"
)

// Cloud Logging's trace keys: a line of a traced delivery names its trace
// and span, and Cloud Logging nests the delivery's lines under the trace.
const (
	Trace        = "logging.googleapis.com/trace"         // projects/PROJECT/traces/TRACE_ID
	SpanID       = "logging.googleapis.com/spanId"        // the delivery's (or store transaction's) span id, 16 hex digits
	TraceSampled = "logging.googleapis.com/trace_sampled" // whether the trace is sampled (exported)
)

// Identity of the running consumer.
const (
	Service = "service" // EVENTPIPE_SERVICE
	Env     = "env"     // EVENTPIPE_ENV
	Version = "version" // EVENTPIPE_VERSION (git sha or release)
)

// Pub/Sub delivery fields.
const (
	Subscription    = "subscription"    // projects/P/subscriptions/S
	Topic           = "topic"           // topic of the route, when known
	MessageID       = "messageId"       // Pub/Sub message id
	PublishTime     = "publishTime"     // RFC 3339 publish time
	DeliveryAttempt = "deliveryAttempt" // present only on subscriptions with a dead-letter policy
)

// Routing fields.
const (
	Route         = "route"         // name of the matched route (or callback route)
	EventType     = "event_type"    // payload type field, when the route has one
	SchemaVersion = "schemaVersion" // payload schemaVersion, when present
	EventTime     = "event_time"    // the event's own time, when it is beyond the maximum skew
)

// Outcome fields.
const (
	Outcome    = "outcome"     // one of the Outcome* values
	HTTPStatus = "http_status" // push and callbacks
	AckAction  = "ack_action"  // one of the Ack* values
	AckError   = "ack_error"   // why an exactly-once ack failed (with ack_action ack_failed)
)

// Store fields.
const (
	WriteKind      = "write_kind"      // one of the WriteKind* values
	DocPath        = "doc_path"        // collection/docId of the target document
	IdempotencyDoc = "idempotency_doc" // collection/docId of the dedupe, lease or receipt record
	StoreReads     = "store_reads"     // document reads this message cost
	StoreWrites    = "store_writes"    // document writes (and deletes) this message cost
	LatencyMS      = "latency_ms"      // handling time in milliseconds
)

// Error fields.
const (
	ErrorType = "error_type" // one of the ErrorType* values
	ErrorCode = "error_code" // gRPC code name (e.g. UNAVAILABLE) or SQLSTATE
	Error     = "error"      // error text, bounded in length
	Retryable = "retryable"  // true when a retry can succeed (transient, in progress, configuration once fixed)
)

// LeaseEvent is the key of lease life-cycle events (the lease alerts count them).
const LeaseEvent = "lease_event"

// Idempotency-key bookkeeping of callbacks.
const (
	IdempotencyKey = "idempotency_key" // callback_id or Idempotency-Key header value
	Unprotected    = "unprotected"     // true when a callback carried no idempotency key
)

// Outcome values.
const (
	OutcomeApplied   = "applied"
	OutcomeDuplicate = "duplicate"
	OutcomeStale     = "stale_ignored"
	OutcomePoison    = "poison"
	OutcomeRetry     = "retry"
)

// ErrorType values.
const (
	ErrorTypeDuplicate     = "duplicate"
	ErrorTypeStale         = "stale"
	ErrorTypeInProgress    = "in_progress"
	ErrorTypePoison        = "poison"
	ErrorTypeTransient     = "transient"
	ErrorTypeConfiguration = "configuration"
)

// AckAction values. Push requests log http_status and the ack action the
// status means to Pub/Sub; pull messages log what was called on the message.
const (
	AckActionAck       = "ack"
	AckActionNack      = "nack"
	AckActionAckFailed = "ack_failed" // exactly-once ack rejected: the message is NOT acked
)

// WriteKind values.
const (
	WriteKindSet     = "set"     // latest-state document written
	WriteKindNone    = "none"    // nothing but the idempotency record (duplicate, stale)
	WriteKindReceipt = "receipt" // callback receipt
	WriteKindLease   = "lease"   // lease-protected action
	WriteKindPoison  = "poison"  // poison audit record
)

// LeaseEvent values.
const (
	LeaseAcquired        = "acquired"
	LeaseAcquireFailed   = "acquire_failed"
	LeaseHeartbeatFailed = "heartbeat_failed"
	LeaseStaleFound      = "stale_found"
	LeaseCompleted       = "completed"
	LeaseFailed          = "failed"
)
