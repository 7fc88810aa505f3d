package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/eventpipe/eventpipe/devpipe"
	"github.com/eventpipe/eventpipe/render"
	"github.com/eventpipe/eventpipe/spec"
)

// devFlags are the flags of `eventpipe dev`.
type devFlags struct {
	render   render.Options
	serve    bool
	addr     string
	dataDir  string
	scale    float64
	scenario devpipe.Scenario
	// handler, handlerHealth and routes run the team's handler beside the
	// pipeline (docs/handlers.md).
	handler, handlerHealth, routes string
}

// newDevCmd builds `eventpipe dev`: the stack's pipelines on this machine.
func newDevCmd() *cobra.Command {
	f := devFlags{scenario: devpipe.DefaultScenario()}
	cmd := &cobra.Command{
		Use:   "dev [--stack dev] [--serve]",
		Short: "Run the stack's pipelines locally (pstest, consumers on bbolt, push bridge) and check nothing is lost",
		Long: "dev declares the stack's topics, subscriptions, dead-letter and retry policies in Google's pstest\n" +
			"server, runs one consumer per pipeline (the code of cmd/consumer) on an embedded bbolt store, and\n" +
			"delivers push subscriptions through a bridge that behaves like Pub/Sub push. Without --serve it plays\n" +
			"a scenario (events, duplicates, out-of-order events, poison, a store outage), prints per subscription\n" +
			"published / applied / duplicate / stale / dead-lettered / poison-acked / retried / lost, and exits 1\n" +
			"when a message was lost, 2 on a bad stack file or flag (retried varies with timing from run to run).\n" +
			"Retry backoffs are scaled by --backoff-scale (default 0.01 for the scenario, 1 with --serve).\n" +
			"With --serve it keeps running and serves POST /publish/{pipeline} and GET /stats on --addr.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDev(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.render.Stack, "stack", "dev", "stack whose pipelines run: dev, staging, prod")
	stackFileFlag(fl, &f.render.ConfigFile)
	deprecatedAlias(fl, &f.render.ConfigFile, "config", "stack-file")
	stackDirFlag(fl, &f.render.StackDir)
	fl.BoolVar(&f.serve, "serve", false, "keep everything running and serve publish and stats endpoints")
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8085", "with --serve: address of the publish and stats endpoints")
	fl.StringVar(&f.dataDir, "data-dir", "", "folder for the bbolt stores and consumer.log (default: a new temporary folder)")
	fl.Float64Var(&f.scale, "backoff-scale", 0, "multiply every retry backoff by this (0: 0.01 for the scenario, 1 with --serve)")
	fl.IntVar(&f.scenario.Events, "events", f.scenario.Events, "scenario: events per pipeline in the first and in the outage phase")
	fl.IntVar(&f.scenario.Duplicates, "duplicates", f.scenario.Duplicates, "scenario: republished events per pipeline")
	fl.IntVar(&f.scenario.OutOfOrder, "out-of-order", f.scenario.OutOfOrder, "scenario: older events per pipeline")
	fl.IntVar(&f.scenario.Poison, "poison", f.scenario.Poison, "scenario: poison messages per pipeline")
	durationFlag(fl, &f.scenario.Outage, "outage", f.scenario.Outage, "scenario: how long the stores stay down")
	fl.StringVar(&f.handler, "handler", "", "run this command (sh -c) as the consumers' handler, with HANDLER_PORT set; its calls are counted")
	fl.StringVar(&f.handlerHealth, "handler-health", "/healthz", "with --handler: the handler's health path, polled until it answers 2xx")
	fl.StringVar(&f.routes, "routes", "", "routes file every consumer uses instead of the stack's consumer.routes (e.g. routes naming the handler)")
	return cmd
}

func runDev(ctx context.Context, stdout, stderr io.Writer, f devFlags) error {
	if err := f.scenario.Validate(); err != nil && !f.serve {
		return &exitError{code: 2, err: err}
	}
	st, err := loadStack(f.render)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if f.scale < 0 {
		return &exitError{code: 2, err: fmt.Errorf("--backoff-scale %g: use a positive factor (1 = the stack's real backoff)", f.scale)}
	}
	if f.scale == 0 {
		f.scale = 0.01
		if f.serve {
			f.scale = 1
		}
	}
	dir, cleanup, err := devDataDir(f.dataDir)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	// A temporary folder goes when the run ends (Ctrl-C included); so does a --data-dir
	// this run created, if the run fails. Pass --data-dir to keep the stores and log.
	ok := false
	defer func() { cleanup(ok) }()
	logPath := filepath.Join(dir, "consumer.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return &exitError{code: 2, err: fmt.Errorf("consumer log: %w", err)}
	}
	defer logFile.Close()
	opts := devpipe.Options{Stack: st, DataDir: dir, BackoffScale: f.scale, ConsumerLog: logFile,
		Logger: slog.New(slog.NewJSONHandler(logFile, nil)), Routes: f.routes}
	if f.handler != "" {
		out, err := os.Create(filepath.Join(dir, "handler.log"))
		if err != nil {
			return &exitError{code: 2, err: fmt.Errorf("handler log: %w", err)}
		}
		defer out.Close()
		opts.Handler = &devpipe.HandlerOptions{Command: f.handler, HealthPath: f.handlerHealth, Output: out}
	}
	env, err := devpipe.Start(ctx, opts)
	if err != nil {
		return &exitError{code: 2, err: err}
	}
	if f.serve {
		err := serveDev(ctx, stdout, env, f, logPath)
		ok = err == nil
		return err
	}
	fmt.Fprintf(stderr, "dev: stack %s: %d pipelines in pstest, consumers on bbolt in %s, backoff x%g; consumer log %s\n",
		st.Name, len(env.Topology.Pipelines), dir, f.scale, logPath)
	if line := devpipe.AdaptationLine(env.Adapted); line != "" {
		fmt.Fprintln(stderr, line)
	}
	sc := f.scenario
	sc.Progress = stderr
	rows, runErr := sc.Run(ctx, env)
	closeErr := env.Close()
	if runErr != nil {
		return &exitError{code: 2, err: runErr}
	}
	ok = true
	if err := devpipe.WriteTable(stdout, rows); err != nil {
		return err
	}
	if err := devpipe.Check(rows); err != nil {
		return &exitError{code: 1, err: fmt.Errorf("messages were lost:\n%w", err)}
	}
	for _, r := range nothingApplied(rows) {
		fmt.Fprintf(stderr, "dev: %s/%s applied none of its %d messages, every one poison: its routes match none of the scenario's system events (service, status); "+
			"to try routes of your own events, run dev --serve and publish them (POST /publish/%s)\n", r.Pipeline, r.Subscription, r.Published, r.Pipeline)
	}
	if err := env.WriteHandlerStats(stdout); err != nil {
		return &exitError{code: 1, err: err}
	}
	if closeErr != nil {
		return &exitError{code: 1, err: fmt.Errorf("the local pipeline did not stop cleanly: %w", closeErr)}
	}
	fmt.Fprintln(stdout, "nothing lost: published = applied + duplicate + stale + dead-lettered on every subscription")
	return nil
}

// nothingApplied returns the rows of subscriptions whose every message ended poison
// (dead-lettered, or acked as poison): routes that match none of the scenario's events,
// such as a handler's routes given with --routes. Nothing is lost, yet nothing was tried.
func nothingApplied(rows []devpipe.Row) []devpipe.Row {
	var out []devpipe.Row
	for _, r := range rows {
		if r.Published > 0 && !r.Filtered && r.DeadLettered+r.PoisonAcked == r.Published {
			out = append(out, r)
		}
	}
	return out
}

// devDataDir makes the folder of the stores and consumer.log: dir made absolute (the
// consumers' bbolt:// store URLs need an absolute path), or a new temporary folder
// when dir is "". cleanup(ok) removes a temporary folder always, and a folder this call
// created when the run did not succeed.
func devDataDir(dir string) (string, func(ok bool), error) {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "eventpipe-dev-")
		if err != nil {
			return "", nil, fmt.Errorf("data dir: %w", err)
		}
		return tmp, func(bool) { _ = os.RemoveAll(tmp) }, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, fmt.Errorf("--data-dir %s: %w", dir, err)
	}
	_, statErr := os.Stat(abs)
	created := errors.Is(statErr, fs.ErrNotExist)
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", nil, fmt.Errorf("--data-dir %s: %w", dir, err)
	}
	return abs, func(ok bool) {
		if created && !ok {
			_ = os.RemoveAll(abs)
		}
	}, nil
}

