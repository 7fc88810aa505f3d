// Package auth verifies the Google-signed OIDC bearer tokens that reach the
// consumer: the one Pub/Sub push attaches to each request
// (cloud.google.com/pubsub/docs/authenticate-push-subscriptions) and the one
// a Cloud Run job's service account sends with a callback. It checks the
// signature against Google's JWKS, expiry, audience, issuer
// (accounts.google.com or https://accounts.google.com), and that the
// token's verified email is one of the allowed service accounts.
//
// Google's keys are fetched with an HTTP client that times out: when they
// cannot be fetched, a request fails within FetchTimeout with an *Error of
// status 503 (the consumer's dependency failed, not the caller), never
// waits on a stalled connection.
package auth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/eventpipe/eventpipe/consumer/settings"
)

// GoogleJWKSURL is where Google publishes the keys that sign its ID tokens.
const GoogleJWKSURL = "https://www.googleapis.com/oauth2/v3/certs"

// DefaultFetchTimeout bounds one fetch of the keys, connection included.
const DefaultFetchTimeout = 5 * time.Second

// GoogleIssuers are the two issuer spellings Google uses in ID tokens.
var googleIssuers = []string{"accounts.google.com", "https://accounts.google.com"}

// Config configures a Verifier.
type Config struct {
	// Audience is the expected aud claim (the push endpoint URL or the
	// audience set on the subscription); required.
	Audience string
	// AllowedEmails are the service accounts allowed to call; with none,
	// every caller is refused (403).
	AllowedEmails []string
	// AccountsSetting names where AllowedEmails are configured, for the
	// fix a 403 names (default EVENTPIPE_PUSH_ACCOUNTS).
	AccountsSetting string
}

// Keys are Google's token-signing keys, fetched when a token names one not
// seen yet and cached; several verifiers can share them.
type Keys struct {
	set oidc.KeySet
}

// NewKeys returns the keys published at jwksURL (GoogleJWKSURL when empty),
// each fetch bounded by fetchTimeout (DefaultFetchTimeout when 0). ctx
// carries values only (go-oidc's convention).
func NewKeys(ctx context.Context, jwksURL string, fetchTimeout time.Duration) *Keys {
	if jwksURL == "" {
		jwksURL = GoogleJWKSURL
	}
	if fetchTimeout <= 0 {
		fetchTimeout = DefaultFetchTimeout
	}
	ctx = oidc.ClientContext(ctx, fetchClient(fetchTimeout))
	return &Keys{set: fetchFailures{oidc.NewRemoteKeySet(ctx, jwksURL)}}
}

// Verifier returns a verifier of tokens for cfg.Audience from
// cfg.AllowedEmails. With no allowed accounts it refuses every caller (403
// naming cfg.AccountsSetting): a deployment that verifies tokens but lists
// no one fails closed.
func (k *Keys) Verifier(cfg Config) (*Verifier, error) {
	if cfg.Audience == "" {
		return nil, errors.New("auth: no audience (fix: set the audience callers request tokens for)")
	}
	// The issuer is checked in Verify against both of Google's spellings.
	v := oidc.NewVerifier(googleIssuers[1], k.set, &oidc.Config{ClientID: cfg.Audience, SkipIssuerCheck: true})
	return &Verifier{verifier: v, allowed: slices.Clone(cfg.AllowedEmails), setting: setting(cfg)}, nil
}

// Verifier checks requests' bearer tokens. It is safe for concurrent use.
type Verifier struct {
	verifier *oidc.IDTokenVerifier
	allowed  []string
	setting  string
}

// Error is a rejected request. Status is 401 (no valid token), 403 (a valid
// token for a caller that is not allowed) or 503 (Google's keys could not
// be fetched: retry later). Err says why, for the log only; Public is what
// a response may say (no URLs, addresses or errors of the consumer's own).
type Error struct {
	Status int
	Err    error
}

// Error implements error.
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Public is the text a response to the caller may carry.
func (e *Error) Public() string {
	switch e.Status {
	case http.StatusForbidden:
		return "forbidden: the token's account may not call this endpoint"
	case http.StatusServiceUnavailable:
		return "service unavailable: tokens cannot be verified at the moment; retry later"
	}
	return "unauthorized: a valid Google-signed OIDC bearer token is required"
}

