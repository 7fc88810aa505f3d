package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/store"
)

// ErrorType classifies an error for the caller (and is the log field
// error_type). What to do: duplicate and stale mean the effect already
// happened or is superseded (acknowledge); in_progress and transient mean try
// again later (negative acknowledgement); poison means the message can never
// succeed (dead-letter it); configuration means the deployment is wrong.
type ErrorType string

// The error types.
const (
	TypeDuplicate     ErrorType = logfields.ErrorTypeDuplicate
	TypeStale         ErrorType = logfields.ErrorTypeStale
	TypeInProgress    ErrorType = logfields.ErrorTypeInProgress
	TypePoison        ErrorType = logfields.ErrorTypePoison
	TypeTransient     ErrorType = logfields.ErrorTypeTransient
	TypeConfiguration ErrorType = logfields.ErrorTypeConfiguration
)

// Error is every error the engine returns. Code keeps the store's own code (a
// gRPC code name such as "UNAVAILABLE" or a SQLSTATE such as "40001") when the
// store produced the error.
type Error struct {
	Type ErrorType
	Code string
	// Op is what the engine was doing, e.g. "materialize", "claim lease".
	Op  string
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	if e.Code != "" {
		return fmt.Sprintf("%s: %s (%s): %v", e.Op, e.Type, e.Code, e.Err)
	}
	return fmt.Sprintf("%s: %s: %v", e.Op, e.Type, e.Err)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether delivering the message again may succeed:
// transient and in_progress errors, and configuration errors (once the
// deployment is fixed; the consumer keeps the message meanwhile). The
// consumer's classifier (package classify) agrees.
func (e *Error) Retryable() bool {
	return e.Type == TypeTransient || e.Type == TypeInProgress || e.Type == TypeConfiguration
}

// Classify returns the type and store code of any error: the engine's own
// *Error as it is; a store error by its kind; a cancelled or expired context
// as transient, coded CANCELLED or DEADLINE_EXCEEDED. Errors the engine cannot
// place are transient, coded UNKNOWN, which is the safe choice (nothing was
// recorded, redelivery will try again). A transient error always has a code.
func Classify(err error) (ErrorType, string) {
	if err == nil {
		return "", ""
	}
	var ee *Error
	if errors.As(err, &ee) {
		return ee.Type, ee.Code
	}
	if code, kind, ok := store.Code(err); ok {
		if kind == store.KindConfiguration {
			return TypeConfiguration, code
		}
		if code == "" {
			code = CodeUnknown // a store without codes (bbolt)
		}
		return TypeTransient, code
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return TypeTransient, CodeDeadlineExceeded
	case errors.Is(err, context.Canceled):
		return TypeTransient, CodeCancelled
	}
	return TypeTransient, CodeUnknown
}

// Codes of transient errors that carry no store code, spelt as the gRPC code
// names Google's APIs log (and the Firestore store keeps).
const (
	CodeDeadlineExceeded = "DEADLINE_EXCEEDED"
	CodeCancelled        = "CANCELLED"
	CodeUnknown          = "UNKNOWN"
)

// wrap turns err into an *Error for op, classifying it unless it already is one.
func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var ee *Error
	if errors.As(err, &ee) {
		return err
	}
	t, code := Classify(err)
	return &Error{Type: t, Code: code, Op: op, Err: err}
}

func newError(t ErrorType, op string, format string, args ...any) *Error {
	return &Error{Type: t, Op: op, Err: fmt.Errorf(format, args...)}
}
