// Package doortest is the invariant suite of the consumer's doors: every
// guarantee of the engine, checked through every door that offers it —
// Pub/Sub push, Pub/Sub pull, callbacks and the Idempotency-Key gateway —
// on the store under test, with generated histories. Beside storetest
// (which holds a driver to the engine), it holds the consumer, wired as
// cmd/consumer wires it (server.Run), to what its users see:
//
//   - one effect per event: a key's handler is called once per attempt
//     its answers allow (an answer of 5xx, 408, 425 or 429, a dropped
//     connection, a call cut at its bound: each allows the next), never
//     again once it answered for good, and replays answer what it answered;
//   - never two calls in flight for one key, whatever the concurrency of
//     deliveries, retries and republished copies;
//   - convergence of every order of delivery, republished copies included,
//     and no pin beyond the window (engine.Ordering), at the doors that
//     order (push, pull);
//   - recovery after SIGKILL (simulated: the consumer freezes at a
//     failpoint and its store refuses its writes, as a dead process's)
//     and SIGTERM (the real drain): every key settles, each extra call is
//     one docs/handlers.md names, and new work during the drain is refused.
//
// Doors lists the doors: adding a door is adding a row there. A store's
// test package runs the suite with Run, as it runs storetest.
package doortest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/logging"
	"github.com/eventpipe/eventpipe/consumer/server"
	"github.com/eventpipe/eventpipe/consumer/store"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
	"github.com/eventpipe/eventpipe/internal/testing/storetest"
)

// seeds is how many generated histories each door runs per store: a few
// in go test, more with -doortest.seeds.
var seeds = flag.Int("doortest.seeds", 1, "generated histories per door and store in the door invariant suite")

// Harness is the store under test.
type Harness struct {
	Store store.Store
	// NoIsolation, when not empty, says why the store's transactions are
	// not isolated (the npm Firestore emulator): the cases deliver one copy
	// of a key at a time (keys still go at once).
	NoIsolation string
	// NoFullInt64, when not empty, says why integers beyond ±2^53 cannot
	// be stored (the npm emulator): the bogus maximum sequence is 2^53-1.
	NoFullInt64 string
}

// Timing of the suite's consumer: short, so that a call can outlive its
// door's timeout and its bound within a test. Its engine's clock is the
// suite's (a reservation lapses when the test moves the clock past it).
const (
	// deliveryTimeout and deliveryLease are the lease routes' action
	// timeout and leaseTTL (a delivery's call is cut at the latter).
	deliveryTimeout = 300 * time.Millisecond
	deliveryLease   = 1200 * time.Millisecond
	// callbackLease is the callback route's receipt leaseTTL: a callback
	// waits four fifths of it for the handler's answer, and its call is
	// cut at it (long enough that a slow answer, 150 ms past the wait,
	// still comes well before the cut on a loaded machine).
	callbackLease = 3 * time.Second
	// gatewayTimeout and gatewayInDoubt are EVENTPIPE_HANDLER_TIMEOUT and
	// EVENTPIPE_HANDLER_IN_DOUBT (a keyed call is cut at their sum).
	gatewayTimeout = 300 * time.Millisecond
	gatewayInDoubt = 900 * time.Millisecond
	// window is EVENTPIPE_MAX_EVENT_SKEW.
	window = time.Minute
	// shutdown is EVENTPIPE_SHUTDOWN_TIMEOUT of a consumer told to stop.
	shutdown = 800 * time.Millisecond
	// ackDeadline is the pull subscription's ack deadline.
	ackDeadline = 10 * time.Second
	// settleWithin bounds how long a key may take to settle.
	settleWithin = 30 * time.Second
)

// routes are the suite's routes: "orders" (a lease route to the handler),
// "guarded" (the same with the aggregate's ordering guard), "state" (a
// latest-state route) and "jobs" (a callback route to the handler).
var routes = fmt.Sprintf(`{"routes":[
 {"name":"orders","topic":"events","match":{"typeField":"type","types":["order"]},"mode":"lease",
  "fields":{"script":{"from":["script"],"type":"string"}},"dedupe":{"eventIdField":"eventId"},
  "action":{"maxAttempts":8,"timeout":%[1]q,"leaseTTL":%[2]q,"heartbeat":%[3]q}},
 {"name":"guarded","topic":"events","match":{"typeField":"type","types":["guarded"]},"mode":"lease",
  "fields":{"script":{"from":["script"],"type":"string"},"orderId":{"from":["orderId"],"type":"string"},"seq":{"from":["seq"],"type":"integer"}},
  "dedupe":{"eventIdField":"eventId"},
  "action":{"maxAttempts":8,"timeout":%[1]q,"leaseTTL":%[2]q,"heartbeat":%[3]q,"aggregate":"orderId","sequence":"seq"}},
 {"name":"state","topic":"events","match":{"typeField":"type","types":["state"]},"mode":"latest-state",
  "target":{"collection":"states","id":"aggregate"},
  "fields":{"aggregate":{"from":["aggregate"],"type":"string","required":true},"from":{"from":["name"],"type":"string"},
            "at":{"from":["at"],"type":"timestamp"},"seq":{"from":["seq"],"type":"integer"}},
  "ordering":{"eventTime":"at","sequence":"seq"},"dedupe":{"eventIdField":"eventId"}},
 {"name":"jobs","ingress":"callback","mode":"receipt","fields":{"script":{"from":["script"],"type":"string"}},
  "receipt":{"leaseTTL":%[4]q}}]}`, deliveryTimeout.String(), deliveryLease.String(), (deliveryLease / 5).String(), callbackLease.String())

