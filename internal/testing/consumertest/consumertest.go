// Package consumertest holds the helpers the consumer's ingress tests share:
// a processor on the memory store with a captured log, push bodies, log-line
// parsing and a store that fails on demand.
package consumertest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/classify"
	"github.com/eventpipe/eventpipe/consumer/logging"
	"github.com/eventpipe/eventpipe/consumer/process"
	"github.com/eventpipe/eventpipe/consumer/route"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	"github.com/eventpipe/eventpipe/internal/testing/docblock"
)

// Env is the environment tests run the processor in.
const Env = "test"

// HandlerRoutes are routes for tests of every door: a Pub/Sub route (system
// events, one document per service, fields "service" and "status") and a
// callback route, "jobs", whose callbacks go to the handler.
const HandlerRoutes = `{"routes":[
 {"name":"system_events","topic":"system-events","match":{"fields":["service","status"]},"mode":"latest-state",
  "target":{"collection":"ops_services","id":"serviceId"},
  "fields":{"serviceId":{"from":["service"],"type":"string","required":true},"status":{"from":["status"],"type":"string","required":true},
   "updatedAt":{"from":["producedAt","$publishTime"],"type":"timestamp","required":true}},
  "ordering":{"eventTime":"updatedAt"},"dedupe":{"eventIdField":"eventId","identity":["service","producedAt"]}},
 {"name":"jobs","ingress":"callback","mode":"receipt","fields":{"status":{"from":["status"]}}}]}`

// Subscription is the subscription name test envelopes carry.
const Subscription = "projects/p/subscriptions/system-events"

// Log is a goroutine-safe buffer of JSON log lines.
type Log struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Lines parses every line written so far.
func (l *Log) Lines(t testing.TB) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %v: %q", err, line)
		}
		out = append(out, m)
	}
	return out
}

// With returns the lines whose key has value (compared as text).
func With(lines []map[string]any, key string, value any) []map[string]any {
	var out []map[string]any
	want, _ := json.Marshal(value)
	for _, l := range lines {
		got, _ := json.Marshal(l[key])
		if string(got) == string(want) {
			out = append(out, l)
		}
	}
	return out
}

// DefaultRoutes returns the built-in routes file, the one route.LoadFile("")
// loads, for tests that change it.
func DefaultRoutes(t testing.TB) []byte {
	return []byte(docblock.Read(t, "consumer/route/default_routes.json"))
}

// Options tweak NewProcessor.
type Options struct {
	Store  store.Store // default: a fresh memory store
	Routes []byte      // default: the built-in routes
	DLQ    classify.DLQMode
	Env    map[string]string // lookups for lease routes' urlEnv
	// DiscardLog writes the lines to io.Discard at INFO, as benchmarks want
	// (the returned Log stays empty).
	DiscardLog bool
}

// NewProcessor builds a processor for tests and returns it with its store
// and log.
func NewProcessor(t testing.TB, o Options) (*process.Processor, store.Store, *Log) {
	t.Helper()
	st := o.Store
	if st == nil {
		st = memstore.New()
	}
	table, err := route.LoadFile("") // the built-in routes
	if o.Routes != nil {
		table, err = route.Parse(o.Routes)
	}
	if err != nil {
		t.Fatal(err)
	}
	log := &Log{}
	logger := logging.New(log, slog.LevelDebug)
	if o.DiscardLog {
		logger = logging.New(io.Discard, slog.LevelInfo)
	}
	p, err := process.New(process.Config{
		Store: st, Env: Env, Routes: table, DLQ: o.DLQ,
		Logger:    logger,
		LookupEnv: func(k string) (string, bool) { v, ok := o.Env[k]; return v, ok },
	})
	if err != nil {
		t.Fatal(err)
	}
	return p, st, log
}

// Envelope describes a push envelope for PushBody.
type Envelope struct {
	ID              string
	Payload         string // JSON text, base64-encoded into data
	PublishTime     time.Time
	DeliveryAttempt int // 0: omitted (no DLQ)
	Attributes      map[string]string
}

// PushBody encodes e as a push request body.
func PushBody(t testing.TB, e Envelope) []byte {
	t.Helper()
	if e.PublishTime.IsZero() {
		e.PublishTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	}
	msg := map[string]any{
		"data": base64.StdEncoding.EncodeToString([]byte(e.Payload)), "messageId": e.ID,
		"publishTime": e.PublishTime.Format(time.RFC3339Nano), "attributes": e.Attributes,
	}
	env := map[string]any{"message": msg, "subscription": Subscription}
	if e.DeliveryAttempt > 0 {
		env["deliveryAttempt"] = e.DeliveryAttempt
	}
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Get reads one document from st.
func Get(t testing.TB, st store.Store, key store.Key) (store.Document, bool) {
	t.Helper()
	var doc store.Document
	found := false
	err := st.RunTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		d, err := tx.Get(ctx, key)
		if err != nil {
			if isNotFound(err) {
				return nil
			}
			return err
		}
		doc, found = d, true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return doc, found
}

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

// Put writes one document to st.
func Put(t testing.TB, st store.Store, key store.Key, fields map[string]any) {
	t.Helper()
	err := st.RunTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		return tx.Set(ctx, key, store.Document{Fields: fields})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// FailingStore wraps a store and fails transactions on demand: with the
// error set by SetErr, or whatever Hook returns before each transaction.
type FailingStore struct {
	store.Store
	// Hook, when set, runs before every transaction; an error fails it.
	Hook func() error

	mu  sync.Mutex
	err error
}

// SetErr makes every following transaction fail with err (nil: succeed).
func (f *FailingStore) SetErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// RunTx implements store.Store.
func (f *FailingStore) RunTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	f.mu.Lock()
	err := f.err
	f.mu.Unlock()
	if err == nil && f.Hook != nil {
		err = f.Hook()
	}
	if err != nil {
		return err
	}
	return f.Store.RunTx(ctx, fn)
}

// RetryRefused sends n requests at once, each with send(i), and sends a refused one
// (send reports it) again once another request was answered, as Pub/Sub and HTTP clients
// retry a 503: an answered request gave back the memory it held, so a retry may fit. It
// returns when every request was answered, with how many refusals were retried.
func RetryRefused(n int, send func(i int) (refused bool)) int {
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	answered, retried := 0, 0
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				seen := answered
				mu.Unlock()
				refused := send(i)
				mu.Lock()
				if !refused {
					answered++
					cond.Broadcast()
					mu.Unlock()
					return
				}
				retried++
				for answered == seen {
					cond.Wait()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return retried
}
