// Package settings is the one home of the consumer's environment: every variable it
// reads (name, type, default, bounds, meaning) and Env, the typed struct they are parsed
// into. consumer/server parses it at start-up (Parse); the Cloud Run components and
// devpipe, which set the variables, render it (Env.Value, Env.Environ) instead of
// writing the names and formats again, and docs/consumer.md's table of the variables is
// generated from it (Vars). It imports only the standard library and the duration
// grammar (internal/durations), so infrastructure code can use it without linking the
// consumer.
package settings

import (
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/eventpipe/eventpipe/internal/durations"
)

// Prefix starts the name of every variable of the consumer's own (all but Port and
// MemoryLimit, which Cloud Run and the Go runtime define).
const Prefix = "EVENTPIPE_"

// Names of the variables: the one place each is spelled.
const (
	Port                       = "PORT"
	Environment                = "EVENTPIPE_ENV"
	Service                    = "EVENTPIPE_SERVICE"
	Version                    = "EVENTPIPE_VERSION"
	Store                      = "EVENTPIPE_STORE"
	Routes                     = "EVENTPIPE_ROUTES"
	OIDCAudience               = "EVENTPIPE_OIDC_AUDIENCE"
	PushAccounts               = "EVENTPIPE_PUSH_ACCOUNTS"
	CallbackAudience           = "EVENTPIPE_CALLBACK_AUDIENCE"
	CallbackAccounts           = "EVENTPIPE_CALLBACK_ACCOUNTS"
	OIDCJWKSURL                = "EVENTPIPE_OIDC_JWKS_URL"
	PullSubscriptions          = "EVENTPIPE_PULL_SUBSCRIPTIONS"
	PullMaxOutstandingMessages = "EVENTPIPE_PULL_MAX_OUTSTANDING_MESSAGES"
	PullMaxOutstandingBytes    = "EVENTPIPE_PULL_MAX_OUTSTANDING_BYTES"
	PullGoroutines             = "EVENTPIPE_PULL_GOROUTINES"
	CollectionPrefix           = "EVENTPIPE_COLLECTION_PREFIX"
	DLQ                        = "EVENTPIPE_DLQ"
	CoalesceMaxWaiting         = "EVENTPIPE_COALESCE_MAX_WAITING"
	ShutdownTimeout            = "EVENTPIPE_SHUTDOWN_TIMEOUT"
	RequestTimeout             = "EVENTPIPE_REQUEST_TIMEOUT"
	MaxEventSkew               = "EVENTPIPE_MAX_EVENT_SKEW"
	MaxSequenceJump            = "EVENTPIPE_MAX_SEQUENCE_JUMP"
	HandlerURL                 = "EVENTPIPE_HANDLER_URL"
	HandlerHealthPath          = "EVENTPIPE_HANDLER_HEALTH_PATH"
	HandlerTimeout             = "EVENTPIPE_HANDLER_TIMEOUT"
	HandlerInDoubt             = "EVENTPIPE_HANDLER_IN_DOUBT"
	IdempotencyKeyTTL          = "EVENTPIPE_IDEMPOTENCY_KEY_TTL"
	IdempotencyMaxStoredBody   = "EVENTPIPE_IDEMPOTENCY_MAX_STORED_BODY"
	Failpoint                  = "EVENTPIPE_FAILPOINT"
	PprofAddr                  = "EVENTPIPE_PPROF_ADDR"
	// MemoryLimit is read by the Go runtime, not by Parse: its soft memory limit, which
	// the Cloud Run component sets from the container's memory (limits.MemoryLimit) and
	// the consumer's memory budget for request bodies derives from.
	MemoryLimit = "GOMEMLIMIT"
)

