package engine

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/eventpipe/eventpipe/consumer/keys"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/settings"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/opcount"
)

// Defaults for Config. Those the consumer's environment sets are its
// variables' defaults (package settings).
const (
	DefaultCollectionPrefix = settings.DefaultCollectionPrefix
	DefaultDedupeTTL        = 7 * 24 * time.Hour
	DefaultReceiptTTL       = 30 * 24 * time.Hour
	DefaultPoisonTTL        = 30 * 24 * time.Hour
	DefaultLeaseDuration    = 900 * time.Second
	DefaultMaxAttempts      = 5
	DefaultMaxEventSkew     = settings.DefaultMaxEventSkew
	// DefaultMaxSequenceJump is Config.MaxSequenceJump's default: far more
	// updates than one aggregate takes in a window, far fewer than a
	// bogus sequence (0 against a timestamp-based one, math.MaxInt64) jumps.
	DefaultMaxSequenceJump = settings.DefaultMaxSequenceJump
	// DefaultMaxWaitingPerDocument is Config.MaxWaitingPerDocument's
	// default: well above an instance's usual concurrency (Cloud Run's 80
	// requests, the pull consumer's 100 outstanding messages), so only a
	// pile-up far beyond it is turned away.
	DefaultMaxWaitingPerDocument = settings.DefaultCoalesceMaxWaiting
)

// NoCoalescing as Config.MaxWaitingPerDocument turns coalescing off: every
// latest-state delivery runs its own transaction, whatever else is in
// flight on its document.
const NoCoalescing = -1

// FingerprintMode says what to do when an event key arrives again with a
// different payload (a reused event id: a producer contract violation).
type FingerprintMode string

// Fingerprint modes.
const (
	// FingerprintError makes the message poison (the default).
	FingerprintError FingerprintMode = "error"
	// FingerprintWarn treats it as a duplicate and sets Result.Warning.
	FingerprintWarn FingerprintMode = "warn"
)

// Config configures an Engine. Store and Env are required; zero values of the
// rest take the defaults.
type Config struct {
	// Store holds every record.
	Store store.Store
	// Env qualifies every document id (e.g. "prod"), so environments sharing
	// one database never collide.
	Env string
	// CollectionPrefix prefixes the engine's collections: {prefix}dedupe,
	// {prefix}leases, {prefix}receipts, {prefix}poison. Default "eventpipe_".
	CollectionPrefix string
	// DedupeTTL sets expireAt on dedupe markers and lease records. Default 7 days.
	DedupeTTL time.Duration
	// ReceiptTTL sets expireAt on callback receipts. Default 30 days.
	ReceiptTTL time.Duration
	// PoisonTTL sets expireAt on poison audit records. Default 30 days.
	PoisonTTL time.Duration
	// LeaseDuration is how long a claim holds before another delivery may take
	// it over; Heartbeat extends it. Default 900 s. Receipts left "processing"
	// this long are taken over too.
	LeaseDuration time.Duration
	// MaxAttempts is how many failed or crashed attempts a lease allows
	// before the event is poison. Default 5.
	MaxAttempts int
	// MaxEventSkew bounds how far an event's own time may be ahead of its
	// publish time. An event time beyond it (a producer's clock far off, a
	// placeholder such as 9999-12-31) is not trusted for ordering: the
	// publish time orders the event instead, and a WARNING line gives both.
	// It is also the window of ordering: a stored version holds back an
	// update by its sequence or event time only while the update was
	// published at most MaxEventSkew after it (docs/consumer.md, ordering),
	// and a publish time more than MaxEventSkew ahead of Now is not trusted
	// either (Now stands in for it, with a WARNING line). Default 5 minutes.
	MaxEventSkew time.Duration
	// MaxSequenceJump bounds the sequence step trusted across the window:
	// an update published more than MaxEventSkew after the stored version
	// wins by its sequence only when that is ahead by at most this much
	// (otherwise its event time decides). Two sequences further apart than
	// this are logged at WARNING with both values. Write.MaxSequenceJump
	// overrides it per route. Default DefaultMaxSequenceJump.
	MaxSequenceJump int64
	// MaxWaitingPerDocument bounds how many latest-state deliveries for one
	// document wait while a transaction on it is in flight. Waiting
	// deliveries are decided together by the next transaction, which reads
	// the document once and writes only the newest event (a group commit):
	// a hot aggregate costs one write per commit instead of one per
	// message, and its deliveries stop contending with each other. A
	// delivery that finds no transaction in flight is not delayed. Beyond
	// the bound a delivery fails as transient (retried). Default
	// DefaultMaxWaitingPerDocument; NoCoalescing turns it off.
	MaxWaitingPerDocument int
	// Fingerprint is the reused-event-id mode. Default FingerprintError.
	Fingerprint FingerprintMode
	// Owner identifies this process in lease records (e.g. the revision and
	// instance). Default "eventpipe".
	Owner string
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Failpoint is called at every failpoint; nil for none.
	Failpoint FailpointHook
	// Logger receives one line per lease event and per fingerprint warning.
	// Default: discard (the caller logs each message's outcome).
	Logger *slog.Logger
}