// Refusal returns how to answer a request Verify refused with err: the
// status, whether it is transient (Google's keys could not be fetched) and
// the public text. An error that is not an *Error is a 401.
func Refusal(err error) (status int, transient bool, public string) {
	ae := &Error{Status: http.StatusUnauthorized, Err: err}
	errors.As(err, &ae)
	return ae.Status, ae.Status == http.StatusServiceUnavailable, ae.Public()
}

// errKeyFetch marks a failure to fetch the keys.
var errKeyFetch = errors.New("fetch Google's token-signing keys")

func setting(cfg Config) string {
	if cfg.AccountsSetting == "" {
		return settings.PushAccounts
	}
	return cfg.AccountsSetting
}

// fetchClient is the HTTP client the keys are fetched with: every step of a
// fetch is bounded, so a stalled connection fails the fetch instead of
// holding every request that waits for the keys; a status other than 200 is
// a failed fetch too.
func fetchClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: fetchTransport{&http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   timeout,
			ResponseHeaderTimeout: timeout,
			IdleConnTimeout:       90 * time.Second,
			MaxIdleConnsPerHost:   2,
		}},
	}
}

// fetchTransport marks every failed fetch with errKeyFetch.
type fetchTransport struct{ base http.RoundTripper }

func (t fetchTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errKeyFetch, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %s answered %s", errKeyFetch, r.URL.Host, resp.Status)
	}
	return resp, nil
}

// fetchFailures passes signatures to the key set, and records a failure to
// fetch the keys (or a request that ended while waiting for them) in the
// context's fetchRecord: go-oidc formats the key set's error into its own
// with %v, so its type does not come out of Verify.
type fetchFailures struct{ keys oidc.KeySet }

// fetchRecord is where a Verify call learns that its keys failed.
type fetchRecord struct{ err error }

type fetchRecordKey struct{}

// VerifySignature implements oidc.KeySet.
func (f fetchFailures) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	payload, err := f.keys.VerifySignature(ctx, jwt)
	var fetchErr *url.Error // the HTTP client's (its timeout drops errKeyFetch from the chain)
	if err != nil && (errors.Is(err, errKeyFetch) || errors.As(err, &fetchErr) || ctx.Err() != nil) {
		if rec, ok := ctx.Value(fetchRecordKey{}).(*fetchRecord); ok {
			rec.err = &Error{Status: http.StatusServiceUnavailable, Err: err}
		}
	}
	return payload, err
}

// claims are the ID token claims the verifier checks.
type claims struct {
	Email         string `json:"email"`
	EmailVerified bool   `json:"email_verified"`
}

// Verify checks r's bearer token and returns the caller's email, or an
// *Error with the status to answer.
func (v *Verifier) Verify(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	raw, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || raw == "" {
		return "", &Error{http.StatusUnauthorized, errors.New("no bearer token (the caller must send a Google-signed OIDC token)")}
	}
	tok, err := v.verify(r.Context(), raw)
	if err != nil {
		return "", err
	}
	if !slices.Contains(googleIssuers, tok.Issuer) {
		return "", &Error{http.StatusUnauthorized, fmt.Errorf("token issuer %q is not Google", tok.Issuer)}
	}
	var c claims
	if err := tok.Claims(&c); err != nil {
		return "", &Error{http.StatusUnauthorized, fmt.Errorf("token claims: %w", err)}
	}
	if !c.EmailVerified {
		return "", &Error{http.StatusForbidden, fmt.Errorf("token email %q is not verified", c.Email)}
	}
	if !slices.Contains(v.allowed, c.Email) {
		return "", &Error{http.StatusForbidden, fmt.Errorf("token email %q is not an allowed service account (fix: add it to %s)", c.Email, v.setting)}
	}
	return c.Email, nil
}

// verify runs go-oidc's checks; a key fetch failure is a 503, any other
// failure a 401.
func (v *Verifier) verify(ctx context.Context, raw string) (*oidc.IDToken, error) {
	var fetch fetchRecord
	tok, err := v.verifier.Verify(context.WithValue(ctx, fetchRecordKey{}, &fetch), raw)
	if err == nil {
		return tok, nil
	}
	if fetch.err != nil {
		return nil, fetch.err
	}
	return nil, &Error{http.StatusUnauthorized, fmt.Errorf("invalid token: %w", err)}
}