// Defaults and bounds: the one place each is set (the engine's, the gateway's and the
// server's constants of the same settings are these).
const (
	DefaultPort                       = 8080
	DefaultEnvironment                = "dev"
	DefaultService                    = "eventpipe-consumer"
	DefaultVersion                    = "dev"
	DefaultCollectionPrefix           = "eventpipe_"
	DefaultPullMaxOutstandingMessages = 100
	DefaultPullMaxOutstandingBytes    = 100 << 20
	DefaultPullGoroutines             = 1
	DefaultDLQ                        = "auto"
	DefaultCoalesceMaxWaiting         = 256
	// CloudRunTerminationGrace is the time Cloud Run gives an instance's containers
	// between SIGTERM and SIGKILL: 10 s (Cloud Run's container runtime contract,
	// https://cloud.google.com/run/docs/container-contract, and "Graceful shutdowns on
	// Cloud Run", cloud.google.com/blog, 2020). It is not configurable: the v2 API's
	// RevisionTemplate, and so pulumi-gcp v8.41.1's cloudrunv2 Service and WorkerPool,
	// have no field for it.
	CloudRunTerminationGrace = 10 * time.Second
	// DefaultShutdownTimeout is Cloud Run's grace less a second for the process to exit
	// after it (flush the last spans, close the store). Handler calls in flight at
	// SIGTERM run until the drain deadline within it; one still running then is cut, its
	// key held until its reservation lapses.
	DefaultShutdownTimeout = CloudRunTerminationGrace - time.Second
	// DefaultRequestTimeout is a Cloud Run service's default request timeout, which its
	// push subscriptions' ack deadline equals.
	DefaultRequestTimeout = 60 * time.Second
	DefaultMaxEventSkew   = 5 * time.Minute
	// DefaultMaxSequenceJump is far more than any real producer's step between events
	// published within the ordering window.
	DefaultMaxSequenceJump   = 1_000_000
	DefaultHandlerHealthPath = "/healthz"
	DefaultHandlerTimeout    = 60 * time.Second
	// DefaultHandlerInDoubt is how long, past the handler timeout, a keyed
	// call that has not answered runs on holding its key: its reservation
	// is the sum (docs/handlers.md).
	DefaultHandlerInDoubt     = 60 * time.Second
	DefaultIdempotencyKeyTTL  = 24 * time.Hour
	DefaultMaxStoredBodyBytes = 256 << 10
	// MaxStoredBodyBytes keeps a stored response within one Firestore document (1 MiB;
	// base64 grows a body by a third).
	MaxStoredBodyBytes = 700 << 10
)

// DLQModes are the values of EVENTPIPE_DLQ.
func DLQModes() []string { return []string{"auto", "on", "off"} }

// DefaultStore is the store of an unset EVENTPIPE_STORE: the embedded bbolt file
// eventpipe-UID.db in the OS temporary directory, one per user, since the temporary
// directory is shared by every user of a host (/tmp) and one user's store would refuse,
// or decide, another's messages.
func DefaultStore() string {
	name := "eventpipe.db"
	if uid := os.Getuid(); uid >= 0 { // -1 on Windows, whose temporary directory is the user's own
		name = "eventpipe-" + strconv.Itoa(uid) + ".db"
	}
	return "bbolt://" + filepath.ToSlash(filepath.Join(os.TempDir(), name))
}

// Env is the consumer's environment, typed: the value of every variable Parse reads,
// its default where it is unset. A list's elements hold no comma and no surrounding
// space; a value holds no surrounding space (Parse trims it).
type Env struct {
	Port                       int
	Environment                string
	Service                    string
	Version                    string
	Store                      string
	Routes                     string // "": the embedded default routes
	OIDCAudience               string // "": no in-app check of push tokens
	PushAccounts               []string
	CallbackAudience           string // unset: OIDCAudience
	CallbackAccounts           []string
	OIDCJWKSURL                string // "": Google's
	PullSubscriptions          []string
	PullMaxOutstandingMessages int
	PullMaxOutstandingBytes    int
	PullGoroutines             int
	CollectionPrefix           string
	DLQ                        string // one of DLQModes
	CoalesceMaxWaiting         int    // 0: no coalescing
	ShutdownTimeout            time.Duration
	RequestTimeout             time.Duration
	MaxEventSkew               time.Duration
	MaxSequenceJump            int64
	HandlerURL                 string // "": no handler
	HandlerHealthPath          string
	HandlerTimeout             time.Duration
	HandlerInDoubt             time.Duration
	IdempotencyKeyTTL          time.Duration
	IdempotencyMaxStoredBody   int
	Failpoint                  string // crash tests only
	PprofAddr                  string // "": no profiles served
}