// world is one door's setting on the store under test: the suite's
// clock, the handler, a Pub/Sub fake, and the consumers started on them.
type world struct {
	t       *testing.T
	h       Harness
	door    Door
	clock   *storetest.Clock
	handler *handler
	hurl    string
	ps      *pstest.Server
	// publishing pins the fake's clock to a message's publish time while
	// it is published (pinned), so that a test chooses publish times as
	// on push.
	publishing sync.Mutex
	pinned     atomic.Pointer[time.Time]
	// reading serialises reading the fake's messages: pstest's Messages
	// updates the *Message values it hands out.
	reading sync.Mutex
	env     string // EVENTPIPE_ENV: names every record of the world
	n       atomic.Int64
}

// Run runs the suite: every door of Doors on h's store, each in parallel
// with the others.
func Run(t *testing.T, h Harness) {
	for _, d := range Doors {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { c.run(t, newWorld(t, h, d)) })
			}
		})
	}
}

var worlds atomic.Int64

func newWorld(t *testing.T, h Harness, d Door) *world {
	w := &world{t: t, h: h, door: d, clock: storetest.NewClock(time.Now().UTC().Truncate(time.Millisecond)),
		env: fmt.Sprintf("d%d%s%d", time.Now().UnixNano()%1e6, d.Name, worlds.Add(1))}
	w.handler = newHandler(func(path string) time.Duration {
		switch {
		case strings.HasPrefix(path, "/eventpipe/callbacks"):
			return callbackLease*4/5 + 150*time.Millisecond
		case strings.HasPrefix(path, "/eventpipe/deliveries"):
			return deliveryTimeout + 150*time.Millisecond
		}
		return gatewayTimeout + 150*time.Millisecond
	}, func(path string) time.Duration {
		switch {
		case strings.HasPrefix(path, "/eventpipe/callbacks"):
			return callbackLease
		case strings.HasPrefix(path, "/eventpipe/deliveries"):
			return deliveryLease
		}
		return gatewayTimeout + gatewayInDoubt
	})
	srv := httptest.NewServer(w.handler)
	t.Cleanup(func() {
		close(w.handler.release)
		srv.Close()
	})
	w.hurl = srv.URL
	if d.pull {
		w.ps = pstest.NewServer()
		w.ps.SetTimeNowFunc(func() time.Time {
			if p := w.pinned.Load(); p != nil {
				return *p
			}
			return w.clock.Now()
		})
		t.Cleanup(func() { _ = w.ps.Close() })
		admin := w.client(t)
		ctx := context.Background()
		if _, err := admin.TopicAdminClient.CreateTopic(ctx, &pb.Topic{Name: topicName}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.SubscriptionAdminClient.CreateSubscription(ctx, &pb.Subscription{Name: subscriptionName, Topic: topicName,
			AckDeadlineSeconds: int32(ackDeadline / time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// The Pub/Sub fake's topic and subscription.
const (
	project          = "doors"
	topicName        = "projects/" + project + "/topics/events"
	subscriptionName = "projects/" + project + "/subscriptions/consumer"
)

// client connects a Pub/Sub client to the world's fake: each consumer
// has its own, which dies with it.
func (w *world) client(t *testing.T) *pubsub.Client {
	c, err := pubsub.NewClient(context.Background(), project, option.WithEndpoint(w.ps.Addr), option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// consumer is one consumer process, in-process: server.Run on the
// world's store, with its own listener and Pub/Sub client.
type consumer struct {
	url    string
	log    *ct.Log
	stop   context.CancelFunc
	done   chan struct{}
	err    error
	st     *lifeStore
	client *pubsub.Client
	// killed is closed when its kill failpoint fired: it is dead, frozen
	// where it was.
	killed chan struct{}
}

// lifeStore is the world's store as one consumer sees it: Close leaves it
// open (the next consumer uses it), and once the consumer is dead every
// transaction fails, as a dead process writes nothing.
type lifeStore struct {
	store.Store
	dead atomic.Bool
}

var errDead = errors.New("the consumer is dead (SIGKILL): it writes nothing")

func (s *lifeStore) RunTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	if s.dead.Load() {
		return errDead
	}
	return s.Store.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := fn(ctx, tx); err != nil {
			return err
		}
		if s.dead.Load() {
			return errDead // died before its commit
		}
		return nil
	})
}

func (*lifeStore) Close() error { return nil }

// start starts a consumer. killAt, when set, is the failpoint where it
// dies (the first time it is hit).
func (w *world) start(killAt engine.Failpoint) *consumer {
	t := w.t
	t.Helper()
	env := map[string]string{
		"EVENTPIPE_ENV": w.env, "EVENTPIPE_ROUTES": routes, "EVENTPIPE_HANDLER_URL": w.hurl,
		"EVENTPIPE_HANDLER_TIMEOUT": gatewayTimeout.String(), "EVENTPIPE_HANDLER_IN_DOUBT": gatewayInDoubt.String(),
		"EVENTPIPE_MAX_EVENT_SKEW": window.String(), "EVENTPIPE_SHUTDOWN_TIMEOUT": shutdown.String(), "EVENTPIPE_DLQ": "off",
	}
	if w.door.pull {
		env["EVENTPIPE_PULL_SUBSCRIPTIONS"] = subscriptionName
	}
	cfg, err := server.ConfigFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &consumer{url: "http://" + ln.Addr().String(), log: &ct.Log{}, done: make(chan struct{}), st: &lifeStore{Store: w.h.Store},
		killed: make(chan struct{})}
	var hook engine.FailpointHook
	if killAt != "" {
		var fired atomic.Bool
		hook = func(ctx context.Context, fp engine.Failpoint) error {
			if fp != killAt || !fired.CompareAndSwap(false, true) {
				return nil
			}
			c.st.dead.Store(true)
			close(c.killed)
			<-w.handler.release // frozen, as a killed process, until the test ends
			return errDead
		}
	}
	opts := server.Options{Listener: ln, Store: c.st, Failpoint: hook, Now: w.clock.Now, Ready: func(string) {}}
	if w.door.pull {
		c.client = w.client(t)
		opts.PubSubClient = c.client
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	ready := make(chan struct{})
	opts.Ready = func(string) { close(ready) }
	go func() {
		defer close(c.done)
		c.err = server.Run(ctx, cfg, logging.New(c.log, slog.LevelInfo), opts)
	}()
	select {
	case <-ready:
	case <-c.done:
		t.Fatalf("consumer did not start: %v", c.err)
	}
	t.Cleanup(func() {
		cancel()
		<-c.done
		if t.Failed() {
			t.Logf("consumer %s log:\n%s", c.url, c.logText(t))
		}
	})
	return c
}

func (c *consumer) logText(t *testing.T) string {
	var out []byte
	for _, l := range c.log.Lines(t) {
		out = append(out, fmt.Sprintf("%v\n", l)...)
	}
	return string(out)
}

// term stops c as SIGTERM does, and waits until it exits; its Pub/Sub
// client goes with it (the messages it held are delivered again after
// their ack deadline).
func (c *consumer) term(t *testing.T) {
	t.Helper()
	c.stop()
	select {
	case <-c.done:
	case <-time.After(10 * shutdown):
		t.Fatal("the consumer did not exit within ten shutdown timeouts of SIGTERM")
	}
	if c.client != nil {
		_ = c.client.Close()
	}
}

// kill finishes the death of c, which its failpoint froze: its Pub/Sub
// client goes (no ack deadline is extended any more) and its server stops;
// it writes nothing (its store refuses).
func (c *consumer) kill(t *testing.T) {
	t.Helper()
	c.st.dead.Store(true)
	if c.client != nil {
		_ = c.client.Close()
	}
	c.term(t)
}

// lapse moves the clock past every reservation the suite's routes make,
// and past the ack deadline of the messages a dead consumer held (its
// client's stream sets one of a minute or more), as the time between a
// consumer's death and the next claim: nine minutes, within the ten pstest
// keeps a message that is not delivered.
func (w *world) lapse() {
	w.clock.Advance(max(deliveryLease, callbackLease, gatewayTimeout+gatewayInDoubt, 9*time.Minute))
}

// post sends a request and returns its status, body and Retry-After
// (status 0 and the error when there was no answer).
func post(ctx context.Context, url string, body []byte, header http.Header) (int, []byte, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytesReader(body))
	if err != nil {
		return 0, nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	b, err := readAll(resp)
	return resp.StatusCode, b, resp.Header.Get("Retry-After"), err
}

// pool runs fns at once and waits for all.
func pool(fns ...func()) {
	var wg sync.WaitGroup
	for _, f := range fns {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	wg.Wait()
}
