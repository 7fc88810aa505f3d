package tracing

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventpipe/eventpipe/consumer/store"
)

// TxAttemptsKey counts how many times a transaction's function ran: more
// than one means the store retried it after a conflict (Firestore's
// ABORTED, a PostgreSQL serialisation failure).
const TxAttemptsKey = attribute.Key("eventpipe.store.tx_attempts")

// tracedStore is a store whose transactions are spans.
type tracedStore struct {
	store.Store
	tracer trace.Tracer
	system attribute.KeyValue
}

// Store returns st with every transaction a CLIENT span "transaction
// SYSTEM", a child of the delivery that runs it. scheme is the store URL's
// (firestore, postgres, bbolt, mem); db.system.name is the semantic
// conventions' name where they have one (postgresql). Transactions are
// passed through as they are, so drivers' optional Tx methods still apply.
// With t nil it returns st as it is.
func (t *Tracer) Store(st store.Store, scheme string) store.Store {
	if t == nil {
		return st
	}
	system := semconv.DBSystemNameKey.String(scheme)
	if scheme == "postgres" || scheme == "postgresql" {
		system = semconv.DBSystemNamePostgreSQL
	}
	ts := &tracedStore{Store: st, tracer: t.tracer, system: system}
	var lw store.LatestWriter
	if inner, ok := st.(store.LatestWriter); ok {
		lw = tracedLatest{ts: ts, lw: inner}
	}
	var cw store.ConditionalWriter
	if inner, ok := st.(store.ConditionalWriter); ok {
		cw = tracedConditional{ts: ts, cw: inner}
	}
	return store.WithWriters(ts, lw, cw)
}

// tracedConditional adds a traced store.ConditionalWriter to a traced
// store: each write a CLIENT span "conditional write SYSTEM".
type tracedConditional struct {
	ts *tracedStore
	cw store.ConditionalWriter
}

// WriteIf implements store.ConditionalWriter.
func (c tracedConditional) WriteIf(ctx context.Context, w store.ConditionalWrite) (store.ConditionalResult, error) {
	ctx, span := c.ts.tracer.Start(ctx, "conditional write "+c.ts.system.Value.AsString(), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(c.ts.system, semconv.DBOperationName("conditional write")))
	res, err := c.cw.WriteIf(ctx, w)
	if err != nil {
		fail(span, err)
	}
	span.End()
	return res, err
}

// tracedLatest is a traced store.LatestWriter: each write a CLIENT span
// "write latest SYSTEM".
type tracedLatest struct {
	ts *tracedStore
	lw store.LatestWriter
}

// WriteLatest implements store.LatestWriter.
func (l tracedLatest) WriteLatest(ctx context.Context, w store.LatestWrite) (store.LatestResult, error) {
	ctx, span := l.ts.tracer.Start(ctx, "write latest "+l.ts.system.Value.AsString(), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(l.ts.system, semconv.DBOperationName("write latest")))
	res, err := l.lw.WriteLatest(ctx, w)
	if err != nil {
		fail(span, err)
	}
	span.End()
	return res, err
}

// RunTx implements store.Store.
func (s *tracedStore) RunTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	ctx, span := s.tracer.Start(ctx, "transaction "+s.system.Value.AsString(), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(s.system, semconv.DBOperationName("transaction")))
	attempts := 0
	err := s.Store.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
		attempts++
		return fn(ctx, tx)
	})
	span.SetAttributes(TxAttemptsKey.Int(attempts))
	switch {
	case errors.Is(err, store.ErrAlreadyExists):
		// A create that found its document: how the engine tells a
		// duplicate, not a failure.
		span.SetAttributes(semconv.ErrorTypeKey.String("already_exists"))
	case err != nil:
		fail(span, err)
	}
	span.End()
	return err
}
