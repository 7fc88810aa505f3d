// Package live reads what exists in Google Cloud projects, through Google's Go clients and
// Application Default Credentials, into an audit inventory: Pub/Sub topics and
// subscriptions with their IAM policies, the project's IAM policy and number, the Cloud
// Run services push subscriptions target with their IAM policies, the alert policies and
// Firestore TTL fields the rules look at, and each subscription's oldest unacknowledged
// message age from Cloud Monitoring. Every call is a read.
//
// A project whose topics or subscriptions cannot be listed fails the read. Anything else
// that cannot be read (a permission the auditing identity lacks, an API not enabled, the
// Pub/Sub emulator not serving IAM) is recorded as a gap: the rules see it as unknown and
// give no verdict that would rest on it, and the summary lists it.
package live

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	firestoreadmin "cloud.google.com/go/firestore/apiv1/admin"
	"cloud.google.com/go/iam/apiv1/iampb"
	monitoring "cloud.google.com/go/monitoring/apiv3/v2"
	pubsubapi "cloud.google.com/go/pubsub/v2/apiv1"
	run "cloud.google.com/go/run/apiv2"
	"golang.org/x/sync/errgroup"
	crm "google.golang.org/api/cloudresourcemanager/v1"
	"google.golang.org/api/option"

	"github.com/eventpipe/eventpipe/audit/inventory"
)

// Clients are the Google API clients a read uses. Topics and Subscriptions are required;
// a nil client leaves what it reads unread (a gap), which is how an audit against the
// Pub/Sub emulator, which serves only Pub/Sub, runs.
type Clients struct {
	Topics        *pubsubapi.TopicAdminClient
	Subscriptions *pubsubapi.SubscriptionAdminClient
	Services      *run.ServicesClient
	AlertPolicies *monitoring.AlertPolicyClient
	Metrics       *monitoring.MetricClient
	Firestore     *firestoreadmin.FirestoreAdminClient
	Projects      *crm.Service

	// skipped says why the nil clients were not made.
	skipped string
}

// EmulatorEnv is the variable naming the Pub/Sub emulator (host:port) the Pub/Sub clients
// connect to instead of Google.
const EmulatorEnv = "PUBSUB_EMULATOR_HOST"

// Dial makes the clients with Application Default Credentials (and opts). When
// PUBSUB_EMULATOR_HOST is set, only the Pub/Sub clients are made, pointing at the
// emulator; the rest stays unread.
func Dial(ctx context.Context, opts ...option.ClientOption) (*Clients, error) {
	c := &Clients{}
	var err error
	if c.Topics, err = pubsubapi.NewTopicAdminClient(ctx, opts...); err != nil {
		return nil, fmt.Errorf("connecting to Pub/Sub: %w", err)
	}
	if c.Subscriptions, err = pubsubapi.NewSubscriptionAdminClient(ctx, opts...); err != nil {
		c.Close()
		return nil, fmt.Errorf("connecting to Pub/Sub: %w", err)
	}
	if host := os.Getenv(EmulatorEnv); host != "" {
		c.skipped = fmt.Sprintf("not read: %s=%s points the audit at the Pub/Sub emulator, which serves only Pub/Sub", EmulatorEnv, host)
		return c, nil
	}
	dials := []func() error{
		func() (err error) { c.Services, err = run.NewServicesClient(ctx, opts...); return err },
		func() (err error) { c.AlertPolicies, err = monitoring.NewAlertPolicyClient(ctx, opts...); return err },
		func() (err error) { c.Metrics, err = monitoring.NewMetricClient(ctx, opts...); return err },
		func() (err error) {
			c.Firestore, err = firestoreadmin.NewFirestoreAdminClient(ctx, opts...)
			return err
		},
		func() (err error) { c.Projects, err = crm.NewService(ctx, opts...); return err },
	}
	for _, dial := range dials {
		if err := dial(); err != nil {
			c.Close()
			return nil, fmt.Errorf("connecting to Google Cloud: %w", err)
		}
	}
	return c, nil
}

// Close closes every client that was made.
func (c *Clients) Close() {
	closeClient(c.Topics)
	closeClient(c.Subscriptions)
	closeClient(c.Services)
	closeClient(c.AlertPolicies)
	closeClient(c.Metrics)
	closeClient(c.Firestore)
}

