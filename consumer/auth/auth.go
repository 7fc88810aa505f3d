// Package auth verifies the OIDC bearer token Pub/Sub push attaches to each
// request (cloud.google.com/pubsub/docs/authenticate-push-subscriptions):
// signature against Google's JWKS, expiry, audience, issuer
// (accounts.google.com or https://accounts.google.com), and that the token's
// verified email is one of the allowed push service accounts.
package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
)

// GoogleJWKSURL is where Google publishes the keys that sign its ID tokens.
const GoogleJWKSURL = "https://www.googleapis.com/oauth2/v3/certs"

// GoogleIssuers are the two issuer spellings Google uses in ID tokens.
var googleIssuers = []string{"accounts.google.com", "https://accounts.google.com"}

// Config configures a Verifier.
type Config struct {
	// Audience is the expected aud claim (the push endpoint URL or the
	// audience set on the subscription); required.
	Audience string
	// AllowedEmails are the push service accounts allowed to call; required.
	AllowedEmails []string
	// JWKSURL overrides GoogleJWKSURL (tests serve their own keys).
	JWKSURL string
}

// Verifier checks push requests. It is safe for concurrent use.
type Verifier struct {
	verifier *oidc.IDTokenVerifier
	allowed  []string
}

// Error is a rejected request: Status is 401 (no valid token) or 403 (a valid
// token for a caller that is not allowed).
type Error struct {
	Status int
	Err    error
}

// Error implements error.
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// New returns a Verifier. ctx bounds key fetching for the verifier's life.
func New(ctx context.Context, cfg Config) (*Verifier, error) {
	if cfg.Audience == "" {
		return nil, errors.New("auth: no audience (fix: set EVENTPIPE_OIDC_AUDIENCE to the push endpoint URL)")
	}
	if len(cfg.AllowedEmails) == 0 {
		return nil, errors.New("auth: no allowed push service accounts (fix: set EVENTPIPE_PUSH_ACCOUNTS to the push subscription's service account email)")
	}
	url := cfg.JWKSURL
	if url == "" {
		url = GoogleJWKSURL
	}
	keys := oidc.NewRemoteKeySet(ctx, url)
	// The issuer is checked below against both of Google's spellings.
	v := oidc.NewVerifier(googleIssuers[1], keys, &oidc.Config{ClientID: cfg.Audience, SkipIssuerCheck: true})
	return &Verifier{verifier: v, allowed: slices.Clone(cfg.AllowedEmails)}, nil
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
		return "", &Error{http.StatusUnauthorized, errors.New("no bearer token (the push subscription must use OIDC authentication)")}
	}
	tok, err := v.verifier.Verify(r.Context(), raw)
	if err != nil {
		return "", &Error{http.StatusUnauthorized, fmt.Errorf("invalid token: %w", err)}
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
		return "", &Error{http.StatusForbidden, fmt.Errorf("token email %q is not an allowed push service account (fix: add it to EVENTPIPE_PUSH_ACCOUNTS)", c.Email)}
	}
	return c.Email, nil
}
