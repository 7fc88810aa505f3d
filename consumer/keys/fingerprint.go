package keys

import (
	"crypto/sha256"
	"fmt"
	"strings"
)

// LogicalKeyLen is the length of a hashed logical key: 52 base32 characters,
// which carry the whole 256-bit SHA-256.
const LogicalKeyLen = 52

// fingerprintPrefix starts every fingerprint; v1Mark follows the RFC 8785
// hash with the v1 hash in a fingerprint of a payload whose two forms differ.
const (
	fingerprintPrefix = "sha256:"
	v1Mark            = "+v1:"
)

// fingerprintBufferBytes is the canonical form Fingerprint holds on its
// stack; a longer one is allocated.
const fingerprintBufferBytes = 1 << 10

// Fingerprint returns "sha256:" and the base32 SHA-256 of the RFC 8785
// canonical JSON of payload (CanonicalJSON): any language can recompute it.
// The same event id with a different fingerprint is a contract violation (a
// reused event id).
//
// Fingerprints are versioned so that records written before the upgrade to
// RFC 8785 are still recognised. Most payloads have the same canonical
// bytes in both forms (integers below 2^53, no fractions or exponents, keys
// within U+FFFF), so their fingerprint is the one eventpipe always wrote.
// For a payload whose v1 form differs, the fingerprint is the RFC 8785 one
// followed by "+v1:" and the base32 SHA-256 of the v1 form:
// SameFingerprint matches it with either, and an id derived from the
// fingerprint's last LogicalKeyLen characters (a record of an event without
// an event id) stays the one written before the upgrade.
func Fingerprint(payload []byte) (string, error) {
	sum, scan, err := canonicalSum(payload, false)
	if err != nil {
		return "", fmt.Errorf("fingerprint: %w", err)
	}
	fp := prefixedHash(fingerprintPrefix, sum)
	if !scan.mayDiffer {
		return fp, nil
	}
	v1sum, _, err := canonicalSum(payload, true)
	if err != nil {
		return fp, nil // v1 fingerprinted no such payload
	}
	if v1sum != sum {
		return fp + v1Mark + hashText(v1sum), nil
	}
	return fp, nil
}

// canonicalSum is the SHA-256 of the RFC 8785 form of payload (the v1
// form with v1) and what scanning the form found. A payload of up to
// streamChunkBytes (most) has its form made in a buffer and hashed; a larger
// one has it hashed as it is written, not held: a 10 MB payload takes a
// scratch buffer, not the 12.5 MB of its form.
func canonicalSum(payload []byte, v1 bool) (sum [sha256.Size]byte, scan canonicalScan, err error) {
	if len(payload) <= streamChunkBytes {
		var buf [fingerprintBufferBytes]byte // the form is hashed, not kept
		var form []byte
		if v1 {
			form, err = canonicalV1(payload)
		} else {
			form, scan, err = canonical(buf[:0], payload)
		}
		return sha256.Sum256(form), scan, err
	}
	h := sha256.New()
	if v1 {
		err = writeCanonicalV1(h, payload, streamChunkBytes)
	} else {
		scan, err = writeCanonical(h, payload, streamChunkBytes)
	}
	h.Sum(sum[:0])
	return sum, scan, err
}

// SameFingerprint reports whether two fingerprints (one stored, one of an
// incoming payload) stand for the same payload: equal, or one is the v1
// fingerprint written before the upgrade and the other names it.
func SameFingerprint(a, b string) bool {
	return a == b || legacyFingerprint(a) == b || a == legacyFingerprint(b)
}

// legacyFingerprint is the v1 fingerprint a fingerprint names, or "".
func legacyFingerprint(fp string) string {
	if _, v1, ok := strings.Cut(fp, v1Mark); ok {
		return fingerprintPrefix + v1
	}
	return ""
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
// "h-" and the base32 SHA-256 of the v1 canonical JSON of the identity
// fields (the fields that define the event, not derived or transient ones).
// Identity keys keep the v1 form: they are document ids (see canonicalV1).
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
		if c, err = identityJSON(identity); err != nil {
			return "", fmt.Errorf("logical key: %w", err)
		}
	}
	return prefixedHash("h-", sha256.Sum256(c)), nil
}
