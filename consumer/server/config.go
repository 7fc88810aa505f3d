package server

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventpipe/eventpipe/consumer/classify"
	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/handler"
	"github.com/eventpipe/eventpipe/consumer/internal/envvar"
	"github.com/eventpipe/eventpipe/consumer/pull"
	"github.com/eventpipe/eventpipe/consumer/store/pgstore"
)

// Config is the consumer's runtime configuration, read from the environment
// the Cloud Run component sets (see ConfigFromEnv).
type Config struct {
	Port              string
	Env               string
	Service           string
	Version           string
	StoreURL          string
	RoutesPath        string // "" = embedded default routes
	Audience          string // "" = no in-app OIDC check of pushes
	PushAccounts      []string
	CallbackAudience  string // "" = no in-app OIDC check of callbacks (default: Audience)
	CallbackAccounts  []string
	JWKSURL           string // "" = Google's
	PullSubscriptions []string
	CollectionPrefix  string
	DLQ               classify.DLQMode
	PullSettings      pubsub.ReceiveSettings
	ShutdownTimeout   time.Duration
	// RequestTimeout is the service's request timeout, EVENTPIPE_REQUEST_TIMEOUT
	// (and its push subscriptions' ack deadline): the HTTP server's read and
	// idle timeouts derive from it (Timeouts), and so do a PostgreSQL store's
	// lock, statement and idle-in-transaction bounds (ConfigFromEnv adds it to
	// StoreURL as pgstore.ParamRequestTimeout unless the URL sets it).
	RequestTimeout time.Duration
	MaxEventSkew   time.Duration
	// MaxWaitingPerDocument is engine.Config.MaxWaitingPerDocument (0: its
	// default; engine.NoCoalescing: off).
	MaxWaitingPerDocument int
	// Handler is the team's handler container behind the consumer
	// (EVENTPIPE_HANDLER_URL and the idempotency-key settings: see
	// handler.ConfigFromEnv); its zero value means none.
	Handler handler.Config
	// MaxSequenceJump is engine.Config.MaxSequenceJump, from
	// EVENTPIPE_MAX_SEQUENCE_JUMP (0: its default).
	MaxSequenceJump int64
}

// DefaultStoreURL is the embedded bbolt file used when EVENTPIPE_STORE is
// unset: eventpipe-UID.db in the OS temporary directory, one per user, since
// the temporary directory is shared by every user of a host (/tmp) and one
// user's store would refuse, or decide, another's messages.
func DefaultStoreURL() string {
	name := "eventpipe.db"
	if uid := os.Getuid(); uid >= 0 { // -1 on Windows, whose temporary directory is the user's own
		name = "eventpipe-" + strconv.Itoa(uid) + ".db"
	}
	return "bbolt://" + filepath.ToSlash(filepath.Join(os.TempDir(), name))
}

// DefaultShutdownTimeout leaves Cloud Run's 10 s SIGTERM grace a margin.
const DefaultShutdownTimeout = 9 * time.Second

// DefaultRequestTimeout is a Cloud Run consumer's default request timeout,
// which its push subscriptions' ack deadline equals.
const DefaultRequestTimeout = 60 * time.Second