// loadStack reads and validates a stack config the way render does.
func loadStack(opts render.Options) (*spec.Stack, error) {
	path, err := render.ConfigPath(opts)
	if err != nil {
		return nil, err
	}
	file, err := spec.ReadStackFile(path)
	if err != nil {
		return nil, err
	}
	return file.Load(opts.Stack)
}

// serveDev keeps the pipeline running until ctx is done (Ctrl-C).
func serveDev(ctx context.Context, stdout io.Writer, env *devpipe.Env, f devFlags, logPath string) error {
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		_ = env.Close()
		return &exitError{code: 2, err: fmt.Errorf("--addr %s: %w", f.addr, err)}
	}
	srv := &http.Server{Handler: env.Endpoints(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "eventpipe dev: stack %s is running (Ctrl-C to stop)\n", f.render.Stack)
	if line := devpipe.AdaptationLine(env.Adapted); line != "" {
		fmt.Fprintln(stdout, line)
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "Publish a JSON event to a pipeline's topic:\n")
	for _, p := range env.Topology.Pipelines {
		fmt.Fprintf(stdout, "  curl -sS -X POST %s/publish/%s -d '{\"eventId\":\"e1\",\"service\":\"api\",\"status\":\"healthy\",\"producedAt\":\"%s\"}'\n",
			base, p.Name, time.Now().UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(stdout, "\nResults:\n  curl -sS %s/stats            (per subscription: published, applied, duplicate, stale, dead-lettered, poison-acked, retried, pending)\n", base)
	fmt.Fprintf(stdout, "  consumer log (one JSON line per delivery): %s\n  bbolt stores: %s\n", logPath, env.DataDir)
	if f.dataDir == "" {
		fmt.Fprintf(stdout, "  (a temporary folder, removed when dev stops; pass --data-dir DIR to keep it)\n")
	}
	fmt.Fprintf(stdout, "\nPub/Sub emulator (for gcloud, client libraries and eventpipe replay):\n  export PUBSUB_EMULATOR_HOST=%s\n", env.EmulatorHost)
	for _, p := range env.Topology.Pipelines {
		for _, s := range p.Subscriptions {
			if s.HasDLQ() {
				fmt.Fprintf(stdout, "  eventpipe replay --subscription %s --topic %s\n", s.DLQSubscription, p.Topic)
			}
		}
	}
	fmt.Fprintf(stdout, "\nConsumers:\n")
	for _, p := range env.Topology.Pipelines {
		fmt.Fprintf(stdout, "  %-20s %s\n", p.Name, env.Consumers[p.Name])
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return env.Close()
}
