package devpipe

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	pubsubpb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/logging"
	"github.com/eventpipe/eventpipe/consumer/push"
	"github.com/eventpipe/eventpipe/consumer/server"
	"github.com/eventpipe/eventpipe/consumer/settings"
	"github.com/eventpipe/eventpipe/consumer/store/storeurl"
	"github.com/eventpipe/eventpipe/internal/localpubsub"
	"github.com/eventpipe/eventpipe/spec"
)

// Options configure a local pipeline.
type Options struct {
	// Stack is the validated stack whose pipelines run.
	Stack *spec.Stack
	// DataDir holds one bbolt file per pipeline; required.
	DataDir string
	// BackoffScale multiplies every retry backoff (default 1: real time).
	BackoffScale float64
	// ConsumerLog receives the consumers' JSON log lines (nil: discarded).
	ConsumerLog io.Writer
	// Logger receives the bridges' lines (nil: discarded).
	Logger *slog.Logger
	// Handler, when set, runs the team's handler beside the pipeline; every
	// consumer gets it as EVENTPIPE_HANDLER_URL (through a counter of its
	// calls, Env.Handler).
	Handler *HandlerOptions
	// Routes, when set, is every consumer's routes file instead of the
	// stack's consumer.routes (a path inside the image).
	Routes string
}

// Env is a running local pipeline. Close stops it.
type Env struct {
	// Topology is what was declared in pstest: the stack's, with the
	// settings pstest cannot model mapped by ForPstest.
	Topology Topology
	// Adapted lists those mapped settings (AdaptationLine prints them).
	Adapted []Adaptation
	// Tally follows every message to its final state.
	Tally *Tally
	// Outage takes every consumer's store down and up again.
	Outage *Outage
	// Consumers maps pipeline name to the consumer's base URL (http://HOST:PORT).
	Consumers map[string]string
	// EmulatorHost is pstest's address, for PUBSUB_EMULATOR_HOST.
	EmulatorHost string
	// DataDir holds the consumers' bbolt files.
	DataDir string
	// Handler is the team's handler (Options.Handler), nil without one.
	Handler *Handler

	fake   *localpubsub.Fake
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
}

