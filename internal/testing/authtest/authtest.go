// Package authtest signs Google-style OIDC ID tokens with a local RSA key and
// serves the key's JWKS on loopback, for tests of push authentication.
package authtest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// Issuer holds a signing key whose JWKS is served at JWKSURL.
type Issuer struct {
	key     *rsa.PrivateKey
	kid     string
	JWKSURL string
}

// NewIssuer generates a key and starts a loopback JWKS server, closed when
// the test ends.
func NewIssuer(t testing.TB) *Issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &Issuer{key: key, kid: "test-key-1"}
	jwks, err := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "alg": "RS256", "use": "sig", "kid": is.kid,
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes()),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jwks)
	}))
	t.Cleanup(srv.Close)
	is.JWKSURL = srv.URL
	return is
}

// Claims returns a valid claim set for audience and email, expiring in an hour.
func Claims(audience, email string) map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": "https://accounts.google.com", "aud": audience, "sub": "1234567890",
		"email": email, "email_verified": true,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
}

// Sign returns an RS256 JWT of claims signed with the issuer's key.
func (is *Issuer) Sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	return sign(t, is.key, is.kid, claims)
}

// Forge returns a JWT of claims signed with a different key but naming the
// issuer's key id, as an attacker would.
func (is *Issuer) Forge(t testing.TB, claims map[string]any) string {
	t.Helper()
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return sign(t, other, is.kid, claims)
}

func sign(t testing.TB, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	header, err := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": kid})
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	input := b64(header) + "." + b64(payload)
	sum := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + b64(sig)
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// StalledJWKS listens on loopback and accepts connections but never
// answers, like a key server whose connection hangs; it returns its URL.
// The listener and every connection it accepted close when the test ends.
func StalledJWKS(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String() + "/oauth2/v3/certs"
}
