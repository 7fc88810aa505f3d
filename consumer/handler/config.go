package handler

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/eventpipe/eventpipe/consumer/internal/envvar"
)

// Defaults and bounds of Config.
const (
	// DefaultTimeout is how long a keyed API request waits for the
	// handler's answer.
	DefaultTimeout = 60 * time.Second
	// DefaultInDoubt is how long, past the timeout, a keyed call that has
	// not answered keeps running and its key held (Config.InDoubt).
	DefaultInDoubt = 60 * time.Second
	// DefaultKeyTTL is how long a completed key is remembered: the
	// window in which a client may retry and get the stored response.
	DefaultKeyTTL = 24 * time.Hour
	// DefaultMaxStoredBody is the largest response body stored for
	// replay. A larger one is sent to the client but not stored: its
	// replays carry the status and headers with an empty body (and
	// BodyOmittedHeader).
	DefaultMaxStoredBody = 256 << 10
	// MaxStoredBodyLimit keeps a stored response within one Firestore
	// document (1 MiB, base64 grows a body by a third).
	MaxStoredBodyLimit = 700 << 10
	// DefaultMaxRequestBody is the largest keyed request body: it is read
	// whole to be fingerprinted. Larger ones get 413.
	DefaultMaxRequestBody = 10 << 20
	// DefaultHealthPath is the handler's default health check.
	DefaultHealthPath = "/healthz"
)

// HealthPathEnv names the environment variable with the handler's health
// path (Config.HealthPath).
const HealthPathEnv = "EVENTPIPE_HANDLER_HEALTH_PATH"

// Config configures the gateway in front of the handler.
type Config struct {
	// URL is the handler's base URL; "" means no handler: no route may
	// name it and nothing is proxied.
	URL string
	// HealthPath is the handler's health check (default /healthz): a
	// pulling consumer waits until a GET of it answers 2xx (WaitReady).
	HealthPath string
	// Timeout is how long a keyed API request waits for the handler's
	// answer: then the client gets 504, and the call runs on.
	Timeout time.Duration
	// InDoubt is how long, past Timeout, a call that has not answered
	// runs on, holding its key: its answer, when it comes, is stored and
	// replayed; past Timeout + InDoubt (the key's reservation) the call is
	// cut and the key given back, in doubt (docs/handlers.md).
	InDoubt time.Duration
	// KeyTTL is how long an Idempotency-Key is remembered after its
	// request (the record's expireAt, deleted by the store's TTL).
	KeyTTL time.Duration
	// MaxStoredBody bounds the stored response body, in bytes.
	MaxStoredBody int
	// MaxRequestBody bounds a keyed request's body, in bytes.
	MaxRequestBody int64
}

// Enabled reports whether a handler is configured.
func (c Config) Enabled() bool { return c.URL != "" }

// withDefaults fills zero values with the defaults.
func (c Config) withDefaults() Config {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.InDoubt <= 0 {
		c.InDoubt = DefaultInDoubt
	}
	if c.KeyTTL <= 0 {
		c.KeyTTL = DefaultKeyTTL
	}
	if c.MaxStoredBody <= 0 {
		c.MaxStoredBody = DefaultMaxStoredBody
	}
	if c.MaxRequestBody <= 0 {
		c.MaxRequestBody = DefaultMaxRequestBody
	}
	if c.HealthPath == "" {
		c.HealthPath = DefaultHealthPath
	}
	return c
}

// reservation is a key's reservation length: the call's whole bound.
func (c Config) reservation() time.Duration { return c.Timeout + c.InDoubt }

// ConfigFromEnv reads the handler settings (lookup is os.LookupEnv in
// production); every problem is reported, naming the variable and the fix.
//
//	EVENTPIPE_HANDLER_URL                  the handler's base URL (unset: no handler)
//	EVENTPIPE_HANDLER_HEALTH_PATH          the handler's health path (default /healthz)
//	EVENTPIPE_HANDLER_TIMEOUT              how long a keyed API request waits for the handler's answer (default 60s)
//	EVENTPIPE_HANDLER_IN_DOUBT             how long past that a call runs on, holding its key (default 60s)
//	EVENTPIPE_IDEMPOTENCY_KEY_TTL          how long a key is remembered (default 24h)
//	EVENTPIPE_IDEMPOTENCY_MAX_STORED_BODY  largest stored response body in bytes (default 262144)
func ConfigFromEnv(lookup func(string) (string, bool)) (Config, error) {
	get := func(k string) string {
		v, _ := lookup(k)
		return strings.TrimSpace(v)
	}
	var errs []error
	c := Config{URL: get(URLEnv)}
	if c.URL != "" {
		if _, err := ParseURL(c.URL); err != nil {
			errs = append(errs, err)
		}
	}
	if c.HealthPath = get(HealthPathEnv); c.HealthPath != "" && !strings.HasPrefix(c.HealthPath, "/") {
		errs = append(errs, fmt.Errorf("%s=%q is not a path (fix: an absolute path such as /healthz)", HealthPathEnv, c.HealthPath))
	}
	duration := func(k, example string, dst *time.Duration) {
		if err := envvar.Duration(k, get(k), example, dst); err != nil {
			errs = append(errs, err)
		}
	}
	duration("EVENTPIPE_HANDLER_TIMEOUT", "60s", &c.Timeout)
	duration("EVENTPIPE_HANDLER_IN_DOUBT", "60s", &c.InDoubt)
	duration("EVENTPIPE_IDEMPOTENCY_KEY_TTL", "24h", &c.KeyTTL)
	errs = append(errs, envvar.Int("EVENTPIPE_IDEMPOTENCY_MAX_STORED_BODY", get("EVENTPIPE_IDEMPOTENCY_MAX_STORED_BODY"), 1, MaxStoredBodyLimit,
		fmt.Sprintf("use a byte count from 1 to %d (a stored response must fit one Firestore document)", MaxStoredBodyLimit), &c.MaxStoredBody)) // nil: errors.Join drops it
	if err := errors.Join(errs...); err != nil {
		return Config{}, err
	}
	return c.withDefaults(), nil
}
