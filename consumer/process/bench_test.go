package process_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

// BenchmarkProcessDuplicate is the idempotent push path's own work for the
// message most deliveries are in the push benchmark: a system event seen
// before, processed and logged (no HTTP, no envelope decoding).
func BenchmarkProcessDuplicate(b *testing.B) {
	proc, _, _ := ct.NewProcessor(b, ct.Options{DiscardLog: true})
	var err error
	base := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	msgs := make([]envelope.Message, 1<<12)
	ctx := context.Background()
	for i := range msgs {
		payload := fmt.Sprintf(`{"service":"svc-%d","status":"healthy","version":"1.0","region":"eu","producedAt":%q}`,
			i%512, base.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano))
		if msgs[i], err = envelope.DecodePush(ct.PushBody(b, ct.Envelope{ID: fmt.Sprintf("m-%d", i), Payload: payload})); err != nil {
			b.Fatal(err)
		}
		if res := proc.Process(ctx, &msgs[i]); res.Err != nil {
			b.Fatal(res.Err)
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		res := proc.Process(ctx, &msgs[i%len(msgs)])
		if res.Outcome != logfields.OutcomeDuplicate {
			b.Fatalf("outcome %s (%v), want duplicate", res.Outcome, res.Err)
		}
		proc.Log(ctx, res, slog.Int(logfields.HTTPStatus, res.HTTPStatus), slog.String(logfields.AckAction, logfields.AckActionAck))
		i++
	}
}