// Engine turns at-least-once deliveries into exactly-once effects. It is
// safe for concurrent use; it holds no state of its own beyond its Config.
type Engine struct {
	cfg      Config
	dedupe   string
	leases   string
	receipts string
	poison   string
	envID    string
	// coalescer groups latest-state deliveries per document; nil with
	// NoCoalescing.
	coalescer *coalescer
	// latestWriter is the store when it decides latest-state writes itself
	// (store.LatestWriter), else nil.
	latestWriter store.LatestWriter
	// conditional is the store when it writes one document on a condition
	// in one round trip (store.ConditionalWriter), else nil: reservations
	// use it for a new key's claim and a holder's writes.
	conditional store.ConditionalWriter
}

// New validates cfg, fills in defaults and returns an Engine.
func New(cfg Config) (*Engine, error) {
	const op = "configure engine"
	if cfg.Store == nil {
		return nil, newError(TypeConfiguration, op, "Config.Store is nil: open one with storeurl.Open (e.g. "+settings.Store+"=bbolt:///var/lib/eventpipe.db)")
	}
	envID, err := keys.NormalizeID(cfg.Env)
	if err != nil {
		return nil, newError(TypeConfiguration, op, "Config.Env: %v (e.g. \"dev\" or \"prod\")", err)
	}
	cfg.CollectionPrefix = cmp.Or(cfg.CollectionPrefix, DefaultCollectionPrefix)
	if err := validCollection(cfg.CollectionPrefix + "dedupe"); err != nil {
		return nil, newError(TypeConfiguration, op, "Config.CollectionPrefix %q: %v", cfg.CollectionPrefix, err)
	}
	for name, d := range map[string]*time.Duration{"DedupeTTL": &cfg.DedupeTTL, "ReceiptTTL": &cfg.ReceiptTTL,
		"PoisonTTL": &cfg.PoisonTTL, "LeaseDuration": &cfg.LeaseDuration, "MaxEventSkew": &cfg.MaxEventSkew} {
		if *d < 0 {
			return nil, newError(TypeConfiguration, op, "Config.%s is negative (%s): use a positive duration or 0 for the default", name, *d)
		}
	}
	cfg.DedupeTTL = cmp.Or(cfg.DedupeTTL, DefaultDedupeTTL)
	cfg.ReceiptTTL = cmp.Or(cfg.ReceiptTTL, DefaultReceiptTTL)
	cfg.PoisonTTL = cmp.Or(cfg.PoisonTTL, DefaultPoisonTTL)
	cfg.LeaseDuration = cmp.Or(cfg.LeaseDuration, DefaultLeaseDuration)
	cfg.MaxEventSkew = cmp.Or(cfg.MaxEventSkew, DefaultMaxEventSkew)
	switch {
	case cfg.MaxSequenceJump < 0:
		return nil, newError(TypeConfiguration, op, "Config.MaxSequenceJump is negative (%d): use a positive bound or 0 for the default %d", cfg.MaxSequenceJump, DefaultMaxSequenceJump)
	case cfg.MaxSequenceJump == 0:
		cfg.MaxSequenceJump = DefaultMaxSequenceJump
	}
	if cfg.LeaseDuration >= cfg.DedupeTTL {
		return nil, newError(TypeConfiguration, op, "Config.LeaseDuration (%s) must be shorter than Config.DedupeTTL (%s), which also bounds how long lease records live", cfg.LeaseDuration, cfg.DedupeTTL)
	}
	if cfg.MaxAttempts < 0 {
		return nil, newError(TypeConfiguration, op, "Config.MaxAttempts is %d: use a positive count or 0 for the default %d", cfg.MaxAttempts, DefaultMaxAttempts)
	}
	cfg.MaxAttempts = cmp.Or(cfg.MaxAttempts, DefaultMaxAttempts)
	switch {
	case cfg.MaxWaitingPerDocument == 0:
		cfg.MaxWaitingPerDocument = DefaultMaxWaitingPerDocument
	case cfg.MaxWaitingPerDocument < NoCoalescing:
		return nil, newError(TypeConfiguration, op, "Config.MaxWaitingPerDocument is %d: use a positive bound, 0 for the default %d or NoCoalescing (%d) to turn coalescing off",
			cfg.MaxWaitingPerDocument, DefaultMaxWaitingPerDocument, NoCoalescing)
	}
	switch cfg.Fingerprint {
	case "":
		cfg.Fingerprint = FingerprintError
	case FingerprintError, FingerprintWarn:
	default:
		return nil, newError(TypeConfiguration, op, "Config.Fingerprint %q: use %q or %q", cfg.Fingerprint, FingerprintError, FingerprintWarn)
	}
	cfg.Owner = cmp.Or(cfg.Owner, "eventpipe")
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := cfg.CollectionPrefix
	e := &Engine{cfg: cfg, dedupe: p + "dedupe", leases: p + "leases", receipts: p + "receipts",
		poison: p + "poison", envID: envID}
	if cfg.MaxWaitingPerDocument != NoCoalescing {
		e.coalescer = newCoalescer(cfg.MaxWaitingPerDocument)
	}
	e.latestWriter, _ = cfg.Store.(store.LatestWriter)
	e.conditional, _ = cfg.Store.(store.ConditionalWriter)
	return e, nil
}

