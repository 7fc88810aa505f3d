package auth

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/internal/testing/authtest"
)

const (
	audience = "https://consumer.example.run.app/pubsub/push"
	pusher   = "push@proj.iam.gserviceaccount.com"
)

func TestVerify(t *testing.T) {
	is := authtest.NewIssuer(t)
	v, err := NewKeys(t.Context(), is.JWKSURL, 0).Verifier(Config{Audience: audience, AllowedEmails: []string{pusher}})
	if err != nil {
		t.Fatal(err)
	}
	with := func(edit func(c map[string]any)) map[string]any {
		c := authtest.Claims(audience, pusher)
		edit(c)
		return c
	}
	tests := []struct {
		name   string
		header string
		status int // 0 = accepted
	}{
		{"valid", "Bearer " + is.Sign(t, authtest.Claims(audience, pusher)), 0},
		{"issuer without scheme", "Bearer " + is.Sign(t, with(func(c map[string]any) { c["iss"] = "accounts.google.com" })), 0},
		{"no header", "", http.StatusUnauthorized},
		{"not bearer", "Basic dXNlcjpwYXNz", http.StatusUnauthorized},
		{"garbage", "Bearer not.a.jwt", http.StatusUnauthorized},
		{"forged signature", "Bearer " + is.Forge(t, authtest.Claims(audience, pusher)), http.StatusUnauthorized},
		{"expired", "Bearer " + is.Sign(t, with(func(c map[string]any) {
			c["iat"], c["exp"] = time.Now().Add(-2*time.Hour).Unix(), time.Now().Add(-time.Hour).Unix()
		})), http.StatusUnauthorized},
		{"wrong audience", "Bearer " + is.Sign(t, with(func(c map[string]any) { c["aud"] = "https://other.example" })), http.StatusUnauthorized},
		{"wrong issuer", "Bearer " + is.Sign(t, with(func(c map[string]any) { c["iss"] = "https://evil.example" })), http.StatusUnauthorized},
		{"wrong email", "Bearer " + is.Sign(t, with(func(c map[string]any) { c["email"] = "intruder@proj.iam.gserviceaccount.com" })), http.StatusForbidden},
		{"email not verified", "Bearer " + is.Sign(t, with(func(c map[string]any) { c["email_verified"] = false })), http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/pubsub/push", nil)
			if tt.header != "" {
				r.Header.Set("Authorization", tt.header)
			}
			email, err := v.Verify(r)
			if tt.status == 0 {
				if err != nil || email != pusher {
					t.Fatalf("rejected a valid token: %v", err)
				}
				return
			}
			var ae *Error
			if !errors.As(err, &ae) || ae.Status != tt.status {
				t.Fatalf("want status %d, got %v", tt.status, err)
			}
		})
	}
}

func TestVerifierNeedsAudience(t *testing.T) {
	if _, err := NewKeys(t.Context(), "", 0).Verifier(Config{AllowedEmails: []string{pusher}}); err == nil {
		t.Fatal("no audience accepted")
	}
}

// TestKeysUnavailable: when Google's keys cannot be fetched (a connection
// that stalls, a server error, nothing listening) a valid token gets a 503
// within the fetch timeout, whose public text names no URL or error; once
// the keys can be fetched again, tokens verify.
func TestKeysUnavailable(t *testing.T) {
	is := authtest.NewIssuer(t)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "backend exploded at 10.1.2.3", http.StatusInternalServerError)
	}))
	t.Cleanup(failing.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	token := "Bearer " + is.Sign(t, authtest.Claims(audience, pusher))
	for name, url := range map[string]string{"stalled": authtest.StalledJWKS(t), "server error": failing.URL, "nothing listening": closed.URL} {
		t.Run(name, func(t *testing.T) {
			v, err := NewKeys(t.Context(), url, 300*time.Millisecond).Verifier(Config{Audience: audience, AllowedEmails: []string{pusher}})
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest(http.MethodPost, "/pubsub/push", nil)
			r.Header.Set("Authorization", token)
			done := make(chan error, 1)
			go func() { _, err := v.Verify(r); done <- err }()
			var verr error
			select {
			case verr = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("Verify still waiting for the keys: the fetch has no timeout")
			}
			var ae *Error
			if !errors.As(verr, &ae) || ae.Status != http.StatusServiceUnavailable {
				t.Fatalf("Verify = %v, want a 503 *Error", verr)
			}
			if pub := ae.Public(); strings.Contains(pub, "127.0.0.1") || strings.Contains(pub, "http") || strings.Contains(pub, "10.1.2.3") {
				t.Errorf("public text %q reveals internals", pub)
			}
		})
	}
	// Keys back: the same verifier accepts valid tokens again.
	var up atomic.Bool
	flaky := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		resp, err := http.Get(is.JWKSURL)
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(flaky.Close)
	v, err := NewKeys(t.Context(), flaky.URL, 0).Verifier(Config{Audience: audience, AllowedEmails: []string{pusher}})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/pubsub/push", nil)
	r.Header.Set("Authorization", token)
	var ae *Error
	if _, err := v.Verify(r); !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable {
		t.Fatalf("keys down: %v, want 503", err)
	}
	up.Store(true)
	if email, err := v.Verify(r); err != nil || email != pusher {
		t.Fatalf("keys back: %q, %v; want the token accepted", email, err)
	}
}

// TestKeysServeSeveralVerifiers: a verifier for callbacks (another
// audience and accounts, the same keys) accepts its own callers' tokens and
// refuses the push account; one with no accounts refuses everyone.
func TestKeysServeSeveralVerifiers(t *testing.T) {
	is := authtest.NewIssuer(t)
	keys := NewKeys(t.Context(), is.JWKSURL, 0)
	const callbackAud, job = "https://consumer.example.run.app", "job@proj.iam.gserviceaccount.com"
	cb, err := keys.Verifier(Config{Audience: callbackAud, AllowedEmails: []string{job}, AccountsSetting: "EVENTPIPE_CALLBACK_ACCOUNTS"})
	if err != nil {
		t.Fatal(err)
	}
	nobody, err := keys.Verifier(Config{Audience: callbackAud, AccountsSetting: "EVENTPIPE_CALLBACK_ACCOUNTS"})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodPost, "/callbacks/x", nil)
	r.Header.Set("Authorization", "Bearer "+is.Sign(t, authtest.Claims(callbackAud, job)))
	var ae *Error
	if _, err := nobody.Verify(r); !errors.As(err, &ae) || ae.Status != http.StatusForbidden {
		t.Errorf("a verifier with no accounts: %v, want 403", err)
	}
	for _, tc := range []struct {
		aud, email string
		status     int
	}{{callbackAud, job, 0}, {callbackAud, pusher, http.StatusForbidden}, {audience, job, http.StatusUnauthorized}} {
		r := httptest.NewRequest(http.MethodPost, "/callbacks/x", nil)
		r.Header.Set("Authorization", "Bearer "+is.Sign(t, authtest.Claims(tc.aud, tc.email)))
		_, err := cb.Verify(r)
		var ae *Error
		if (tc.status == 0) != (err == nil) || (err != nil && (!errors.As(err, &ae) || ae.Status != tc.status)) {
			t.Errorf("callback token for %s from %s: %v, want status %d", tc.aud, tc.email, err, tc.status)
		}
		if tc.status == http.StatusForbidden && !strings.Contains(err.Error(), "EVENTPIPE_CALLBACK_ACCOUNTS") {
			t.Errorf("403 %v: want the fix to name EVENTPIPE_CALLBACK_ACCOUNTS", err)
		}
	}
}
