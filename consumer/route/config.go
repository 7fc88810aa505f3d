// Package route loads, validates and applies the consumer's routes: which
// payloads a route matches, which fields it extracts, which document it
// writes (env-qualified, normalised id), which engine mode protects the write
// and which fields order concurrent updates.
//
// Routes live in a JSON file (EVENTPIPE_ROUTES); without one the consumer
// uses the embedded default routes (default_routes.json). Load validates the whole
// file at start-up and reports every problem with the route, field and fix.
package route

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/eventpipe/eventpipe/internal/durations"
)

// Modes of the idempotency engine a route can use.
const (
	// ModeLatestState dedupes by message (and logical event) and keeps the
	// newest state of the target document by the ordering fields.
	ModeLatestState = "latest-state"
	// ModeLease runs a downstream action at most once under a lease with a
	// heartbeat.
	ModeLease = "lease"
	// ModeReceipt records one receipt per idempotency key and applies the
	// callback to an existing target document.
	ModeReceipt = "receipt"
)

// Ingress kinds.
const (
	IngressPubSub   = "pubsub"   // push and pull deliveries, matched by payload
	IngressCallback = "callback" // POST /callbacks/{name}
)

// Config is a routes file.
type Config struct {
	// Routes are tried in order; the first whose match holds wins.
	Routes []Route `json:"routes"`
}

// Route is one routing rule.
type Route struct {
	// Name identifies the route in logs and, for callbacks, in the URL.
	Name string `json:"name"`
	// Description is free text for readers of the file.
	Description string `json:"description,omitempty"`
	// Ingress is "pubsub" (default) or "callback".
	Ingress string `json:"ingress,omitempty"`
	// Topic is the source topic, logged and available as $topic.
	Topic string `json:"topic,omitempty"`
	// Match selects payloads (pubsub routes only).
	Match Match `json:"match"`
	// Mode is latest-state, lease or receipt.
	Mode string `json:"mode"`
	// Target names the document the route writes or protects.
	Target Target `json:"target"`
	// Fields maps output fields (dotted names nest: "source.topic") to
	// where their values come from.
	Fields map[string]Field `json:"fields"`
	// Ordering names the output fields that decide whether an update is
	// newer than the stored document (latest-state only).
	Ordering *Ordering `json:"ordering,omitempty"`
	// Dedupe adds a logical-event key to the message-id dedupe.
	Dedupe *Dedupe `json:"dedupe,omitempty"`
	// Action is the downstream call of a lease route.
	Action *Action `json:"action,omitempty"`
	// Receipt configures the idempotency key of a receipt route.
	Receipt *Receipt `json:"receipt,omitempty"`

	// fieldOrder is Fields' names sorted, so extraction (and its first
	// error) is deterministic.
	fieldOrder []string
	// topicValue is Topic as the value of $topic, boxed once (nil when the
	// route has no topic: $topic then comes from the message).
	topicValue any
	// compiled[i] is Fields[fieldOrder[i]] with its sources resolved;
	// conversions is how many distinct (source, type) pairs they have.
	compiled    []compiledField
	conversions int
}

// Match selects payloads by a type field, by shape, or both.
type Match struct {
	// TypeField is the payload field holding the event type, e.g. "eventType".
	TypeField string `json:"typeField,omitempty"`
	// Types are the accepted values of TypeField.
	Types []string `json:"types,omitempty"`
	// Fields must all be present (not null) in the payload.
	Fields []string `json:"fields,omitempty"`
}

// Target names a document: a collection and the output field holding the
// aggregate id. The document id is env-qualified and normalised by package
// keys (keys.DocID): {"id": "serviceId"} with service "API" in prod gives
// "prod__api".
type Target struct {
	Collection string `json:"collection"`
	ID         string `json:"id"`
	// MustExist makes an absent target a 404 (callbacks for unknown runs)
	// before anything is written.
	MustExist bool `json:"mustExist,omitempty"`
}

// Field says where one output value comes from.
type Field struct {
	// From lists sources, first present wins: payload paths ("a.b") or
	// $messageId, $publishTime, $topic, $subscription, $env, $orderingKey,
	// $attributes.NAME.
	From []string `json:"from"`
	// Type converts the value: string, timestamp, integer, number, boolean
	// or any (default: any JSON value, unchanged).
	Type string `json:"type,omitempty"`
	// Required makes a missing value poison.
	Required bool `json:"required,omitempty"`
}