// Start starts pstest with the stack's topology, one consumer per pipeline
// (server.Run, the code of cmd/consumer) on a bbolt file in DataDir, a push
// bridge per push subscription, and a watcher per pull subscription's DLQ.
func Start(ctx context.Context, opts Options) (*Env, error) {
	if opts.Stack == nil {
		return nil, errors.New("devpipe: no stack")
	}
	if opts.DataDir == "" {
		return nil, errors.New("devpipe: no data directory for the consumers' bbolt files")
	}
	if opts.BackoffScale <= 0 {
		opts.BackoffScale = 1
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	topo, adapted := ForPstest(FromSpec(opts.Stack))
	fake, err := localpubsub.Start(ctx, topo.Project, pullBackoffOption(topo, opts.BackoffScale))
	if err != nil {
		return nil, fmt.Errorf("devpipe: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e := &Env{Topology: topo, Adapted: adapted, Tally: NewTally(topo), Outage: &Outage{}, Consumers: map[string]string{},
		EmulatorHost: fake.Server.Addr, DataDir: opts.DataDir, fake: fake, cancel: cancel}
	if err := Declare(ctx, fake.Client, topo); err != nil {
		_ = e.Close()
		return nil, err
	}
	logW := e.Tally.Writer(opts.ConsumerLog)
	if opts.Handler != nil {
		if e.Handler, err = StartHandler(ctx, *opts.Handler); err != nil {
			_ = e.Close()
			return nil, err
		}
	}
	for _, p := range opts.Stack.SortedPipelines() {
		addr, err := e.startConsumer(ctx, runCtx, opts, p, logW)
		if err != nil {
			_ = e.Close()
			return nil, err
		}
		e.Consumers[p.Name] = "http://" + addr
	}
	for _, p := range topo.Pipelines {
		for _, s := range p.Subscriptions {
			if s.Push {
				b := &Bridge{Client: fake.Client, Sub: s, Endpoint: e.Consumers[p.Name] + push.Path, Scale: opts.BackoffScale,
					Tally: e.Tally, Logger: opts.Logger}
				e.goRun(func() error { return b.Run(runCtx) })
			}
			// Push subscriptions too: pstest counts a message's delivery attempts across
			// every subscription of its topic, so with several subscriptions pstest itself
			// may dead-letter a message the bridge has not yet given up on.
			if s.HasDLQ() {
				e.goRun(func() error { return e.watchDLQ(runCtx, s) })
			}
		}
	}
	return e, nil
}

// startConsumer runs one pipeline's consumer with the environment the
// Cloud Run component would give it, and returns its address once it serves.
func (e *Env) startConsumer(ctx, runCtx context.Context, opts Options, p *spec.Pipeline, logW io.Writer) (string, error) {
	st := opts.Stack
	dbURL := "bbolt://" + filepath.ToSlash(filepath.Join(opts.DataDir, p.Name+".db"))
	vars := settings.Default()
	vars.Environment, vars.Service, vars.Version = st.Env, p.Consumer.ServiceName, "local"
	vars.Store, vars.Routes, vars.CollectionPrefix = dbURL, cmp.Or(opts.Routes, p.Consumer.Routes), p.Consumer.CollectionPrefix
	vars.PullSubscriptions = st.PullSubscriptions(p)
	vars.ShutdownTimeout = localShutdownTimeout
	names := []string{settings.Environment, settings.Service, settings.Version, settings.Store, settings.Routes, settings.PullSubscriptions,
		settings.CollectionPrefix, settings.ShutdownTimeout}
	if e.Handler != nil {
		vars.HandlerURL, vars.HandlerHealthPath = e.Handler.URL, e.Handler.HealthPath
		names = append(names, settings.HandlerURL, settings.HandlerHealthPath)
	}
	// The consumer reads its environment as the Cloud Run component writes it.
	env := vars.Environ(names...)
	cfg, err := server.ConfigFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		return "", fmt.Errorf("devpipe: pipeline %s: %w", p.Name, err)
	}
	db, err := storeurl.Open(ctx, dbURL)
	if err != nil {
		return "", fmt.Errorf("devpipe: pipeline %s: %w", p.Name, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = db.Close()
		return "", fmt.Errorf("devpipe: pipeline %s: listen: %w", p.Name, err)
	}
	log := logging.New(logW, slog.LevelInfo).With(logfields.Service, cfg.Service, logfields.Env, cfg.Env, logfields.Version, cfg.Version)
	ready := make(chan string, 1)
	done := make(chan struct{})
	e.goRun(func() error {
		defer close(done)
		err := server.Run(runCtx, cfg, log, server.Options{Listener: ln, PubSubClient: e.fake.Client,
			Store: e.Outage.Wrap(db), Ready: func(a string) { ready <- a }})
		if err != nil {
			return fmt.Errorf("devpipe: consumer of pipeline %s: %w", p.Name, err)
		}
		return nil
	})
	select {
	case addr := <-ready:
		return addr, nil
	case <-done:
		return "", fmt.Errorf("devpipe: consumer of pipeline %s stopped at start: %w", p.Name, e.Err())
	case <-time.After(30 * time.Second):
		return "", fmt.Errorf("devpipe: consumer of pipeline %s did not start within 30s", p.Name)
	}
}

// localShutdownTimeout is a local consumer's EVENTPIPE_SHUTDOWN_TIMEOUT:
// shorter than Cloud Run's default, so a stopped pipeline stops soon.
const localShutdownTimeout = 5 * time.Second

// watchDLQ records what reaches a subscription's DLQ: what the bridge moved
// there, and what pstest dead-letters (from a pull subscription, or from a
// push subscription sharing its topic, as pstest v2.8.0 counts delivery
// attempts per message across all subscriptions of a topic). pstest
// v2.8.0 never removes a dead-lettered message from its source subscription
// (it acks with the message id, not the ack id) and so publishes it to the
// DLQ again and again; the copies keep the message id, so counting distinct
// ids counts each dead-lettered message once, as real Pub/Sub would hold it.
// Nothing is acked: the DLQ keeps its messages for `eventpipe replay`.
//
// Every pulled message is released again at once (ack deadline 0), so
// `eventpipe replay` and other readers find the DLQ whole; the watcher then
// waits watchDLQIdle before pulling again when it saw nothing new.
func (e *Env) watchDLQ(ctx context.Context, s SubscriptionTopology) error {
	seen := map[string]bool{}
	for ctx.Err() == nil {
		resp, err := e.fake.Client.SubscriptionAdminClient.Pull(ctx, &pubsubpb.PullRequest{Subscription: s.DLQSubscription, MaxMessages: 100})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("devpipe: watch %s: %w", s.DLQSubscription, err)
		}
		fresh := false
		ackIDs := make([]string, 0, len(resp.GetReceivedMessages()))
		for _, rm := range resp.GetReceivedMessages() {
			ackIDs = append(ackIDs, rm.GetAckId())
			id := rm.GetMessage().GetMessageId()
			if _, bridged := rm.GetMessage().GetAttributes()[AttrDLQSubscription]; bridged || seen[id] {
				continue // the bridge's copy (a new id, which the bridge counted), or known
			}
			seen[id], fresh = true, true
			e.Tally.DeadLettered(s.Name, id)
		}
		if len(ackIDs) > 0 {
			if err := e.fake.Client.SubscriptionAdminClient.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: s.DLQSubscription, AckIds: ackIDs}); err != nil && ctx.Err() == nil {
				return fmt.Errorf("devpipe: release %s: %w", s.DLQSubscription, err)
			}
		}
		if !fresh {
			sleep(ctx, watchDLQIdle)
		}
	}
	return nil
}