// Var is one variable as the documentation lists it.
type Var struct {
	Name string
	// Type is the kind of value and its bounds: string, list, "integer ≥ 1", "integer,
	// 1 to 716800", "duration > 0", or the values allowed, "auto | on | off".
	Type string
	// Default is the value an unset variable takes, as written in the environment (""
	// when it has none of its own).
	Default string
	// Unset says what an unset variable means when it takes no value of its own ("" when
	// it means nothing: an empty list).
	Unset string
	// Doc says what it sets, with its bounds.
	Doc string
}

// field binds a variable to its field of an Env and the rules of its values.
type field struct {
	Var
	// def is the text of the default value (Var.Default may say what it means
	// instead); follows, when set, is the variable whose value is the default.
	def     string
	follows *string
	str     *string
	list    *[]string
	num     *int
	num64   *int64
	dur     *time.Duration
	// lo and hi bound an integer; fix says what to write instead of a bad one.
	lo, hi int64
	fix    string
	// check, when set, reports what is wrong with a string value ("" when nothing).
	check func(string) string
}

// text is a string variable with default def.
func text(name, def, doc string, p *string) field {
	return field{Var: Var{Name: name, Type: "string", Default: def, Doc: doc}, def: def, str: p}
}

// means says what f means unset, where it takes no value of its own.
func (f field) means(unset string) field {
	f.Default, f.Unset = "", unset
	return f
}

// list is a comma-separated list variable, empty by default.
func list(name, doc string, p *[]string) field {
	return field{Var: Var{Name: name, Type: "list", Doc: doc}, list: p}
}

// integer is an integer variable from lo to hi with default def.
func integer[T int | int64](name string, def T, lo, hi int64, doc, fix string, p *T) field {
	typ := fmt.Sprintf("integer, %d to %d", lo, hi)
	if hi == math.MaxInt || hi == math.MaxInt64 {
		typ = fmt.Sprintf("integer ≥ %d", lo)
	}
	f := field{Var: Var{Name: name, Type: typ, Default: strconv.FormatInt(int64(def), 10), Doc: doc}, lo: lo, hi: hi, fix: fix}
	f.def = f.Default
	switch p := any(p).(type) {
	case *int:
		f.num = p
	case *int64:
		f.num64 = p
	}
	return f
}

// duration is a positive duration variable with default def.
func duration(name string, def time.Duration, doc string, p *time.Duration) field {
	return field{Var: Var{Name: name, Type: "duration > 0", Default: FormatDuration(def), Doc: doc}, def: FormatDuration(def), dur: p}
}