// Collections returns the engine's collection names: dedupe, leases,
// receipts and poison.
func (e *Engine) Collections() (dedupe, leases, receipts, poison string) {
	return e.dedupe, e.leases, e.receipts, e.poison
}

// DedupeTTL is how long dedupe markers and delivery reservations are kept:
// a reservation's length must be shorter.
func (e *Engine) DedupeTTL() time.Duration { return e.cfg.DedupeTTL }

// Hit calls the failpoint hook at fp; callers use it at the points outside
// the engine (WorkerBeforeApply, WorkerAfterApply, ProjectionBeforeAck).
func (e *Engine) Hit(ctx context.Context, fp Failpoint) error {
	if e.cfg.Failpoint == nil {
		return nil
	}
	return e.cfg.Failpoint(ctx, fp)
}

func (e *Engine) now() time.Time { return e.cfg.Now().UTC() }

// validCollection checks a collection name the way Firestore does for ids.
func validCollection(c string) error {
	if err := keys.ValidFirestoreID(c); err != nil {
		return err
	}
	if strings.ContainsAny(c, " \t\n") {
		return fmt.Errorf("contains whitespace")
	}
	return nil
}

// Event is one delivery, as the engine needs it.
type Event struct {
	// MessageID is the transport id (Pub/Sub messageId, callback id); required.
	MessageID string
	// PublishTime is the transport's publish time; it breaks ordering ties.
	PublishTime time.Time
	// EventID is the payload's own event id, if it has one: the logical key.
	EventID string
	// Identity holds the fields that define the event when it has no EventID;
	// their canonical JSON's SHA-256 is the logical key. With neither, the
	// message id is the key (transport dedupe only).
	Identity map[string]any
	// Payload is the raw JSON payload; its fingerprint detects a reused event
	// id. Optional: without it no fingerprint is checked.
	Payload []byte
	// Attributes and OrderingKey are the message's: a poison record keeps
	// them with the payload (RecordPoison).
	Attributes  map[string]string
	OrderingKey string
}

// eventKey returns the logical key component and the fingerprint. Event
// and message ids are kept exactly (keys.EscapeID): ids that differ only in
// case or spaces are different events.
func (ev Event) eventKey() (key, fingerprint string, err error) {
	switch {
	case ev.EventID != "" || len(ev.Identity) > 0:
		if key, err = keys.LogicalKey(ev.EventID, ev.Identity); err != nil {
			return "", "", fmt.Errorf("%w; fix: %s", err, payloadFix())
		}
	case ev.MessageID != "":
		var n string
		n, err = keys.EscapeID(ev.MessageID)
		key = "m-" + n
	default:
		err = fmt.Errorf("the event has no message id, event id or identity fields: the transport must give a message id")
	}
	if err != nil {
		return "", "", err
	}
	if len(ev.Payload) > 0 {
		fingerprint, err = keys.Fingerprint(ev.Payload)
		if err != nil {
			return "", "", fmt.Errorf("payload: %w; fix: %s", err, payloadFix())
		}
	}
	return key, fingerprint, nil
}

