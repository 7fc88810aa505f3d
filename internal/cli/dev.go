package cli

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
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/eventpipe/eventpipe/devpipe"
	"github.com/eventpipe/eventpipe/spec"
)

// devFlags are the flags of `eventpipe dev`.
type devFlags struct {
	stack    spec.Selection
	serve    bool
	addr     string
	dataDir  string
	scale    float64
	scenario devpipe.Scenario
	// handler, handlerHealth and routes run the team's handler beside the
	// pipeline (docs/handlers.md).
	handler, handlerHealth, routes string
	// samples is the folder of the team's own events, a file per pipeline.
	samples string
	// prog is how the user runs this program again (Invocation), for the commands
	// --serve prints.
	prog string
}

// NewDevCmd builds `eventpipe dev`: the stack's pipelines on this machine.
func NewDevCmd() *cobra.Command {
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
			f.prog = Invocation(cmd.Root().Name())
			return runDev(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	StackFlag(fl, &f.stack.Stack, "dev", "the stack whose pipelines run")
	StackFileFlag(fl, &f.stack.ConfigFile)
	DeprecatedAlias(fl, &f.stack.ConfigFile, "config", "stack-file")
	StackDirFlag(fl, &f.stack.StackDir)
	fl.BoolVar(&f.serve, "serve", false, "keep everything running and serve publish and stats endpoints")
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8085", "with --serve: address of the publish and stats endpoints")
	fl.StringVar(&f.dataDir, "data-dir", "", "folder for the bbolt stores and consumer.log (default: a new temporary folder)")
	fl.Float64Var(&f.scale, "backoff-scale", 0, "multiply every retry backoff by this (0: 0.01 for the scenario, 1 with --serve)")
	fl.IntVar(&f.scenario.Events, "events", f.scenario.Events, "scenario: events per pipeline in the first and in the outage phase")
	fl.IntVar(&f.scenario.Duplicates, "duplicates", f.scenario.Duplicates, "scenario: republished events per pipeline")
	fl.IntVar(&f.scenario.OutOfOrder, "out-of-order", f.scenario.OutOfOrder, "scenario: older events per pipeline")
	fl.IntVar(&f.scenario.Poison, "poison", f.scenario.Poison, "scenario: poison messages per pipeline")
	DurationFlag(fl, &f.scenario.Outage, "outage", f.scenario.Outage, "scenario: how long the stores stay down")
	fl.StringVar(&f.handler, "handler", "", "run this command (sh -c) as the consumers' handler, with HANDLER_PORT set; its calls are counted")
	fl.StringVar(&f.handlerHealth, "handler-health", "/healthz", "with --handler: the handler's health path, polled until it answers 2xx")
	fl.StringVar(&f.routes, "routes", "", "routes file every consumer uses instead of the stack's consumer.routes (e.g. routes naming the handler)")
	fl.StringVar(&f.samples, "samples", "", "scenario: `DIR` of your own events, a file per pipeline (DIR/<pipeline>.jsonl, one JSON event per line), played instead of the built-in system events")
	return cmd
}

func runDev(ctx context.Context, stdout, stderr io.Writer, f devFlags) error {
	if err := f.scenario.Validate(); err != nil && !f.serve {
		return &ExitError{Code: 2, Err: err}
	}
	st, _, err := f.stack.Load()
	if err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	if f.scale < 0 {
		return &ExitError{Code: 2, Err: fmt.Errorf("--backoff-scale %g: use a positive factor (1 = the stack's real backoff)", f.scale)}
	}
	if f.scale == 0 {
		f.scale = 0.01
		if f.serve {
			f.scale = 1
		}
	}
	if f.samples != "" {
		names := make([]string, 0, len(st.Pipelines))
		for _, p := range st.SortedPipelines() {
			names = append(names, p.Name)
		}
		if f.scenario.Samples, err = devpipe.LoadSamples(f.samples, names); err != nil {
			return &ExitError{Code: 2, Err: err}
		}
	}
	dir, cleanup, err := devDataDir(f.dataDir)
	if err != nil {
		return &ExitError{Code: 2, Err: err}
	}
	// A temporary folder goes when the run ends (Ctrl-C included); so does a --data-dir
	// this run created, if the run fails. Pass --data-dir to keep the stores and log.
	ok := false
	defer func() { cleanup(ok) }()
	logPath := filepath.Join(dir, "consumer.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return &ExitError{Code: 2, Err: fmt.Errorf("consumer log: %w", err)}
	}
	defer logFile.Close()
	opts := devpipe.Options{Stack: st, DataDir: dir, BackoffScale: f.scale, ConsumerLog: logFile,
		Logger: slog.New(slog.NewJSONHandler(logFile, nil)), Routes: f.routes}
	if f.handler != "" {
		out, err := os.Create(filepath.Join(dir, "handler.log"))
		if err != nil {
			return &ExitError{Code: 2, Err: fmt.Errorf("handler log: %w", err)}
		}
		defer out.Close()
		opts.Handler = &devpipe.HandlerOptions{Command: f.handler, HealthPath: f.handlerHealth, Output: out}
	}
	env, err := devpipe.Start(ctx, opts)
	if err != nil {
		return &ExitError{Code: 2, Err: err}
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
	rep, runErr := sc.Run(ctx, env)
	closeErr := env.Close()
	if runErr != nil {
		return &ExitError{Code: 2, Err: runErr}
	}
	ok = true
	if err := devpipe.WriteTable(stdout, rep.Rows); err != nil {
		return err
	}
	if err := devpipe.Check(rep.Rows); err != nil {
		return &ExitError{Code: 1, Err: fmt.Errorf("messages were lost:\n%w", err)}
	}
	if err := env.WriteHandlerStats(stdout); err != nil {
		return &ExitError{Code: 1, Err: err}
	}
	if closeErr != nil {
		return &ExitError{Code: 1, Err: fmt.Errorf("the local pipeline did not stop cleanly: %w", closeErr)}
	}
	if err := devVerdict(rep, f.samples); err != nil {
		return &ExitError{Code: 1, Err: err}
	}
	fmt.Fprintln(stdout, "nothing lost: published = applied + duplicate + stale + dead-lettered on every subscription")
	return nil
}

// devVerdict refuses to call a run good that proved nothing: a subscription that applied
// none of its messages (every one ended poison: its routes take none of the events
// played), or a team's sample the consumer refused. samples is the --samples folder.
func devVerdict(rep devpipe.Report, samples string) error {
	var problems []string
	for _, r := range nothingApplied(rep.Rows) {
		fix := "its routes take none of the built-in system events (service, status): play your own events with --samples DIR " +
			"(one file per pipeline, DIR/" + r.Pipeline + ".jsonl), or publish them with dev --serve (POST /publish/" + r.Pipeline + ")"
		if samples != "" {
			fix = "its routes take none of the events played: see the consumer log, and the samples refused below"
		}
		problems = append(problems, fmt.Sprintf("%s/%s applied none of its %d messages (%d dead-lettered, %d acked as poison): %s",
			r.Pipeline, r.Subscription, r.Published, r.DeadLettered, r.PoisonAcked, fix))
	}
	for _, r := range rep.Rejected {
		problems = append(problems, "sample "+r.String())
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("nothing was lost, but the run does not show your pipelines work (%d problems):\n  - %s", len(problems), strings.Join(problems, "\n  - "))
}

// nothingApplied returns the rows of subscriptions whose routes took none of their
// messages: every one ended poison (dead-lettered, or acked as poison), as with routes that
// match none of the scenario's events. Nothing is lost, yet nothing was tried. A message
// that ended duplicate or stale was taken by a route: a subscription whose every message
// another subscription of its pipeline applied first (they share the pipeline's dedupe
// records) applied none itself, and proves its routes all the same.
func nothingApplied(rows []devpipe.Row) []devpipe.Row {
	var out []devpipe.Row
	for _, r := range rows {
		if r.Published > 0 && !r.Filtered && r.Applied+r.Duplicate+r.Stale == 0 {
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

// prog is the program name for the commands serveDev prints.
func prog(f devFlags) string {
	if f.prog == "" {
		return "eventpipe"
	}
	return f.prog
}

// Invocation is how the user runs the program named name again: "go run ./cmd/NAME"
// when `go run` built it (its binary is in Go's temporary build folder), else the name.
func Invocation(name string) string {
	exe, err := os.Executable()
	if err == nil && strings.Contains(filepath.ToSlash(exe), "/go-build") && !strings.HasSuffix(exe, ".test") {
		return "go run ./cmd/" + name
	}
	return name
}

// printExamples prints, for each pipeline, a curl command per route of its consumer
// (routes, else the stack's consumer.routes, else the default routes) publishing an
// event that route takes and applies.
func printExamples(w io.Writer, base string, env *devpipe.Env, routes string) error {
	for _, p := range env.Topology.Pipelines {
		path := routes
		if path == "" {
			path = env.Routes[p.Name]
		}
		topic := p.Topic[strings.LastIndex(p.Topic, "/")+1:]
		examples, err := devpipe.Examples(path, topic, env.Env, time.Now())
		if err != nil {
			return fmt.Errorf("pipeline %s: %w", p.Name, err)
		}
		if len(examples) == 0 {
			fmt.Fprintf(w, "  (%s: its routes take no event that can be shown; publish your own with POST %s/publish/%s)\n", p.Name, base, p.Name)
		}
		for _, ex := range examples {
			fmt.Fprintf(w, "  %s   # %s: route %s\n", devpipe.ExampleCommand(base, p.Name, ex), p.Name, ex.Route)
		}
	}
	return nil
}

// serveDev keeps the pipeline running until ctx is done (Ctrl-C).
func serveDev(ctx context.Context, stdout io.Writer, env *devpipe.Env, f devFlags, logPath string) error {
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		_ = env.Close()
		return &ExitError{Code: 2, Err: fmt.Errorf("--addr %s: %w", f.addr, err)}
	}
	srv := &http.Server{Handler: env.Endpoints(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(stdout, "eventpipe dev: stack %s is running (Ctrl-C to stop)\n", f.stack.Stack)
	if line := devpipe.AdaptationLine(env.Adapted); line != "" {
		fmt.Fprintln(stdout, line)
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "Publish an event to a pipeline's topic, one in the shape of each of its consumer's routes:\n")
	if err := printExamples(stdout, base, env, f.routes); err != nil {
		_ = srv.Close()
		_ = env.Close()
		return &ExitError{Code: 2, Err: err}
	}
	fmt.Fprintf(stdout, "\nResults:\n  curl -sS %s/stats            (per subscription: published, applied, duplicate, stale, dead-lettered, poison-acked, retried, in-dlq, pending)\n", base)
	fmt.Fprintf(stdout, "  consumer log (one JSON line per delivery): %s\n  bbolt stores: %s\n", logPath, env.DataDir)
	if f.dataDir == "" {
		fmt.Fprintf(stdout, "  (a temporary folder, removed when dev stops; pass --data-dir DIR to keep it)\n")
	}
	fmt.Fprintf(stdout, "\nPub/Sub emulator (for gcloud, client libraries and replay):\n  export PUBSUB_EMULATOR_HOST=%s\n", env.EmulatorHost)
	fmt.Fprintf(stdout, "Dead letters back to their topic (add --dry-run to only count them):\n")
	for _, p := range env.Topology.Pipelines {
		for _, s := range p.Subscriptions {
			if s.HasDLQ() {
				fmt.Fprintf(stdout, "  PUBSUB_EMULATOR_HOST=%s %s replay --subscription %s --topic %s\n", env.EmulatorHost, prog(f), s.DLQSubscription, p.Topic)
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