// ConfigFromEnv reads the configuration. lookup is os.LookupEnv in
// production. Every problem is reported, each naming the variable and fix.
//
//	PORT                                  listen port (default 8080)
//	EVENTPIPE_ENV                         environment, qualifies document ids (default dev)
//	EVENTPIPE_SERVICE, EVENTPIPE_VERSION  identity in every log line
//	EVENTPIPE_STORE                       store URL (default: bbolt file in the temp dir)
//	EVENTPIPE_ROUTES                      routes file, or inline routes JSON (default: embedded default routes)
//	EVENTPIPE_OIDC_AUDIENCE               verify push OIDC tokens for this audience
//	EVENTPIPE_PUSH_ACCOUNTS               allowed push service accounts (comma-separated)
//	EVENTPIPE_CALLBACK_AUDIENCE           verify callback OIDC tokens for this audience (default: EVENTPIPE_OIDC_AUDIENCE)
//	EVENTPIPE_CALLBACK_ACCOUNTS           service accounts allowed to call back (comma-separated)
//	EVENTPIPE_OIDC_JWKS_URL               JWKS override (tests)
//	EVENTPIPE_PULL_SUBSCRIPTIONS          streaming-pull subscriptions (comma-separated full names)
//	EVENTPIPE_PULL_MAX_OUTSTANDING_MESSAGES, EVENTPIPE_PULL_MAX_OUTSTANDING_BYTES,
//	EVENTPIPE_PULL_GOROUTINES             pull flow control
//	EVENTPIPE_COLLECTION_PREFIX           engine collection prefix (default eventpipe_)
//	EVENTPIPE_DLQ                         auto (default), on or off: whether poison gets 400/nack
//	EVENTPIPE_SHUTDOWN_TIMEOUT            time from SIGTERM to exit (default 9s)
//	EVENTPIPE_REQUEST_TIMEOUT             the service's request timeout (= push ack deadline): the HTTP read and idle
//	                                      timeouts and a PostgreSQL store's lock/statement/idle bounds derive from it
//	                                      (default 60s, DefaultRequestTimeout)
//	EVENTPIPE_MAX_EVENT_SKEW              how far an event time may be ahead of its publish time (default 5m)
//	EVENTPIPE_COALESCE_MAX_WAITING        deliveries that may wait for one document's transaction (default 256, 0 = no coalescing)
//	EVENTPIPE_MAX_SEQUENCE_JUMP           the largest sequence step trusted across the ordering window (default 1000000)
//	EVENTPIPE_HANDLER_URL, ...            the handler container behind the consumer (see handler.ConfigFromEnv)
func ConfigFromEnv(lookup func(string) (string, bool)) (Config, error) {
	get := func(k, def string) string {
		if v, ok := lookup(k); ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v)
		}
		return def
	}
	var errs []error // errors.Join below drops the nil ones
	bad := func(k, v, fix string) { errs = append(errs, fmt.Errorf("%s=%q: %s", k, v, fix)) }
	c := Config{
		Port:             get("PORT", "8080"),
		Env:              get("EVENTPIPE_ENV", "dev"),
		Service:          get("EVENTPIPE_SERVICE", "eventpipe-consumer"),
		Version:          get("EVENTPIPE_VERSION", "dev"),
		StoreURL:         get("EVENTPIPE_STORE", DefaultStoreURL()),
		RoutesPath:       get("EVENTPIPE_ROUTES", ""),
		Audience:         get("EVENTPIPE_OIDC_AUDIENCE", ""),
		PushAccounts:     list(get("EVENTPIPE_PUSH_ACCOUNTS", "")),
		CallbackAccounts: list(get("EVENTPIPE_CALLBACK_ACCOUNTS", "")),
		JWKSURL:          get("EVENTPIPE_OIDC_JWKS_URL", ""),
		CollectionPrefix: get("EVENTPIPE_COLLECTION_PREFIX", engine.DefaultCollectionPrefix),
		ShutdownTimeout:  DefaultShutdownTimeout,
		RequestTimeout:   DefaultRequestTimeout,
		MaxEventSkew:     engine.DefaultMaxEventSkew,
		PullSettings:     pubsub.ReceiveSettings{MaxOutstandingMessages: 100, MaxOutstandingBytes: 100 << 20, NumGoroutines: 1, MaxExtension: 10 * time.Minute},
	}
	errs = append(errs, envvar.Int("PORT", c.Port, 0, 65535, "use a port number such as 8080", new(int)))
	if c.Audience != "" && len(c.PushAccounts) == 0 {
		bad("EVENTPIPE_PUSH_ACCOUNTS", "", "an OIDC audience is set: list the push subscription's service account email(s)")
	}
	if c.Audience == "" && len(c.PushAccounts) > 0 {
		bad("EVENTPIPE_OIDC_AUDIENCE", "", "push accounts are set: set the audience (the push endpoint URL) so tokens are verified")
	}
	c.CallbackAudience = get("EVENTPIPE_CALLBACK_AUDIENCE", c.Audience)
	if c.CallbackAudience == "" && len(c.CallbackAccounts) > 0 {
		bad("EVENTPIPE_CALLBACK_AUDIENCE", "", "callback accounts are set: set the audience the calling jobs request tokens for (or EVENTPIPE_OIDC_AUDIENCE)")
	}
	for _, s := range list(get("EVENTPIPE_PULL_SUBSCRIPTIONS", "")) {
		if err := pull.ValidSubscription(s); err != nil {
			errs = append(errs, fmt.Errorf("EVENTPIPE_PULL_SUBSCRIPTIONS: %w", err))
		}
		c.PullSubscriptions = append(c.PullSubscriptions, s)
	}
	dlq := get("EVENTPIPE_DLQ", "auto")
	var ok bool
	if c.DLQ, ok = classify.ParseDLQMode(dlq); !ok {
		bad("EVENTPIPE_DLQ", dlq, "use auto (infer from deliveryAttempt), on or off")
	}
	integer := func(k string, lo int, fix string, dst *int) {
		errs = append(errs, envvar.Int(k, get(k, ""), lo, math.MaxInt, fix, dst))
	}
	integer("EVENTPIPE_PULL_MAX_OUTSTANDING_MESSAGES", 1, "use a positive integer", &c.PullSettings.MaxOutstandingMessages)
	integer("EVENTPIPE_PULL_MAX_OUTSTANDING_BYTES", 1, "use a positive integer", &c.PullSettings.MaxOutstandingBytes)
	integer("EVENTPIPE_PULL_GOROUTINES", 1, "use a positive integer", &c.PullSettings.NumGoroutines)
	duration := func(k, example string, dst *time.Duration) {
		errs = append(errs, envvar.Duration(k, get(k, ""), example, dst))
	}
	duration("EVENTPIPE_SHUTDOWN_TIMEOUT", "9s", &c.ShutdownTimeout)
	duration("EVENTPIPE_REQUEST_TIMEOUT", "60s", &c.RequestTimeout)
	duration("EVENTPIPE_MAX_EVENT_SKEW", "5m", &c.MaxEventSkew)
	// 0 turns coalescing off: engine.NoCoalescing (unset keeps 0, the engine's default).
	integer("EVENTPIPE_COALESCE_MAX_WAITING", 0, fmt.Sprintf("use a whole number: how many deliveries may wait for one document (default %d), or 0 to turn coalescing off", engine.DefaultMaxWaitingPerDocument), &c.MaxWaitingPerDocument)
	if c.MaxWaitingPerDocument == 0 && get("EVENTPIPE_COALESCE_MAX_WAITING", "") != "" {
		c.MaxWaitingPerDocument = engine.NoCoalescing
	}
	errs = append(errs, envvar.Int("EVENTPIPE_MAX_SEQUENCE_JUMP", get("EVENTPIPE_MAX_SEQUENCE_JUMP", ""), 1, math.MaxInt64,
		fmt.Sprintf("use a positive integer: the largest sequence step trusted across the ordering window (default %d), or unset it for the default", engine.DefaultMaxSequenceJump),
		&c.MaxSequenceJump))
	if c.RequestTimeout > 0 && (strings.HasPrefix(c.StoreURL, "postgres://") || strings.HasPrefix(c.StoreURL, "postgresql://")) {
		u, err := pgstore.WithRequestTimeout(c.StoreURL, c.RequestTimeout)
		if err != nil {
			errs = append(errs, fmt.Errorf("EVENTPIPE_STORE: %w (use postgres://user:password@host:5432/database)", err))
		}
		c.StoreURL = u
	}
	if h, err := handler.ConfigFromEnv(lookup); err != nil {
		errs = append(errs, err)
	} else {
		c.Handler = h
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("consumer configuration:\n%w", err)
	}
	return c, nil
}

func list(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Timeouts are the HTTP server's, derived from a request timeout.
type Timeouts struct {
	// ReadHeader bounds reading a request's header: a sixth of the
	// request timeout.
	ReadHeader time.Duration
	// Read bounds reading a whole request, header and body: half the
	// request timeout, so a client that stalls mid-body is cut off while
	// Pub/Sub would still wait for the answer.
	Read time.Duration
	// Idle is how long a keep-alive connection may wait for its next
	// request: the request timeout.
	Idle time.Duration
}

// Timeouts derives the HTTP server's timeouts from c.RequestTimeout.
func (c Config) Timeouts() Timeouts {
	return Timeouts{ReadHeader: c.RequestTimeout / 6, Read: c.RequestTimeout / 2, Idle: c.RequestTimeout}
}
