package handler

import (
	"time"

	"github.com/eventpipe/eventpipe/consumer/limits"
	"github.com/eventpipe/eventpipe/consumer/settings"
)

// Defaults and bounds of Config: the settings of its environment variables
// (package settings).
const (
	// DefaultTimeout is how long a keyed API request waits for the
	// handler's answer.
	DefaultTimeout = settings.DefaultHandlerTimeout
	// DefaultInDoubt is how long, past the timeout, a keyed call that has
	// not answered keeps running and its key held (Config.InDoubt).
	DefaultInDoubt = settings.DefaultHandlerInDoubt
	// DefaultKeyTTL is how long a completed key is remembered: the
	// window in which a client may retry and get the stored response.
	DefaultKeyTTL = settings.DefaultIdempotencyKeyTTL
	// DefaultMaxStoredBody is the largest response body stored for
	// replay. A larger one is sent to the client but not stored: its
	// replays carry the status and headers with an empty body (and
	// BodyOmittedHeader).
	DefaultMaxStoredBody = settings.DefaultMaxStoredBodyBytes
	// MaxStoredBodyLimit keeps a stored response within one Firestore
	// document (1 MiB, base64 grows a body by a third).
	MaxStoredBodyLimit = settings.MaxStoredBodyBytes
	// DefaultMaxRequestBody is the largest keyed request body: it is read
	// whole to be fingerprinted. Larger ones get 413.
	DefaultMaxRequestBody = limits.MaxKeyedBodyBytes
	// DefaultHealthPath is the handler's default health check.
	DefaultHealthPath = settings.DefaultHandlerHealthPath
)

// HealthPathEnv names the environment variable with the handler's health
// path (Config.HealthPath).
const HealthPathEnv = settings.HandlerHealthPath

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

// ConfigFrom is the gateway's configuration in the consumer's environment
// e (settings.Parse has checked its values' bounds): its handler URL, which
// must be an http(s) base URL, health path, timeout, in-doubt time, key
// TTL and stored body bound. The error names the variable and the fix.
func ConfigFrom(e settings.Env) (Config, error) {
	c := Config{URL: e.HandlerURL, HealthPath: e.HandlerHealthPath, Timeout: e.HandlerTimeout, InDoubt: e.HandlerInDoubt,
		KeyTTL: e.IdempotencyKeyTTL, MaxStoredBody: e.IdempotencyMaxStoredBody}
	if c.URL != "" {
		if _, err := ParseURL(c.URL); err != nil {
			return Config{}, err
		}
	}
	return c.withDefaults(), nil
}