// Ordering picks the version-ordering fields. Updates published within
// the window (EVENTPIPE_MAX_EVENT_SKEW) of the stored version compare
// (sequence, event time, publish time, message id) left to right, an
// absent sequence below any present one; the engine adds the last two. An
// update published later than that wins unless it is older by its event
// time (docs/consumer.md, ordering).
type Ordering struct {
	// EventTime is a timestamp output field: the event's own time.
	EventTime string `json:"eventTime"`
	// Sequence is an integer output field: a producer-issued per-aggregate
	// sequence, optional.
	Sequence string `json:"sequence,omitempty"`
	// MaxSequenceJump bounds the sequence step trusted across the window
	// (engine.Write.MaxSequenceJump); 0 takes the engine's default.
	MaxSequenceJump int64 `json:"maxSequenceJump,omitempty"`
}

// Dedupe configures the logical-event key (two-tier dedupe).
type Dedupe struct {
	// EventIDField is the payload field with a producer-issued event id.
	EventIDField string `json:"eventIdField,omitempty"`
	// Identity lists the payload fields that define the event when it has
	// no event id; their canonical JSON is hashed. It is used only when all
	// of them are present; otherwise the Pub/Sub message id is the key.
	Identity []string `json:"identity,omitempty"`
}

// Action is the lease-protected downstream call.
type Action struct {
	// URL receives a POST of the output fields as JSON with an
	// Idempotency-Key header. With neither URL nor URLEnv the route names
	// the handler: the consumer's handler container (EVENTPIPE_HANDLER_URL)
	// receives the event as described in docs/handlers.md.
	URL string `json:"url,omitempty"`
	// URLEnv names an environment variable holding the URL instead.
	URLEnv string `json:"urlEnv,omitempty"`
	// MaxAttempts is how many retried calls (answers 5xx, 408, 425, 429,
	// or none) make the message poison.
	MaxAttempts int `json:"maxAttempts,omitempty"`
	// Timeout is how long a delivery waits for the call's answer (Go
	// duration, default 30s); the call itself runs on until LeaseTTL.
	Timeout Duration `json:"timeout,omitempty"`
	// LeaseTTL is the event's reservation: how long a claim lasts without a
	// heartbeat, and how long a call may run in all (default 10m).
	LeaseTTL Duration `json:"leaseTTL,omitempty"`
	// Heartbeat is how often the lease is extended (default LeaseTTL/5).
	Heartbeat Duration `json:"heartbeat,omitempty"`
	// Aggregate and Sequence name output fields (a string and an integer)
	// that add the aggregate's ordering guard (engine.Ordering): an event
	// whose sequence is at or below the last completed one for its
	// aggregate, published within the window of it, is stale (acked, no
	// call). Set both or neither; an event missing either value is not
	// guarded.
	Aggregate string `json:"aggregate,omitempty"`
	Sequence  string `json:"sequence,omitempty"`
}

// Receipt configures callback idempotency keys.
type Receipt struct {
	// KeyField is the body field with the idempotency key (callback_id).
	KeyField string `json:"keyField,omitempty"`
	// Header is the request header with the key (Idempotency-Key).
	Header string `json:"header,omitempty"`
	// LeaseTTL is how long a delivery's reservation of a key holds before
	// a retry may take it over (its holder died); default 30s. Until then
	// retries are answered 409 with Retry-After.
	LeaseTTL Duration `json:"leaseTTL,omitempty"`
}

// Duration is a time.Duration written as the stack config writes one: Go
// syntax ("30s", "1h30m") or a whole number of days ("1d"), read with the
// one duration grammar (internal/durations). It stays a time.Duration,
// where the stack config keeps a duration's text for validation to report
// with the others.
type Duration time.Duration

// UnmarshalJSON parses a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"30s\": %w", err)
	}
	v, err := durations.Parse(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

//go:embed default_routes.json
var defaultRoutes []byte

// LoadFile reads and validates a routes file; path "" loads the embedded
// default routes, and a value starting with "{" is the routes JSON itself
// (routes passed inline in EVENTPIPE_ROUTES).
func LoadFile(path string) (*Table, error) {
	if path == "" {
		return Parse(defaultRoutes)
	}
	if inline := strings.TrimSpace(path); strings.HasPrefix(inline, "{") {
		t, err := Parse([]byte(inline))
		if err != nil {
			return nil, fmt.Errorf("EVENTPIPE_ROUTES (inline JSON): %w", err)
		}
		return t, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read routes file (EVENTPIPE_ROUTES): %w", err)
	}
	t, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("routes file %s: %w", path, err)
	}
	return t, nil
}

// Parse decodes and validates a routes file. Unknown keys are errors, so a
// misspelt option cannot be silently ignored.
func Parse(b []byte) (*Table, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("routes JSON: %w (fix: see the Routes section of docs/consumer.md for the format)", err)
	}
	return Compile(c)
}
