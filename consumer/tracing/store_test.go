package tracing_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	"github.com/eventpipe/eventpipe/consumer/tracing"
)

// latestStore and conditionalStore offer a store's optional capabilities
// (as pgstore offers both), recording that they were called.
type latestStore struct {
	store.Store
	called *[]string
}

func (s latestStore) WriteLatest(context.Context, store.LatestWrite) (store.LatestResult, error) {
	*s.called = append(*s.called, "WriteLatest")
	return store.LatestResult{}, nil
}

type conditionalStore struct {
	store.Store
	called *[]string
}

func (s conditionalStore) WriteIf(context.Context, store.ConditionalWrite) (store.ConditionalResult, error) {
	*s.called = append(*s.called, "WriteIf")
	return store.ConditionalResult{}, nil
}

type bothStore struct {
	latestStore
	conditionalStore
}

func (s bothStore) RunTx(ctx context.Context, fn func(context.Context, store.Tx) error) error {
	return s.latestStore.RunTx(ctx, fn)
}

func (s bothStore) Close() error { return s.latestStore.Close() }

// TestTracedStoreKeepsCapabilities: a traced store offers exactly the
// optional capabilities of the store it wraps (the engine's one round
// trip paths), each call passed through as a CLIENT span.
func TestTracedStoreKeepsCapabilities(t *testing.T) {
	for _, c := range []struct {
		name              string
		st                func(called *[]string) store.Store
		latest, condition bool
	}{
		{"plain", func(*[]string) store.Store { return memstore.New() }, false, false},
		{"latest", func(c *[]string) store.Store { return latestStore{memstore.New(), c} }, true, false},
		{"conditional", func(c *[]string) store.Store { return conditionalStore{memstore.New(), c} }, false, true},
		{"both", func(c *[]string) store.Store {
			m := memstore.New()
			return bothStore{latestStore{m, c}, conditionalStore{m, c}}
		}, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			spans := tracetest.NewSpanRecorder()
			tracer := tracing.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
			var called []string
			st := tracer.Store(c.st(&called), "postgres")
			lw, isLW := st.(store.LatestWriter)
			cw, isCW := st.(store.ConditionalWriter)
			if isLW != c.latest || isCW != c.condition {
				t.Fatalf("traced store: LatestWriter %v, ConditionalWriter %v; want %v, %v", isLW, isCW, c.latest, c.condition)
			}
			var want []string
			if isLW {
				_, _ = lw.WriteLatest(context.Background(), store.LatestWrite{})
				want = append(want, "WriteLatest")
			}
			if isCW {
				_, _ = cw.WriteIf(context.Background(), store.ConditionalWrite{})
				want = append(want, "WriteIf")
			}
			if err := st.RunTx(context.Background(), func(context.Context, store.Tx) error { return nil }); err != nil {
				t.Fatal(err)
			}
			if len(called) != len(want) || len(spans.Ended()) != len(want)+1 {
				t.Fatalf("called %v with %d spans, want %v and %d spans", called, len(spans.Ended()), want, len(want)+1)
			}
		})
	}
}
