package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/auth/authtest"
)

const (
	audience = "https://consumer.example.run.app/pubsub/push"
	pusher   = "push@proj.iam.gserviceaccount.com"
)

func TestVerify(t *testing.T) {
	is := authtest.NewIssuer(t)
	v, err := New(t.Context(), Config{Audience: audience, AllowedEmails: []string{pusher}, JWKSURL: is.JWKSURL})
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

func TestNewNeedsAudienceAndAccounts(t *testing.T) {
	if _, err := New(t.Context(), Config{AllowedEmails: []string{pusher}}); err == nil {
		t.Fatal("no audience accepted")
	}
	if _, err := New(t.Context(), Config{Audience: audience}); err == nil {
		t.Fatal("no accounts accepted")
	}
}
