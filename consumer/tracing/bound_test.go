package tracing_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/logging"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/tracing"
)

// failingStore is a store whose every transaction fails with err.
type failingStore struct {
	store.Store
	err error
}

func (s failingStore) RunTx(context.Context, func(context.Context, store.Tx) error) error {
	return s.err
}

// checkBounded fails the test unless every string a recorded span holds
// (name, status, attributes, events' names and attributes) is at most
// logging.MaxFieldLen bytes of valid UTF-8, and the status text is the
// error's text bounded as a log field is.
func checkBounded(t *testing.T, spans []sdktrace.ReadOnlySpan, errText string) {
	t.Helper()
	check := func(what, s string) {
		if len(s) > logging.MaxFieldLen || !utf8.ValidString(s) {
			t.Fatalf("%s is %d bytes (valid UTF-8: %v), want at most %d", what, len(s), utf8.ValidString(s), logging.MaxFieldLen)
		}
	}
	attrs := func(what string, kvs []attribute.KeyValue) {
		for _, kv := range kvs {
			check(what+" "+string(kv.Key), kv.Value.Emit())
		}
	}
	for _, s := range spans {
		check("span name", s.Name())
		check("status", s.Status().Description)
		if got, want := s.Status().Description, logging.Bound(errText); got != want {
			t.Fatalf("status of %q = %.40q…, want the error bounded as in a log line", s.Name(), got)
		}
		attrs("attribute", s.Attributes())
		if len(s.Events()) == 0 {
			t.Fatalf("span %q records no exception event", s.Name())
		}
		for _, e := range s.Events() {
			check("event name", e.Name)
			attrs("event attribute", e.Attributes)
		}
	}
}

// boundedSpans runs one failed delivery (Finish) and one failed store
// transaction whose error text is errText, with every message field set to
// field, and checks what the spans keep.
func boundedSpans(t *testing.T, errText, field string) {
	rec := tracetest.NewSpanRecorder()
	tr := tracing.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	msg := &envelope.Message{ID: field, Subscription: "projects/p/subscriptions/" + field, OrderingKey: field}
	ctx, span := tr.StartMessage(context.Background(), tracing.IngressPush, msg, nil)
	err := errors.New(errText)
	st := tr.Store(failingStore{err: err}, "postgres")
	if got := st.RunTx(ctx, nil); got != err {
		t.Fatalf("RunTx returned %v, want the store's error as it is", got)
	}
	tracing.Finish(span, logfields.OutcomePoison, err, tracing.RouteKey.String(field))
	if n := len(rec.Ended()); n != 2 {
		t.Fatalf("%d spans ended, want the delivery's and the transaction's", n)
	}
	checkBounded(t, rec.Ended(), errText)
}

// TestSpansBoundErrorTexts holds the invariant that a span keeps no string
// longer than a log field, whatever the error and message carry, over
// lengths around the bound and rune widths that straddle it; the example
// that broke it (a "no route matches" error naming megabytes of keys kept
// 652 MB resident for 30 poison messages) is the largest.
func TestSpansBoundErrorTexts(t *testing.T) {
	for _, r := range []string{"k", "é", "€", "𝄞"} {
		for _, n := range []int{0, 1, logging.MaxFieldLen - 1, logging.MaxFieldLen, logging.MaxFieldLen + 1, 3 * logging.MaxFieldLen} {
			text := strings.Repeat(r, n/len(r)+1)
			boundedSpans(t, "no route matches: "+text, text)
		}
	}
	boundedSpans(t, "no route matches keys "+strings.Repeat(`"key":"value",`, 9<<20/14), strings.Repeat("i", 64<<10))
}

// FuzzSpansBoundErrorTexts holds the same invariant for arbitrary texts.
func FuzzSpansBoundErrorTexts(f *testing.F) {
	f.Add("no route matches", "1")
	f.Add(strings.Repeat("é", logging.MaxFieldLen), strings.Repeat("𝄞", logging.MaxFieldLen))
	f.Fuzz(func(t *testing.T, errText, field string) {
		if !utf8.ValidString(errText) || !utf8.ValidString(field) {
			t.Skip("error texts and message fields are UTF-8 (the envelope decoder refuses others)")
		}
		boundedSpans(t, errText, field)
	})
}
