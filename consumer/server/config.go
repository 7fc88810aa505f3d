package server

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/pubsub/v2"

	"github.com/eventpipe/eventpipe/consumer/classify"
	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/handler"
	"github.com/eventpipe/eventpipe/consumer/pull"
	"github.com/eventpipe/eventpipe/consumer/settings"
	"github.com/eventpipe/eventpipe/consumer/store/pgstore"
)

// Config is the consumer's runtime configuration, read from the environment
// the Cloud Run component sets (ConfigFromEnv; the variables are package
// settings').
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
	// MaxWaitingPerDocument is engine.Config.MaxWaitingPerDocument
	// (engine.NoCoalescing: off).
	MaxWaitingPerDocument int
	// Handler is the team's handler container behind the consumer
	// (EVENTPIPE_HANDLER_URL and the idempotency-key settings: see
	// handler.ConfigFrom); its zero value means none.
	Handler handler.Config
	// MaxSequenceJump is engine.Config.MaxSequenceJump, from
	// EVENTPIPE_MAX_SEQUENCE_JUMP.
	MaxSequenceJump int64
	// PprofAddr is the profiling endpoint's loopback address, from
	// EVENTPIPE_PPROF_ADDR (settings.PprofAddr); "" serves no profiles.
	PprofAddr string
}

// DefaultStoreURL is the embedded bbolt file used when EVENTPIPE_STORE is
// unset: eventpipe-UID.db in the OS temporary directory (settings.DefaultStore).
func DefaultStoreURL() string { return settings.DefaultStore() }

// DefaultShutdownTimeout leaves Cloud Run's 10 s SIGTERM grace a margin.
const DefaultShutdownTimeout = settings.DefaultShutdownTimeout

// DefaultRequestTimeout is a Cloud Run consumer's default request timeout,
// which its push subscriptions' ack deadline equals.
const DefaultRequestTimeout = settings.DefaultRequestTimeout

// ConfigFromEnv reads the configuration from the environment (lookup is
// os.LookupEnv in production): the variables package settings lists, with
// their defaults and bounds (settings.Parse), and the rules of their values
// that belong to other packages (pull subscription names, the handler's
// URL, a PostgreSQL URL). Every problem is reported, each naming the
// variable and the fix.
func ConfigFromEnv(lookup func(string) (string, bool)) (Config, error) {
	e, err := settings.Parse(lookup)
	errs := []error{err} // errors.Join below drops the nil ones
	c := Config{
		Port:              strconv.Itoa(e.Port),
		Env:               e.Environment,
		Service:           e.Service,
		Version:           e.Version,
		StoreURL:          e.Store,
		RoutesPath:        e.Routes,
		Audience:          e.OIDCAudience,
		PushAccounts:      e.PushAccounts,
		CallbackAudience:  e.CallbackAudience,
		CallbackAccounts:  e.CallbackAccounts,
		JWKSURL:           e.OIDCJWKSURL,
		PullSubscriptions: e.PullSubscriptions,
		CollectionPrefix:  e.CollectionPrefix,
		ShutdownTimeout:   e.ShutdownTimeout,
		RequestTimeout:    e.RequestTimeout,
		MaxEventSkew:      e.MaxEventSkew,
		MaxSequenceJump:   e.MaxSequenceJump,
		PprofAddr:         e.PprofAddr,
		PullSettings: pubsub.ReceiveSettings{MaxOutstandingMessages: e.PullMaxOutstandingMessages, MaxOutstandingBytes: e.PullMaxOutstandingBytes,
			NumGoroutines: e.PullGoroutines, MaxExtension: 10 * time.Minute},
		MaxWaitingPerDocument: e.CoalesceMaxWaiting,
	}
	if c.MaxWaitingPerDocument == 0 {
		c.MaxWaitingPerDocument = engine.NoCoalescing
	}
	c.DLQ, _ = classify.ParseDLQMode(e.DLQ) // settings.Parse checked it
	for _, s := range c.PullSubscriptions {
		if err := pull.ValidSubscription(s); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", settings.PullSubscriptions, err))
		}
	}
	if c.RequestTimeout > 0 && (strings.HasPrefix(c.StoreURL, "postgres://") || strings.HasPrefix(c.StoreURL, "postgresql://")) {
		u, err := pgstore.WithRequestTimeout(c.StoreURL, c.RequestTimeout)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w (use postgres://user:password@host:5432/database)", settings.Store, err))
		}
		c.StoreURL = u
	}
	if h, err := handler.ConfigFrom(e); err != nil {
		errs = append(errs, err)
	} else {
		c.Handler = h
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("consumer configuration:\n%w", err)
	}
	return c, nil
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
