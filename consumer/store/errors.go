package store

import (
	"errors"
	"fmt"
)

// Kind says what a caller can do about a store error.
type Kind int

const (
	// KindTransient errors may succeed on retry: unavailable, deadline,
	// aborted or serialisation conflicts, connection loss.
	KindTransient Kind = iota + 1
	// KindConfiguration errors will not go away by retrying: permission
	// denied, missing database, invalid argument, bad credentials.
	KindConfiguration
)

// String returns "transient" or "configuration".
func (k Kind) String() string {
	switch k {
	case KindTransient:
		return "transient"
	case KindConfiguration:
		return "configuration"
	default:
		return fmt.Sprintf("kind(%d)", int(k))
	}
}

// Error is a driver error carrying the store's own code (a gRPC code name such
// as "UNAVAILABLE", or a PostgreSQL SQLSTATE such as "40001") so that logs and
// callers keep it.
type Error struct {
	// Op is the operation that failed, e.g. "get eventpipe_dedupe/x" or "commit".
	Op string
	// Code is the store's own error code; empty when the store has none.
	Code string
	// Kind classifies the error.
	Kind Kind
	// Err is the underlying error.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("store %s: %s: %v", e.Op, e.Kind, e.Err)
	}
	return fmt.Sprintf("store %s: %s (%s): %v", e.Op, e.Kind, e.Code, e.Err)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Code returns the store's own code and kind of the first *Error in err's
// chain; ok is false when there is none.
func Code(err error) (code string, kind Kind, ok bool) {
	var se *Error
	if errors.As(err, &se) {
		return se.Code, se.Kind, true
	}
	return "", 0, false
}
