package keys

import (
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// MaxIDBytes is Firestore's limit on a document id.
const MaxIDBytes = 1500

// maxComponentBytes bounds one normalised component, leaving room in an id for
// an environment, separators and a suffix.
const maxComponentBytes = 700

// Separator joins the components of a composite document id. Normalised
// components never contain it, so composite ids split unambiguously.
const Separator = "__"

// b32 is lowercase base32 without padding: document-id safe and compact.
var b32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Fold is the equivalence NormalizeID keeps: surrounding whitespace removed,
// every run of inner whitespace made one space, and letters lower-cased. Two
// strings are the same id exactly when their Fold is equal.
func Fold(s string) string {
	return strings.ToLower(strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " "))
}

// NormalizeID returns a component that is safe in a Firestore document id:
// Fold(s) escaped as EscapeID escapes it, so '/', '.', '_', spaces,
// non-ASCII letters and controls all get through without colliding. It is
// for aggregate ids, which name documents: NormalizeID is injective on
// Fold (NormalizeID(a) == NormalizeID(b) only if Fold(a) == Fold(b), up
// to a SHA-256 collision for very long ids). An id that folds to the empty
// string is an error.
func NormalizeID(s string) (string, error) {
	if isPlainID(s) {
		return s, nil // already its own fold and escape
	}
	f := Fold(s)
	if f == "" {
		return "", errors.New("id is empty or only whitespace: give the aggregate or event a non-empty id")
	}
	return escape(f), nil
}

// EscapeID returns s as a component that is safe in a Firestore document
// id, exactly: every byte outside [a-z0-9-] (capital letters and spaces
// included) is written as '_' and two hex digits, so distinct strings stay
// distinct ("Ab3xZ" and "aB3Xz", "a b" and "a  b"). It is for the ids
// producers and Pub/Sub issue (event ids, message ids, callback ids),
// which are case-sensitive. Components longer than 700 bytes keep a prefix
// and a hash of the whole. The empty string is an error.
func EscapeID(s string) (string, error) {
	if s == "" {
		return "", errors.New("id is empty: give the event a non-empty id")
	}
	if isPlainID(s) {
		return s, nil
	}
	return escape(s), nil
}

// escape writes every byte of s outside [a-z0-9-] as '_' and two hex
// digits; a result longer than 700 bytes keeps a prefix and a hash of s
// (marked "_h", which no escape produces).
func escape(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('_')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&0xf])
	}
	out := b.String()
	if len(out) > maxComponentBytes {
		sum := sha256.Sum256([]byte(s))
		cut := maxComponentBytes - 2 - LogicalKeyLen
		// Do not cut an escape ('_' and two hex digits) in half.
		if out[cut-1] == '_' {
			cut--
		} else if out[cut-2] == '_' {
			cut -= 2
		}
		out = out[:cut] + "_h" + hashText(sum)
	}
	return out
}

// isPlainID reports whether s is non-empty, short enough and only of
// [a-z0-9-]: NormalizeID returns such an id unchanged.
func isPlainID(s string) bool {
	if s == "" || len(s) > maxComponentBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-') {
			return false
		}
	}
	return true
}

// DocID returns the environment-qualified document id for an aggregate or
// event id: NormalizeID(env) + "__" + NormalizeID(id). It is always a valid
// Firestore document id (at most 1,500 bytes, no '/', not "." or "..", not of
// the reserved form __.*__).
func DocID(env, id string) (string, error) {
	e, err := NormalizeID(env)
	if err != nil {
		return "", fmt.Errorf("environment: %w", err)
	}
	n, err := NormalizeID(id)
	if err != nil {
		return "", err
	}
	return e + Separator + n, nil
}

// JoinID joins already normalised components with Separator.
func JoinID(components ...string) string { return strings.Join(components, Separator) }

// ValidFirestoreID reports why id is not a valid Firestore document id, or nil.
func ValidFirestoreID(id string) error {
	switch {
	case id == "":
		return errors.New("document id is empty")
	case len(id) > MaxIDBytes:
		return fmt.Errorf("document id is %d bytes; the limit is %d", len(id), MaxIDBytes)
	case strings.Contains(id, "/"):
		return errors.New("document id contains '/'")
	case id == "." || id == "..":
		return fmt.Errorf("document id %q is reserved", id)
	case len(id) >= 4 && strings.HasPrefix(id, "__") && strings.HasSuffix(id, "__"):
		return fmt.Errorf("document id %q matches the reserved form __.*__", id)
	}
	return nil
}
