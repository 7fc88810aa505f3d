package keys

import (
	"crypto/sha256"
	"fmt"
)

// LogicalKeyLen is the length of a hashed logical key: 52 base32 characters,
// which carry the whole 256-bit SHA-256.
const LogicalKeyLen = 52

// Fingerprint returns "sha256:" and the base32 SHA-256 of the canonical JSON
// of payload. The same event id with a different fingerprint is a contract
// violation (a reused event id). The canonical form is hashed as it is
// written, so a payload of any size takes a few kilobytes to fingerprint.
func Fingerprint(payload []byte) (string, error) {
	p := getParser(payload)
	defer putParser(p)
	if p.hash == nil {
		p.hash = sha256.New()
	}
	p.hash.Reset()
	p.sink = p.hash
	if _, err := p.canonical(); err != nil {
		return "", fmt.Errorf("fingerprint: %w", err)
	}
	var sum [sha256.Size]byte
	copy(sum[:], p.hash.Sum(p.sum[:0]))
	return prefixedHash("sha256:", sum), nil
}

// prefixedHash is prefix + hashText(sum), made in one allocation.
func prefixedHash(prefix string, sum [sha256.Size]byte) string {
	var text [16 + LogicalKeyLen]byte // the prefixes used are short
	n := copy(text[:], prefix)
	b32.Encode(text[n:], sum[:])
	return string(text[:n+LogicalKeyLen])
}

// hashText is the base32 text of a SHA-256 (LogicalKeyLen characters).
func hashText(sum [sha256.Size]byte) string {
	var text [LogicalKeyLen]byte
	b32.Encode(text[:], sum[:])
	return string(text[:])
}

// LogicalKey returns the logical dedupe key of an event, as an id
// component: the event id when the payload has one ("e-" + EscapeID: kept
// exactly, case and spaces included), else
// "h-" and the base32 SHA-256 of the canonical JSON of the identity fields
// (the fields that define the event, not derived or transient ones).
func LogicalKey(eventID string, identity map[string]any) (string, error) {
	if eventID != "" {
		n, err := EscapeID(eventID)
		if err != nil {
			return "", fmt.Errorf("event id: %w", err)
		}
		return "e-" + n, nil
	}
	if len(identity) == 0 {
		return "", fmt.Errorf("logical key: the payload has no event id and no identity fields: set an eventId or name the identity fields of the route")
	}
	var buf [256]byte // identities are small: no pooled buffer needed
	c, ok := appendCanonicalValue(buf[:0], identity, 0)
	if !ok {
		var err error
		if c, err = CanonicalValue(identity); err != nil {
			return "", fmt.Errorf("logical key: %w", err)
		}
	}
	return prefixedHash("h-", sha256.Sum256(c)), nil
}