// fields binds every variable to its field of e, in the documentation's order.
func (e *Env) fields() []field {
	positive := "use a positive integer"
	dlq := text(DLQ, DefaultDLQ, "does the subscription have a DLQ? `auto`: yes when Pub/Sub sends `deliveryAttempt`", &e.DLQ)
	dlq.Type, dlq.check = strings.Join(DLQModes(), " | "), func(v string) string {
		if !slices.Contains(DLQModes(), v) {
			return "use auto (infer from deliveryAttempt), on or off"
		}
		return ""
	}
	health := text(HandlerHealthPath, DefaultHandlerHealthPath, "the handler's health path: a pulling consumer waits until it answers 2xx before it pulls", &e.HandlerHealthPath)
	health.check = func(v string) string {
		if !strings.HasPrefix(v, "/") {
			return "is not a path (fix: an absolute path such as /healthz)"
		}
		return ""
	}
	callbackAudience := text(CallbackAudience, "", "verify callback OIDC tokens for this audience (what the calling jobs request tokens for)", &e.CallbackAudience).means("`" + OIDCAudience + "`")
	callbackAudience.follows = &e.OIDCAudience
	pprof := text(PprofAddr, "", "serve Go's profiles (`net/http/pprof`, `/debug/pprof/`) on this loopback `host:port` (`127.0.0.1:6060`, `[::1]:6060`, `localhost:6060`), a listener of its own, never the service's port; any other host stops start-up. Read them from the same machine (`go tool pprof http://127.0.0.1:6060/debug/pprof/profile?seconds=30`) or through `kubectl port-forward`; a Cloud Run container's loopback is out of reach", &e.PprofAddr).means("no profiles served")
	pprof.check = checkPprofAddr
	return []field{
		integer(Port, DefaultPort, 0, 65535, "the port the consumer listens on (Cloud Run sets it)", "use a port number such as 8080", &e.Port),
		text(Environment, DefaultEnvironment, "the environment; qualifies every document id (`prod__checkout`)", &e.Environment),
		text(Service, DefaultService, "the service's name on every log line", &e.Service),
		text(Version, DefaultVersion, "the service's version on every log line", &e.Version),
		text(Store, DefaultStore(), "the store: `mem://`, `bbolt:///path.db`, `postgres://…`, `firestore://PROJECT/DATABASE`", &e.Store).means("`bbolt://$TMPDIR/eventpipe-UID.db`, the user's own"),
		text(Routes, "", "the path of a routes file, or the routes JSON itself (a value starting with `{`)", &e.Routes).means("embedded default routes"),
		text(OIDCAudience, "", "verify push OIDC tokens for this audience", &e.OIDCAudience).means("no in-app check"),
		list(PushAccounts, "comma-separated service-account emails allowed to push (required with an audience)", &e.PushAccounts),
		callbackAudience,
		list(CallbackAccounts, "comma-separated service-account emails allowed to call back; with a callback audience and none listed, every callback is refused (403)", &e.CallbackAccounts),
		text(OIDCJWKSURL, "", "where the keys of OIDC tokens are fetched (tests)", &e.OIDCJWKSURL).means("Google's"),
		list(PullSubscriptions, "comma-separated `projects/P/subscriptions/S` to consume by streaming pull", &e.PullSubscriptions),
		integer(PullMaxOutstandingMessages, DefaultPullMaxOutstandingMessages, 1, math.MaxInt, "pull flow control: messages held at once", positive, &e.PullMaxOutstandingMessages),
		integer(PullMaxOutstandingBytes, DefaultPullMaxOutstandingBytes, 1, math.MaxInt, "pull flow control: bytes of messages held at once", positive, &e.PullMaxOutstandingBytes),
		integer(PullGoroutines, DefaultPullGoroutines, 1, math.MaxInt, "pull flow control: streams per subscription", positive, &e.PullGoroutines),
		text(CollectionPrefix, DefaultCollectionPrefix, "the engine's collections are `{prefix}dedupe`, `leases`, `receipts`, `poison` (stacks set `eventpipe_<pipeline>_`)", &e.CollectionPrefix),
		dlq,
		integer(CoalesceMaxWaiting, DefaultCoalesceMaxWaiting, 0, math.MaxInt,
			"latest-state deliveries that may wait for one document's transaction in flight (hot aggregates); beyond it 500/nack; `0` turns coalescing off",
			fmt.Sprintf("use a whole number: how many deliveries may wait for one document (default %d), or 0 to turn coalescing off", DefaultCoalesceMaxWaiting), &e.CoalesceMaxWaiting),
		duration(ShutdownTimeout, DefaultShutdownTimeout, "time from SIGTERM to exit: in-flight work is cut at its end", &e.ShutdownTimeout),
		duration(RequestTimeout, DefaultRequestTimeout, "the service's request timeout (its push ack deadline; the component sets the service's): the HTTP read and idle timeouts and a PostgreSQL store's lock, statement and idle-in-transaction bounds derive from it", &e.RequestTimeout),
		duration(MaxEventSkew, DefaultMaxEventSkew, "the window of ordering: how long a version's sequence or event time holds back updates published after it (an event time further ahead of its publish time is logged)", &e.MaxEventSkew),
		integer(MaxSequenceJump, int64(DefaultMaxSequenceJump), 1, math.MaxInt64,
			"the largest sequence step trusted across the ordering window; a route's `ordering.maxSequenceJump` overrides it",
			fmt.Sprintf("use a positive integer: the largest sequence step trusted across the ordering window (default %d), or unset it for the default", DefaultMaxSequenceJump), &e.MaxSequenceJump),
		text(HandlerURL, "", "the base URL of the team's handler container behind the consumer: lease routes without a URL send their events there, other paths are proxied with `Idempotency-Key` handling", &e.HandlerURL).means("no handler"),
		health,
		duration(HandlerTimeout, DefaultHandlerTimeout, "how long a keyed API request waits for the handler's answer: then the client gets 504 and the call runs on (the Cloud Run component sets the service's request timeout less a sixth of it, at most 10 s, with a handler)", &e.HandlerTimeout),
		duration(HandlerInDoubt, DefaultHandlerInDoubt, "how long past `"+HandlerTimeout+"` a keyed call that has not answered runs on, holding its key; the key's reservation is the sum", &e.HandlerInDoubt),
		duration(IdempotencyKeyTTL, DefaultIdempotencyKeyTTL, "how long an `Idempotency-Key` is remembered after its request", &e.IdempotencyKeyTTL),
		integer(IdempotencyMaxStoredBody, DefaultMaxStoredBodyBytes, 1, MaxStoredBodyBytes, "the largest handler response body stored for replay, in bytes",
			fmt.Sprintf("use a byte count from 1 to %d (a stored response must fit one Firestore document)", MaxStoredBodyBytes), &e.IdempotencyMaxStoredBody),
		text(Failpoint, "", "crash tests only: the engine's failpoints at which the process kills itself", &e.Failpoint),
		pprof,
	}
}

