package push

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/eventpipe/eventpipe/consumer/limits"
	"github.com/eventpipe/eventpipe/consumer/logging"
	"github.com/eventpipe/eventpipe/consumer/process"
	"github.com/eventpipe/eventpipe/consumer/route"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	"github.com/eventpipe/eventpipe/consumer/tracing"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

// bareHandler is the baseline: a push endpoint as a team writes one with
// the standard library alone. It reads the body, decodes Pub/Sub's push
// envelope with encoding/json (message.data's base64 into bytes, as
// https://cloud.google.com/pubsub/docs/push#receive_push shows the
// request), refuses one without a message id or data, and acks. It does
// not use the consumer's own decoder: a yardstick that shared it would
// grow faster with every cut to the decoder, and the share would fall
// for the consumer getting faster.
func bareHandler(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limits.MaxPushBodyBytes(limits.MaxMessageBytes)))
	if err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	var push struct {
		Message struct {
			Data        []byte            `json:"data"`
			Attributes  map[string]string `json:"attributes"`
			MessageID   string            `json:"messageId"`
			PublishTime time.Time         `json:"publishTime"`
		} `json:"message"`
		Subscription string `json:"subscription"`
	}
	if err := json.Unmarshal(body, &push); err != nil || push.Message.MessageID == "" || push.Message.Data == nil {
		http.Error(w, "not a Pub/Sub push", http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// bodies pre-encodes n distinct system events (services spread so that
// parallel workers rarely contend on one document, as in production).
func bodies(b *testing.B, n int) [][]byte {
	out := make([][]byte, n)
	base := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	for i := range out {
		payload := fmt.Sprintf(`{"service":"svc-%d","status":"healthy","version":"1.0","region":"eu","producedAt":%q}`,
			i%512, base.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano))
		out[i] = ct.PushBody(b, ct.Envelope{ID: fmt.Sprintf("m-%d", i), Payload: payload})
	}
	return out
}

// drive sends distinct pre-encoded bodies from parallel workers; send
// returns the response status. Besides ns/op (wall time over the workers)
// it reports cpu-ns/op: the CPU time the whole process spent per message
// (user and system, every goroutine: the collector's, and over HTTP the
// client's and server's), which the load of other processes on a shared
// machine moves far less than wall time.
func drive(b *testing.B, msgs [][]byte, send func(body []byte) (int, error)) {
	var next atomic.Int64
	b.ReportAllocs()
	cpu := processCPU(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			code, err := send(msgs[int(next.Add(1)-1)%len(msgs)])
			if err != nil || code >= 300 {
				b.Errorf("status %d: %v", code, err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/op")
}

// processCPU is the process's user and system CPU time so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// direct calls h.ServeHTTP: the handler's own cost, no transport.
func direct(h http.Handler) func([]byte) (int, error) {
	return func(body []byte) (int, error) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, Path, bytes.NewReader(body)))
		return w.Code, nil
	}
}

// overHTTP serves h on loopback and posts with keep-alive connections.
func overHTTP(b *testing.B, h http.Handler) func([]byte) (int, error) {
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	b.Cleanup(client.CloseIdleConnections)
	url := srv.URL + Path
	return func(body []byte) (int, error) {
		resp, err := client.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
}

// idempotentHandler is the consumer's push handler on the memory store;
// tracer nil is tracing off.
func idempotentHandler(b *testing.B, tracer *tracing.Tracer) http.Handler {
	table, err := route.LoadFile("")
	if err != nil {
		b.Fatal(err)
	}
	// The real JSON logger, writing to io.Discard: its cost is part of the path.
	var logOpts []logging.Option
	if tracer.Enabled() {
		logOpts = append(logOpts, logging.WithTrace("bench"))
	}
	proc, err := process.New(process.Config{Store: tracer.Store(memstore.New(), "mem"), Env: "bench", Routes: table,
		Logger: logging.New(io.Discard, slog.LevelInfo, logOpts...), Tracer: tracer})
	if err != nil {
		b.Fatal(err)
	}
	return New(proc, nil, nil)
}

// BenchmarkPushPath runs the bare baseline and the full idempotent push
// path on the memory store in the same process, same messages, same
// parallelism, two ways: "http" sends real requests to a loopback net/http
// server (what Pub/Sub's pushes cost), "handler" calls ServeHTTP directly
// (the handler's own CPU, no transport). The messages cycle through 16,384
// distinct ones, so the idempotent handler applies the first 16,384 of a
// run and answers the rest as duplicates: with a fixed count
// (-benchtime Nx) the mix is the same whatever the handler's speed.
// scripts/consumer-bench.sh prints idempotent throughput as a share of the
// bare handler's and defines it (goal >= 50% over http).
func BenchmarkPushPath(b *testing.B) {
	msgs := bodies(b, 1<<14)
	b.Run("http/bare", func(b *testing.B) { drive(b, msgs, overHTTP(b, http.HandlerFunc(bareHandler))) })
	b.Run("http/idempotent", func(b *testing.B) { drive(b, msgs, overHTTP(b, idempotentHandler(b, nil))) })
	b.Run("handler/bare", func(b *testing.B) { drive(b, msgs, direct(http.HandlerFunc(bareHandler))) })
	b.Run("handler/idempotent", func(b *testing.B) { drive(b, msgs, direct(idempotentHandler(b, nil))) })
	// Tracing on: every push a span with a store transaction child, batched
	// to an exporter that drops them (what the SDK costs, not the network).
	b.Run("handler/idempotent-traced", func(b *testing.B) {
		provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		b.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
		drive(b, msgs, direct(idempotentHandler(b, tracing.New(provider))))
	})
}
