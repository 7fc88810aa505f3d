// Command pushload measures consumer binaries against the bare loop on one
// syncing PostgreSQL (package pushload): in each round, for each
// concurrency, the bare loop and every consumer run back to back (in an
// order that turns from round to round) on a database of their own, each
// sending the same generated pushes; then it prints every run and the
// ratios. scripts/consumer-bench.sh builds the binaries and runs it.
//
// Usage: pushload [flags] NAME=CONSUMER_BINARY ...
package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/eventpipe/eventpipe/consumer/settings"
	"github.com/eventpipe/eventpipe/internal/testing/pgtest"
	"github.com/eventpipe/eventpipe/internal/testing/pushload"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "pushload:", err)
		os.Exit(1)
	}
}

type config struct {
	concurrency    []int
	messages, docs int
	rounds         int
	memoryMessages int
	pool           int
	serverURL      string
	bareHTTP       string
	env            []string
	consumers      []pushload.Consumer
}

// envList is a repeatable KEY=VALUE flag.
type envList []string

func (l *envList) String() string { return strings.Join(*l, " ") }

func (l *envList) Set(v string) error {
	if k, _, ok := strings.Cut(v, "="); !ok || k == "" {
		return fmt.Errorf("%q: use KEY=VALUE", v)
	}
	*l = append(*l, v)
	return nil
}

func parse() (config, error) {
	var c config
	conc := flag.String("concurrency", "8,64", "concurrent pushes (senders), comma-separated")
	flag.IntVar(&c.messages, "messages", 6000, "messages per run")
	flag.IntVar(&c.docs, "documents", 1000, "documents the messages update")
	flag.IntVar(&c.rounds, "rounds", 3, "rounds; each runs every contender at every concurrency")
	flag.IntVar(&c.memoryMessages, "memory-messages", 30000, "per round, one more run of each consumer with this many messages at the first concurrency, for its memory after them (0: none)")
	flag.IntVar(&c.pool, "pool", 0, "pool_max_conns of every contender's store URL (0: none, so each sizes its pool as the consumer's store does, pgstore.DefaultMaxConns)")
	flag.Var((*envList)(&c.env), "env", "KEY=VALUE added to every consumer's environment (repeatable), e.g. GOMEMLIMIT or "+settings.PprofAddr)
	flag.StringVar(&c.bareHTTP, "bare-http", "", "the built command barehttp (internal/testing/pushload/cmd/barehttp): run it as the contender "+pushload.BareHTTPName+", the smallest push endpoint, as its own process (default: none)")
	flag.StringVar(&c.serverURL, "url", "", "a PostgreSQL server to create the databases on (a superuser's URL); default: a throwaway syncing cluster")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: pushload [flags] NAME=CONSUMER_BINARY ...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	for _, s := range strings.Split(*conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return c, fmt.Errorf("-concurrency %q: use positive integers separated by commas", *conc)
		}
		c.concurrency = append(c.concurrency, n)
	}
	for _, arg := range flag.Args() {
		name, bin, ok := strings.Cut(arg, "=")
		if !ok || name == "" || bin == "" || name == pushload.BareName || name == pushload.BareHTTPName {
			return c, fmt.Errorf("argument %q: use NAME=PATH_TO_CONSUMER_BINARY (a name other than %q and %q)", arg, pushload.BareName, pushload.BareHTTPName)
		}
		c.consumers = append(c.consumers, pushload.Consumer{Name: name, Bin: bin})
	}
	if c.messages < 1 || c.docs < 1 || c.rounds < 1 {
		return c, fmt.Errorf("-messages, -documents and -rounds must be positive")
	}
	return c, nil
}

func run() error {
	cfg, err := parse()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	server := cfg.serverURL
	if server == "" {
		cluster, err := pgtest.StartCluster(ctx) // syncing, as Cloud SQL
		if err != nil {
			return err
		}
		defer cluster.Stop()
		server = cluster.URL
		fmt.Println(cluster)
	}
	if err := showSettings(ctx, server); err != nil {
		return err
	}
	fmt.Printf("load average at start: %s\n", loadAverage())
	msgs := pushload.Messages("run", cfg.messages, cfg.docs)
	var memMsgs []pushload.Message
	if cfg.memoryMessages > 0 {
		memMsgs = pushload.Messages("mem", cfg.memoryMessages, cfg.docs)
	}
	warm := pushload.Messages("warm", 200, 200)
	contenders := []string{pushload.BareName}
	if cfg.bareHTTP != "" {
		contenders = append(contenders, pushload.BareHTTPName)
	}
	for _, c := range cfg.consumers {
		contenders = append(contenders, c.Name)
	}
	var runs []pushload.Run
	n := 0
	for round := range cfg.rounds {
		for _, conc := range cfg.concurrency {
			for i := range contenders {
				name := contenders[(i+round)%len(contenders)]
				n++
				r, err := measure(ctx, cfg, server, fmt.Sprintf("pushload_%d", n), name, conc, warm, msgs)
				if err != nil {
					return fmt.Errorf("round %d, %s at %d: %w", round+1, name, conc, err)
				}
				runs = append(runs, r)
				printRun(round+1, r)
			}
		}
		if memMsgs != nil {
			for i := range cfg.consumers {
				name := cfg.consumers[(i+round)%len(cfg.consumers)].Name
				n++
				r, err := measure(ctx, cfg, server, fmt.Sprintf("pushload_%d", n), name, cfg.concurrency[0], warm, memMsgs)
				if err != nil {
					return fmt.Errorf("round %d, %s memory run: %w", round+1, name, err)
				}
				runs = append(runs, r)
				printRun(round+1, r)
			}
		}
	}
	fmt.Printf("load average at end: %s\n", loadAverage())
	names := make([]string, len(cfg.consumers))
	for i, c := range cfg.consumers {
		names[i] = c.Name
	}
	pushload.Summarize(os.Stdout, runs, names)
	return nil
}