// payloadFix is the fix for a payload whose event key or fingerprint
// cannot be computed: what keys.CanonicalJSON needs.
func payloadFix() string {
	return fmt.Sprintf("publish the payload as UTF-8 JSON with each key once per object, numbers within a float64's range and at most %d levels of nesting", keys.MaxDepth)
}

// producerKey reports whether an event key is a producer-issued event id
// ("e-"): a promise that one id names one event. A key derived from
// identity fields or the message id makes no such promise.
func producerKey(key string) bool { return strings.HasPrefix(key, "e-") }

// sameEvent reports whether a stored event key and fingerprint stand for
// the incoming event (key and fingerprint): same key and, where both
// fingerprints are known, the same payload. The same producer-issued
// event id with another payload is a reused event id: in warn mode it
// counts as the same event with a warning, in error mode it is poison.
// Under a derived key another payload is another event (same is false).
func (e *Engine) sameEvent(ctx context.Context, op string, rec store.Key, storedKey, storedFP, key, fp string) (same bool, warning string, err error) {
	if storedKey != key {
		return false, "", nil
	}
	if storedFP == "" || fp == "" || keys.SameFingerprint(storedFP, fp) {
		return true, "", nil
	}
	if !producerKey(key) {
		return false, "", nil
	}
	warning, err = e.fingerprintConflict(ctx, op, rec, storedFP, fp)
	return true, warning, err
}

// eventRecordID is the id component of a record that stands for one event
// (a lease, a created document): the event key, and under a derived key
// also part of the fingerprint, since there another payload is another
// event (sameEvent).
func eventRecordID(key, fingerprint string) string {
	if producerKey(key) || fingerprint == "" {
		return key
	}
	const n = 16 // 80 bits of the payload's hash
	return key + "-" + fingerprint[len(fingerprint)-keys.LogicalKeyLen:][:n]
}

// fingerprintConflict reports a reused event id: stored and incoming
// fingerprints both known and different. In warn mode it logs and returns
// the warning text; in error mode it returns a poison error.
func (e *Engine) fingerprintConflict(ctx context.Context, op string, key store.Key, stored, incoming string) (warning string, err error) {
	if stored == "" || incoming == "" || keys.SameFingerprint(stored, incoming) {
		return "", nil
	}
	doc := key.String()
	msg := fmt.Sprintf("event key of %s was seen before with a different payload (fingerprint %s, now %s): the producer reused an event id (fix: an event id must name one event in the environment, across every route: producers that number their events independently prefix the id, e.g. with the topic, or the route keys events by its dedupe identity fields instead)", doc, stored, incoming)
	if e.cfg.Fingerprint == FingerprintWarn {
		e.cfg.Logger.WarnContext(ctx, "fingerprint mismatch", logfields.IdempotencyDoc, doc, "stored_fingerprint", stored, "fingerprint", incoming)
		return msg, nil
	}
	return "", &Error{Type: TypePoison, Code: "FINGERPRINT_MISMATCH", Op: op, Err: fmt.Errorf("%s", msg)}
}

// runTx runs fn in a transaction, counting its operations into counts.
func (e *Engine) runTx(ctx context.Context, counts *opcount.Counts, fn func(ctx context.Context, tx store.Tx) error) error {
	var tally opcount.Tally
	err := e.cfg.Store.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
		return fn(ctx, tally.Tx(tx))
	})
	*counts = counts.Add(tally.Counts())
	return err
}

// getLive reads key and reports it absent when it is missing or expired.
func getLive(ctx context.Context, tx store.Tx, key store.Key, now time.Time) (store.Document, bool, error) {
	d, err := tx.Get(ctx, key)
	if err != nil {
		if isNotFound(err) {
			return store.Document{}, false, nil
		}
		return store.Document{}, false, err
	}
	if d.Expired(now) {
		return store.Document{}, false, nil
	}
	return d, true, nil
}