// checkPprofAddr says what is wrong with a PprofAddr value ("" when nothing): it must
// be host:port whose host is a loopback address (127.0.0.1, ::1) or localhost, so that
// only a process on the same machine (or, on GKE, kubectl port-forward) can read the
// profiles, which show the consumer's internals.
func checkPprofAddr(v string) string {
	if v == "" {
		return "" // no profiles served
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return fmt.Sprintf("%v (use a loopback host:port such as 127.0.0.1:6060, or unset it to serve no profiles)", err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Sprintf("the port %q is not a port number (use a loopback host:port such as 127.0.0.1:6060)", port)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Sprintf("profiles are served on a loopback address only, and %q is not one (use 127.0.0.1:PORT or [::1]:PORT; reach it from the same machine, or through kubectl port-forward)", host)
	}
	return ""
}

// Vars returns every variable Parse reads, in the documentation's order, and then
// MemoryLimit, which the Go runtime reads.
func Vars() []Var {
	var out []Var
	for _, f := range new(Env).fields() {
		out = append(out, f.Var)
	}
	return append(out, Var{Name: MemoryLimit, Type: "bytes", Unset: "no limit",
		Doc: "the Go runtime's soft memory limit; the component sets 70% of the container's memory (`limits.MemoryLimit`). The memory budget of request bodies derives from it (without it there is none); logged as `memory_limit_bytes` and `body_budget_bytes` at start-up"})
}

// Default is the Env of an empty environment.
func Default() Env {
	e, err := Parse(func(string) (string, bool) { return "", false })
	if err != nil {
		panic("settings: the defaults do not parse: " + err.Error()) // a bug here, caught by the tests
	}
	return e
}

// Parse reads every variable with lookup (os.LookupEnv in production): a value is
// trimmed, and an unset or empty one takes its default. Every problem is reported at
// once, each naming the variable, the value and the fix.
func Parse(lookup func(string) (string, bool)) (Env, error) {
	var e Env
	var errs []error
	for _, f := range e.fields() {
		v, _ := lookup(f.Name)
		if v = strings.TrimSpace(v); v == "" {
			v = f.defaultValue()
		}
		if err := f.set(v); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, e.consistent()...)
	return e, errors.Join(errs...)
}

// defaultValue is the text of f's default: the value of the variable it follows
// (read before it), or its own.
func (f field) defaultValue() string {
	if f.follows != nil {
		return *f.follows
	}
	return f.def
}

// set parses v, a trimmed value or f's default, into f's field.
func (f field) set(v string) error {
	bad := func(fix string) error { return fmt.Errorf("%s=%q: %s", f.Name, v, fix) }
	switch {
	case f.str != nil:
		if f.check != nil && v != "" {
			if fix := f.check(v); fix != "" {
				return bad(fix)
			}
		}
		*f.str = v
	case f.list != nil:
		*f.list = ParseList(v)
	case f.num != nil || f.num64 != nil:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < f.lo || n > f.hi {
			return bad(f.fix)
		}
		if f.num != nil {
			*f.num = int(n)
		} else {
			*f.num64 = n
		}
	case f.dur != nil:
		d, err := durations.Parse(v)
		if err != nil || d <= 0 {
			return bad("use a positive duration such as " + f.def)
		}
		*f.dur = d
	}
	return nil
}

// consistent reports the variables that are valid alone but not together.
func (e *Env) consistent() []error {
	var errs []error
	bad := func(k, fix string) { errs = append(errs, fmt.Errorf("%s=%q: %s", k, "", fix)) }
	if e.OIDCAudience != "" && len(e.PushAccounts) == 0 {
		bad(PushAccounts, "an OIDC audience is set: list the push subscription's service account email(s)")
	}
	if e.OIDCAudience == "" && len(e.PushAccounts) > 0 {
		bad(OIDCAudience, "push accounts are set: set the audience (the push endpoint URL) so tokens are verified")
	}
	if e.CallbackAudience == "" && len(e.CallbackAccounts) > 0 {
		bad(CallbackAudience, "callback accounts are set: set the audience the calling jobs request tokens for (or "+OIDCAudience+")")
	}
	return errs
}

// Value is the text of variable name in e, as Parse reads it back: integers in decimal,
// durations in their largest whole unit (FormatDuration), lists joined with commas. It is
// "" for a name Vars does not list.
func (e Env) Value(name string) string {
	for _, f := range e.fields() {
		if f.Name != name {
			continue
		}
		switch {
		case f.str != nil:
			return *f.str
		case f.list != nil:
			return FormatList(*f.list)
		case f.num != nil:
			return strconv.Itoa(*f.num)
		case f.num64 != nil:
			return strconv.FormatInt(*f.num64, 10)
		case f.dur != nil:
			return FormatDuration(*f.dur)
		}
	}
	return ""
}

// Environ is the named variables of e with their values (Value), to set in a process's
// environment.
func (e Env) Environ(names ...string) map[string]string {
	out := make(map[string]string, len(names))
	for _, n := range names {
		out[n] = e.Value(n)
	}
	return out
}

// ParseList reads a comma-separated list, its elements trimmed and empty ones dropped.
func ParseList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// FormatList writes a list as ParseList reads it.
func FormatList(list []string) string { return strings.Join(list, ",") }

// FormatDuration writes a duration as Parse reads it: in whole seconds ("9s", "60s",
// the form the Cloud Run component has always set, so that its services' environment
// does not change), or in Go's form when it is not a whole number of seconds ("1.5s").
func FormatDuration(d time.Duration) string {
	if d > 0 && d%time.Second == 0 {
		return durations.Seconds(d)
	}
	return d.String()
}