// closeClient closes a client that was made (not nil).
func closeClient[T any, C interface {
	*T
	Close() error
}](c C) {
	if c != nil {
		_ = c.Close()
	}
}

// notRead is the reason recorded for what a nil client leaves unread.
func (c *Clients) notRead(api string) string {
	if c.skipped != "" {
		return c.skipped
	}
	return "not read: no " + api + " client"
}

// Options tune a read.
type Options struct {
	// Projects are the project IDs to read.
	Projects []string
	// Now is the clock the backlog window ends at (default time.Now).
	Now func() time.Time
	// BacklogWindow is how far back the oldest-unacked-age figures are read (default 10m).
	BacklogWindow time.Duration
	// Parallel is how many reads run at once (default 8).
	Parallel int
	// Logger receives one line per gap and per project read (default: discard).
	Logger *slog.Logger
}

// Read reads every project of opts into one inventory.
func Read(ctx context.Context, c *Clients, opts Options) (*inventory.Inventory, error) {
	if c == nil || c.Topics == nil || c.Subscriptions == nil {
		return nil, errors.New("live: the Pub/Sub clients are required")
	}
	if len(opts.Projects) == 0 {
		return nil, errors.New("live: no project to read; give at least one --project")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.BacklogWindow <= 0 {
		opts.BacklogWindow = 10 * time.Minute
	}
	if opts.Parallel <= 0 {
		opts.Parallel = 8
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	inv := &inventory.Inventory{Source: "live " + strings.Join(opts.Projects, ", ")}
	projects := make([]*inventory.Project, len(opts.Projects))
	g, gctx := errgroup.WithContext(ctx)
	for i, id := range opts.Projects {
		projects[i] = &inventory.Project{ID: id}
		r := &reader{c: c, opts: opts, p: projects[i]}
		g.Go(func() error { return r.read(gctx) })
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	inv.Projects = projects
	inv.Sort()
	return inv, nil
}

// reader reads one project. Its parts run at once; mu guards the project's policies and
// gaps, which several of them add to.
type reader struct {
	c    *Clients
	opts Options
	p    *inventory.Project
	mu   sync.Mutex
}

// collect gathers what an API list call yields (its iterator's All): every item, or those
// before the first error and that error.
func collect[T any](items iter.Seq2[T, error]) ([]T, error) {
	var out []T
	for x, err := range items {
		if err != nil {
			return out, err
		}
		out = append(out, x)
	}
	return out, nil
}

// gap records something that could not be read.
func (r *reader) gap(kind inventory.GapKind, resource string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.p.AddGap(kind, resource, err.Error())
}

// setPolicy records a policy read.
func (r *reader) setPolicy(resource string, p *iampb.Policy) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.p.SetPolicy(resource, p)
}

func (r *reader) read(ctx context.Context) error {
	start := time.Now()
	if err := r.readPubSub(ctx); err != nil {
		return fmt.Errorf("project %s: %w", r.p.ID, err)
	}
	// The rest is independent: read it at once.
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return r.readPolicies(gctx) })
	g.Go(func() error { r.readProject(gctx); return nil })
	g.Go(func() error { r.readServices(gctx); return r.readTTLFields(gctx) })
	g.Go(func() error { r.readAlertPolicies(gctx); return nil })
	g.Go(func() error { r.readBacklog(gctx); return nil })
	if err := g.Wait(); err != nil {
		return fmt.Errorf("project %s: %w", r.p.ID, err)
	}
	for _, g := range inventory.GroupGaps(r.p.Gaps) {
		first := ""
		if len(g.Resources) > 0 {
			first = g.Resources[0]
		}
		r.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "audit could not read",
			slog.String("project", r.p.ID), slog.String("kind", string(g.Kind)), slog.Int("resources", len(g.Resources)),
			slog.String("first", first), slog.String("reason", g.Reason))
	}
	r.opts.Logger.LogAttrs(ctx, slog.LevelInfo, "project read", slog.String("project", r.p.ID),
		slog.Int("topics", len(r.p.Topics)), slog.Int("subscriptions", len(r.p.Subscriptions)),
		slog.Int("services", len(r.p.Services)), slog.Int("gaps", len(r.p.Gaps)),
		slog.Duration("took", time.Since(start)))
	return nil
}
