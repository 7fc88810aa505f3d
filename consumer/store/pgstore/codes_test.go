package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	consumerclassify "github.com/eventpipe/eventpipe/consumer/classify"
	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/store"
)

// sqlstateClasses are the classes (first two characters) of PostgreSQL 15's
// SQLSTATE codes (Appendix A of its manual).
var sqlstateClasses = []string{"00", "01", "02", "03", "08", "09", "0A", "0B", "0F", "0L", "0P", "0Z",
	"20", "21", "22", "23", "24", "25", "26", "27", "28", "2B", "2D", "2F", "34", "38", "39", "3B", "3D", "3F",
	"40", "42", "44", "53", "54", "55", "57", "58", "72", "F0", "HV", "P0", "XX"}

// storeErrors is every kind of error the driver hands pgstore, built by code:
// a server error of each SQLSTATE class (its generic code) plus the codes the
// store meets in practice, a failed connection attempt made by the real driver,
// the client-side failures of a broken connection, and cancelled or expired
// contexts; each bare and wrapped. want is the code the error must be logged
// with ("" when any non-empty code will do).
func storeErrors(t *testing.T) []struct {
	name string
	err  error
	want string
} {
	t.Helper()
	type row = struct {
		name string
		err  error
		want string
	}
	var rows []row
	codes := []string{"40001", "40P01", "55P03", "25P03", "57P01", "57P02", "57P03", "53300", "08006", "08003", "3D000", "42P01", "28P01", "23505"}
	for _, class := range sqlstateClasses {
		codes = append(codes, class+"000")
	}
	for _, code := range codes {
		rows = append(rows, row{"SQLSTATE " + code, &pgconn.PgError{Severity: "FATAL", Code: code, Message: "m"}, code})
	}
	rows = append(rows,
		row{"connect refused", refusedConnect(t), codeUnableToConnect},
		row{"unexpected EOF", io.ErrUnexpectedEOF, codeConnectionFailure},
		row{"EOF", io.EOF, codeConnectionFailure},
		row{"reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, codeConnectionFailure},
		row{"broken pipe", &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}, codeConnectionFailure},
		row{"conn closed", errors.New("conn closed"), codeConnectionFailure},
		row{"deadline", context.DeadlineExceeded, engine.CodeDeadlineExceeded},
		row{"cancelled", context.Canceled, engine.CodeCancelled},
	)
	for _, r := range rows[:len(rows):len(rows)] {
		rows = append(rows, row{r.name + " (wrapped)", fmt.Errorf("read row: %w", r.err), r.want})
	}
	return rows
}

// refusedConnect is the error the real driver returns when nothing listens
// on the server's port (the database is down).
func refusedConnect(t *testing.T) error {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgconn.Connect(ctx, fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port))
	if err == nil {
		_ = c.Close(ctx)
		t.Fatalf("connected to port %d, which nothing should listen on", port)
	}
	return err
}

// TestEveryTransientErrorHasACode is the invariant behind the outage log
// line: every error the store returns, once the engine and the consumer
// classify it, is logged with its SQLSTATE (or its gRPC name for a context),
// and no transient error has an empty error_code. It broke for a refused
// connection, which the registry outage of the acceptance tests met when
// the pool had no live connection left (the log line had error_code "").
func TestEveryTransientErrorHasACode(t *testing.T) {
	for _, tc := range storeErrors(t) {
		t.Run(tc.name, func(t *testing.T) {
			err := classify("commit", tc.err)
			if !errors.Is(err, tc.err) {
				t.Fatalf("classify lost the driver's error: %v", err)
			}
			var se *store.Error
			if errors.As(err, &se) {
				if se.Code == "" {
					t.Errorf("store error %v has no code", err)
				}
				if se.Kind != store.KindTransient && se.Kind != store.KindConfiguration {
					t.Errorf("store error %v has kind %v", err, se.Kind)
				}
			}
			typ, code := engine.Classify(err)
			if typ == engine.TypeTransient && code == "" {
				t.Errorf("engine.Classify(%v) = transient without a code", err)
			}
			if code != tc.want {
				t.Errorf("engine.Classify(%v) code %q, want %q", err, code, tc.want)
			}
			// The consumer's log line, from the store's error and from the
			// engine's error wrapping it.
			for _, e := range []error{err, &engine.Error{Type: typ, Code: code, Op: "materialize", Err: err}} {
				c := consumerclassify.Of(e)
				if c.Code != tc.want {
					t.Errorf("classify.Of(%v) = %+v, want code %q", e, c, tc.want)
				}
				if c.Type == logfields.ErrorTypeTransient && (c.Code == "" || !c.Retryable) {
					t.Errorf("classify.Of(%v) = %+v: a transient error must be retryable and have a code", e, c)
				}
			}
		})
	}
}
