package devpipe

import (
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
	// DLQ holds the dead-letter subscriptions' messages.
	DLQ *DLQ
	// Routes maps pipeline name to its consumer's routes file ("" for the
	// default routes); Env is the consumers' EVENTPIPE_ENV.
	Routes map[string]string
	Env    string

	fake   *localpubsub.Fake
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
}

// Start starts pstest with the stack's topology, one consumer per pipeline
// (server.Run, the code of cmd/consumer) on a bbolt file in DataDir, a push
// bridge per push subscription, and the dead-lettering of pull subscriptions.
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
	routes, err := routesFiles(opts)
	if err != nil {
		return nil, err
	}
	topo, adapted := ForPstest(FromSpec(opts.Stack))
	retry, dlq := newPullRetry(topo, opts.BackoffScale), NewDLQ(topo, nil)
	fake, err := localpubsub.Start(ctx, topo.Project, append(retry.Options(), dlq.Options()...)...)
	if err != nil {
		return nil, fmt.Errorf("devpipe: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e := &Env{Topology: topo, Adapted: adapted, Tally: NewTally(topo), Outage: &Outage{}, Consumers: map[string]string{},
		EmulatorHost: fake.Server.Addr, DataDir: opts.DataDir, DLQ: dlq, Routes: routes, Env: opts.Stack.Env, fake: fake, cancel: cancel}
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
		}
	}
	e.goRun(func() error { return e.deadLetterPulled(runCtx, retry, opts.Logger) })
	return e, nil
}

// startConsumer runs one pipeline's consumer with the environment the
// Cloud Run component would give it, and returns its address once it serves.
func (e *Env) startConsumer(ctx, runCtx context.Context, opts Options, p *spec.Pipeline, logW io.Writer) (string, error) {
	st := opts.Stack
	dbURL := "bbolt://" + filepath.ToSlash(filepath.Join(opts.DataDir, p.Name+".db"))
	vars := settings.Default()
	vars.Environment, vars.Service, vars.Version = st.Env, p.Consumer.ServiceName, "local"
	vars.Store, vars.Routes, vars.CollectionPrefix = dbURL, e.Routes[p.Name], p.Consumer.CollectionPrefix
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
	return e.PublishOrdered(ctx, pipeline, data, attrs, "")
}

// PublishOrdered is Publish with an ordering key ("" for none).
func (e *Env) PublishOrdered(ctx context.Context, pipeline string, data []byte, attrs map[string]string, orderingKey string) (string, error) {
	i := slices.IndexFunc(e.Topology.Pipelines, func(p PipelineTopology) bool { return p.Name == pipeline })
	if i < 0 {
		return "", fmt.Errorf("devpipe: no pipeline %q; the stack has %s", pipeline, strings.Join(slices.Sorted(maps.Keys(e.Consumers)), ", "))
	}
	p := e.Topology.Pipelines[i]
	resp, err := e.fake.Client.TopicAdminClient.Publish(ctx, &pubsubpb.PublishRequest{Topic: p.Topic, Messages: []*pubsubpb.PubsubMessage{{Data: data, Attributes: attrs, OrderingKey: orderingKey}}})
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