// watchDLQIdle is how long watchDLQ waits after a pull that found nothing new.
const watchDLQIdle = 100 * time.Millisecond

func (e *Env) goRun(f func() error) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		if err := f(); err != nil {
			e.mu.Lock()
			e.errs = append(e.errs, err)
			e.mu.Unlock()
		}
	}()
}

// Err returns the errors of consumers, bridges and watchers that stopped.
func (e *Env) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return errors.Join(e.errs...)
}

// Publish publishes one message to a pipeline's topic (synchronously, so
// the id is known) and records it in the tally.
func (e *Env) Publish(ctx context.Context, pipeline string, data []byte, attrs map[string]string) (string, error) {
	i := slices.IndexFunc(e.Topology.Pipelines, func(p PipelineTopology) bool { return p.Name == pipeline })
	if i < 0 {
		return "", fmt.Errorf("devpipe: no pipeline %q; the stack has %s", pipeline, strings.Join(slices.Sorted(maps.Keys(e.Consumers)), ", "))
	}
	p := e.Topology.Pipelines[i]
	resp, err := e.fake.Client.TopicAdminClient.Publish(ctx, &pubsubpb.PublishRequest{Topic: p.Topic, Messages: []*pubsubpb.PubsubMessage{{Data: data, Attributes: attrs}}})
	if err != nil {
		return "", fmt.Errorf("devpipe: publish to %s: %w", p.Topic, err)
	}
	if len(resp.GetMessageIds()) != 1 {
		return "", fmt.Errorf("devpipe: publish to %s returned %d ids, want 1", p.Topic, len(resp.GetMessageIds()))
	}
	id := resp.GetMessageIds()[0]
	e.Tally.Published(p.Topic, id)
	return id, nil
}

// Close stops bridges, watchers and consumers (each drains gracefully), then
// pstest. It returns what went wrong while running.
func (e *Env) Close() error {
	e.cancel()
	e.wg.Wait()
	err := e.Err()
	if e.Handler != nil {
		err = errors.Join(err, e.Handler.Close())
	}
	if cerr := e.fake.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	return err
}
