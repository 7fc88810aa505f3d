package classify

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/logging"
	"github.com/eventpipe/eventpipe/consumer/route"
	"github.com/eventpipe/eventpipe/consumer/store"
)

type pgErr struct{ state string }

func (e pgErr) Error() string    { return "pg " + e.state }
func (e pgErr) SQLState() string { return e.state }

func TestOf(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		typ, code string
		retryable bool
	}{
		{"field error", &envelope.FieldError{Path: "message.data"}, logfields.ErrorTypePoison, "", false},
		{"marked poison", Poison(errors.New("x")), logfields.ErrorTypePoison, "", false},
		{"marked config", Configuration(errors.New("x")), logfields.ErrorTypeConfiguration, "", true},
		{"lease held", InProgress(errors.New("x")), logfields.ErrorTypeInProgress, "", true},
		{"downstream 503", Transient(errors.New("x"), "503"), logfields.ErrorTypeTransient, "503", true},
		{"store transient", &store.Error{Op: "commit", Code: "ABORTED", Kind: store.KindTransient, Err: errors.New("x")}, logfields.ErrorTypeTransient, "ABORTED", true},
		{"store config", fmt.Errorf("wrap: %w", &store.Error{Code: "PERMISSION_DENIED", Kind: store.KindConfiguration, Err: errors.New("x")}), logfields.ErrorTypeConfiguration, "PERMISSION_DENIED", true},
		{"grpc unavailable", status.Error(codes.Unavailable, "x"), logfields.ErrorTypeTransient, "UNAVAILABLE", true},
		{"grpc resource exhausted", status.Error(codes.ResourceExhausted, "x"), logfields.ErrorTypeTransient, "RESOURCE_EXHAUSTED", true},
		{"grpc deadline", status.Error(codes.DeadlineExceeded, "x"), logfields.ErrorTypeTransient, "DEADLINE_EXCEEDED", true},
		{"grpc aborted", status.Error(codes.Aborted, "x"), logfields.ErrorTypeTransient, "ABORTED", true},
		{"grpc permission", status.Error(codes.PermissionDenied, "x"), logfields.ErrorTypeConfiguration, "PERMISSION_DENIED", true},
		{"grpc unauthenticated", status.Error(codes.Unauthenticated, "x"), logfields.ErrorTypeConfiguration, "UNAUTHENTICATED", true},
		{"pg serialization", pgErr{"40001"}, logfields.ErrorTypeTransient, "40001", true},
		{"pg connection", pgErr{"08006"}, logfields.ErrorTypeTransient, "08006", true},
		{"pg auth", pgErr{"28P01"}, logfields.ErrorTypeConfiguration, "28P01", true},
		{"pg missing table", pgErr{"42P01"}, logfields.ErrorTypeConfiguration, "42P01", true},
		{"context deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), logfields.ErrorTypeTransient, "DEADLINE_EXCEEDED", true},
		{"unknown", errors.New("boom"), logfields.ErrorTypeTransient, "UNKNOWN", true},
		{"engine fingerprint mismatch", &engine.Error{Type: engine.TypePoison, Code: "FINGERPRINT_MISMATCH", Err: errors.New("x")}, logfields.ErrorTypePoison, "FINGERPRINT_MISMATCH", false},
		{"engine in progress", fmt.Errorf("w: %w", &engine.Error{Type: engine.TypeInProgress, Err: errors.New("x")}), logfields.ErrorTypeInProgress, "", true},
		{"engine unavailable", &engine.Error{Type: engine.TypeTransient, Code: "UNAVAILABLE", Err: errors.New("x")}, logfields.ErrorTypeTransient, "UNAVAILABLE", true},
		{"engine permission", &engine.Error{Type: engine.TypeConfiguration, Code: "PERMISSION_DENIED", Err: errors.New("x")}, logfields.ErrorTypeConfiguration, "PERMISSION_DENIED", true},
		{"plan error", &route.FieldError{In: "route r", Path: "f"}, logfields.ErrorTypePoison, "", false},
		{"unroutable", fmt.Errorf("x: %w", route.ErrUnroutable), logfields.ErrorTypePoison, "", false},
		{"marked keeps inner code", Poison(pgErr{"22P02"}), logfields.ErrorTypePoison, "22P02", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Of(tt.err)
			if c.Type != tt.typ || c.Code != tt.code || c.Retryable != tt.retryable {
				t.Fatalf("Of = %+v, want {%s %s %v}", c, tt.typ, tt.code, tt.retryable)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name       string
		outcome    string
		class      Class
		failed     bool
		dlq        bool
		status     int
		ack        bool
		record     bool
		outcomeOut string
		severity   string
	}{
		{"applied", logfields.OutcomeApplied, Class{}, false, false, 200, true, false, "applied", "INFO"},
		{"duplicate", logfields.OutcomeDuplicate, Class{}, false, true, 200, true, false, "duplicate", "INFO"},
		{"stale", logfields.OutcomeStale, Class{}, false, false, 200, true, false, "stale_ignored", "INFO"},
		{"poison with dlq", "", Class{Type: logfields.ErrorTypePoison}, true, true, 400, false, false, "poison", "ERROR"},
		{"poison without dlq", "", Class{Type: logfields.ErrorTypePoison}, true, false, 200, true, true, "poison", "ERROR"},
		{"transient", "", Class{Type: logfields.ErrorTypeTransient}, true, true, 500, false, false, "retry", "ERROR"},
		{"in progress", "", Class{Type: logfields.ErrorTypeInProgress}, true, false, 500, false, false, "retry", "ERROR"},
		{"configuration", "", Class{Type: logfields.ErrorTypeConfiguration}, true, false, 500, false, false, "retry", "CRITICAL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.outcome, tt.class, tt.failed, tt.dlq)
			if d.HTTPStatus != tt.status || d.Ack != tt.ack || d.RecordPoison != tt.record || d.Outcome != tt.outcomeOut ||
				logging.SeverityName(d.Level) != tt.severity {
				t.Fatalf("Decide = %+v (%s)", d, logging.SeverityName(d.Level))
			}
			if acked := d.HTTPStatus >= 200 && d.HTTPStatus < 300; acked != d.Ack {
				t.Fatalf("push status %d and pull ack %v disagree", d.HTTPStatus, d.Ack)
			}
		})
	}
}

func TestDLQMode(t *testing.T) {
	tests := []struct {
		in               string
		withAttempt, non bool
		ok               bool
	}{
		{"", true, false, true}, {"auto", true, false, true}, {"on", true, true, true}, {"off", false, false, true}, {"maybe", false, false, false},
	}
	for _, tt := range tests {
		m, ok := ParseDLQMode(tt.in)
		if ok != tt.ok {
			t.Fatalf("%q: ok=%v", tt.in, ok)
		}
		if ok && (m.HasDLQ(true) != tt.withAttempt || m.HasDLQ(false) != tt.non) {
			t.Fatalf("%q: %v %v", tt.in, m.HasDLQ(true), m.HasDLQ(false))
		}
	}
}

// TestGRPCNameEveryCode pins the spelling of every gRPC code (and one out of
// range) to the names Google's APIs use (google.rpc.Code).
func TestGRPCNameEveryCode(t *testing.T) {
	want := []string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
		"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
		"OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED", "CODE(17)"}
	for c, name := range want {
		if got := grpcName(codes.Code(c)); got != name {
			t.Errorf("grpcName(%d) = %q, want %q", c, got, name)
		}
	}
}