func printRun(round int, r pushload.Run) {
	fmt.Printf("round %d %-9s concurrency %3d: %6d messages in %6.2f s = %6.0f msgs/s, p50 %6.2f ms, p99 %7.2f ms, errors %d",
		round, r.Contender, r.Concurrency, r.Messages, r.Elapsed.Seconds(), r.PerSecond(),
		float64(r.Quantile(0.5).Microseconds())/1000, float64(r.Quantile(0.99).Microseconds())/1000, r.Errors)
	fmt.Printf(", server CPU %.0f µs/msg", float64(r.ServerCPU.Microseconds())/float64(r.Messages))
	if r.Contender != pushload.BareName {
		fmt.Printf(", %s CPU %.0f µs/msg, RSS after %.1f MiB (peak %.1f)", pushload.ProcessLabel(r.Contender), float64(r.CPU.Microseconds())/float64(r.Messages),
			float64(r.RSS)/(1<<20), float64(r.PeakRSS)/(1<<20))
	}
	fmt.Println()
}

// measure runs one contender on a new database and drops it after.
func measure(ctx context.Context, cfg config, server, db, name string, conc int, warm, msgs []pushload.Message) (pushload.Run, error) {
	dbURL, err := createDatabase(ctx, server, db)
	if err != nil {
		return pushload.Run{}, err
	}
	defer dropDatabase(context.WithoutCancel(ctx), server, db)
	if cfg.pool > 0 {
		dbURL, err = withParam(dbURL, "pool_max_conns", strconv.Itoa(cfg.pool))
		if err != nil {
			return pushload.Run{}, err
		}
	}
	if name == pushload.BareName {
		b, err := pushload.OpenBare(ctx, dbURL)
		if err != nil {
			return pushload.Run{}, err
		}
		defer b.Close()
		if w := pushload.Drive(ctx, conc, warm, b.Send); w.Errors > 0 {
			return pushload.Run{}, fmt.Errorf("%d of the warm-up messages failed", w.Errors)
		}
		server0 := serverCPU(server)
		r := pushload.Drive(ctx, conc, msgs, b.Send)
		r.Contender, r.ServerCPU = name, serverCPU(server)-server0
		return r, ctx.Err()
	}
	c := pushload.Consumer{Name: name, Bin: cfg.bareHTTP} // the bare HTTP endpoint, run as a consumer is
	for _, x := range cfg.consumers {
		if x.Name == name {
			c = x
		}
	}
	p, err := pushload.StartConsumer(ctx, c, dbURL, conc, cfg.env...)
	if err != nil {
		return pushload.Run{}, err
	}
	stopped := false
	defer func() {
		if !stopped {
			p.Kill()
		}
	}()
	if w := pushload.Drive(ctx, conc, warm, p.Send); w.Errors > 0 {
		return pushload.Run{}, fmt.Errorf("%d of the warm-up messages failed", w.Errors)
	}
	cpu0, err := p.CPU()
	if err != nil {
		return pushload.Run{}, err
	}
	server0 := serverCPU(server)
	r := pushload.Drive(ctx, conc, msgs, p.Send)
	cpu1, err := p.CPU()
	if err != nil {
		return pushload.Run{}, err
	}
	r.Contender, r.CPU, r.ServerCPU = name, cpu1-cpu0, serverCPU(server)-server0
	if r.RSS, r.PeakRSS, err = p.Memory(); err != nil {
		return pushload.Run{}, err
	}
	stopped = true
	if err := p.Stop(); err != nil {
		return pushload.Run{}, fmt.Errorf("stop %s: %w", name, err)
	}
	return r, ctx.Err()
}

// serverCPU is the CPU time so far of the server at url when it runs on
// this machine, else 0.
func serverCPU(server string) time.Duration {
	u, err := url.Parse(server)
	if err != nil {
		return 0
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return 0
	}
	d, err := pushload.ServerCPU(port)
	if err != nil {
		return 0
	}
	return d
}

func createDatabase(ctx context.Context, server, name string) (string, error) {
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	u, err := url.Parse(server)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

func dropDatabase(ctx context.Context, server, name string) {
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

func withParam(raw, name, value string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set(name, value)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// showSettings prints the server's durability settings.
func showSettings(ctx context.Context, server string) error {
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var version, fsync, syncCommit string
	err = conn.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('fsync'), current_setting('synchronous_commit')").
		Scan(&version, &fsync, &syncCommit)
	if err != nil {
		return err
	}
	fmt.Printf("PostgreSQL %s, fsync %s, synchronous_commit %s\n", version, fsync, syncCommit)
	return nil
}

func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
