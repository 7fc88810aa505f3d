// Package classify sorts consumer errors into classes (poison,
// transient, configuration) and turns an outcome into the response Pub/Sub
// sees: an HTTP status for push, ack or nack for pull.
package classify

import (
	"cmp"
	"context"
	"errors"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/route"
	"github.com/eventpipe/eventpipe/consumer/store"
)

// Class is what the consumer knows about an error: its error_type, its
// error_code (gRPC code name or SQLSTATE) and whether retrying can help.
type Class struct {
	Type      string // a logfields.ErrorType* value
	Code      string // gRPC code name, SQLSTATE or HTTP status; may be empty
	Retryable bool
}

// markedError carries an explicit class chosen by the code that raised it.
type markedError struct {
	typ  string
	code string
	err  error
}

func (e *markedError) Error() string { return e.err.Error() }
func (e *markedError) Unwrap() error { return e.err }

// Poison marks err as a permanent problem with the message itself (bad
// payload, unroutable, missing field, fingerprint mismatch).
func Poison(err error) error { return &markedError{typ: logfields.ErrorTypePoison, err: err} }

// Configuration marks err as a deployment problem that retrying will not fix.
func Configuration(err error) error {
	return &markedError{typ: logfields.ErrorTypeConfiguration, err: err}
}

// Transient marks err as a temporary failure worth retrying, with an optional
// code (e.g. the downstream HTTP status).
func Transient(err error, code string) error {
	return &markedError{typ: logfields.ErrorTypeTransient, code: code, err: err}
}

// InProgress marks err as "another worker holds the lease": retry later.
func InProgress(err error) error {
	return &markedError{typ: logfields.ErrorTypeInProgress, err: err}
}

// sqlStater is implemented by *pgconn.PgError; matching the method keeps
// this package free of a driver import.
type sqlStater interface{ SQLState() string }

// Of classifies err. Unknown errors are transient: redelivery is the safe
// default for a failure nobody anticipated (the idempotency engine makes the
// retry harmless), and the ERROR log makes it visible. A transient class
// always has a code: UNKNOWN when nothing in err's chain carries one.
func Of(err error) Class {
	c := of(err)
	if c.Type == logfields.ErrorTypeTransient && c.Code == "" {
		c.Code = engine.CodeUnknown
	}
	return c
}

// of classifies err, leaving Code empty where err carries none.
func of(err error) Class {
	var me *markedError
	if errors.As(err, &me) {
		c := Class{Type: me.typ, Code: cmp.Or(me.code, codeOf(err))}
		c.Retryable = me.typ == logfields.ErrorTypeTransient || me.typ == logfields.ErrorTypeInProgress ||
			me.typ == logfields.ErrorTypeConfiguration
		return c
	}
	var ee *engine.Error
	if errors.As(err, &ee) {
		t := string(ee.Type)
		return Class{Type: t, Code: ee.Code, Retryable: ee.Retryable()}
	}
	var fe *envelope.FieldError // route.FieldError too: one type
	if errors.As(err, &fe) || errors.Is(err, route.ErrUnroutable) {
		return Class{Type: logfields.ErrorTypePoison}
	}
	if code, kind, ok := store.Code(err); ok {
		if kind == store.KindConfiguration {
			return Class{Type: logfields.ErrorTypeConfiguration, Code: code, Retryable: true}
		}
		return Class{Type: logfields.ErrorTypeTransient, Code: code, Retryable: true}
	}
	var ss sqlStater
	if errors.As(err, &ss) {
		return sqlStateClass(ss.SQLState())
	}
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		return grpcClass(s.Code())
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return Class{Type: logfields.ErrorTypeTransient, Code: grpcName(codes.DeadlineExceeded), Retryable: true}
	}
	if errors.Is(err, context.Canceled) {
		return Class{Type: logfields.ErrorTypeTransient, Code: grpcName(codes.Canceled), Retryable: true}
	}
	return Class{Type: logfields.ErrorTypeTransient, Retryable: true}
}

// codeOf finds a store, gRPC or SQL code anywhere in err's chain.
func codeOf(err error) string {
	if code, _, ok := store.Code(err); ok {
		return code
	}
	var ss sqlStater
	if errors.As(err, &ss) {
		return ss.SQLState()
	}
	if s, ok := status.FromError(err); ok && s.Code() != codes.Unknown {
		return grpcName(s.Code())
	}
	return ""
}

// grpcClass: PermissionDenied/Unauthenticated and friends
// are configuration; Unavailable, DeadlineExceeded, Aborted and
// ResourceExhausted are transient; InvalidArgument-like codes are poison.
func grpcClass(c codes.Code) Class {
	name := grpcName(c)
	switch c {
	case codes.PermissionDenied, codes.Unauthenticated, codes.NotFound, codes.Unimplemented, codes.FailedPrecondition:
		return Class{Type: logfields.ErrorTypeConfiguration, Code: name, Retryable: true}
	case codes.InvalidArgument, codes.OutOfRange:
		return Class{Type: logfields.ErrorTypePoison, Code: name}
	default:
		return Class{Type: logfields.ErrorTypeTransient, Code: name, Retryable: true}
	}
}

// grpcName renders a code the way Google's APIs spell it (UNAVAILABLE),
// from google.rpc.Code's own names.
func grpcName(c codes.Code) string {
	if name, ok := code.Code_name[int32(c)]; ok && int32(c) >= 0 {
		return name
	}
	return strings.ToUpper(c.String())
}

// sqlStateClass maps PostgreSQL SQLSTATE classes.
func sqlStateClass(state string) Class {
	transient := Class{Type: logfields.ErrorTypeTransient, Code: state, Retryable: true}
	config := Class{Type: logfields.ErrorTypeConfiguration, Code: state, Retryable: true}
	switch {
	case state == "40001" || state == "40P01": // serialization failure, deadlock
		return transient
	case strings.HasPrefix(state, "08"), strings.HasPrefix(state, "53"), strings.HasPrefix(state, "57"):
		return transient // connection, insufficient resources, operator intervention
	case strings.HasPrefix(state, "28"), state == "42501", strings.HasPrefix(state, "3D"), strings.HasPrefix(state, "42"):
		return config // auth, privilege, missing database, missing table or column
	case strings.HasPrefix(state, "22"):
		return Class{Type: logfields.ErrorTypePoison, Code: state} // data exception
	default:
		return transient
	}
}
