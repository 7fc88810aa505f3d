package components_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/settings"
	"github.com/eventpipe/eventpipe/spec"
)

// TestConsumerEnvRoundTrips: for generated consumer settings (service name, collection
// prefix, request timeout, concurrency and memory, a routes file, accounts calling back with
// or without an audience of their own, a handler with or without its own health path, push,
// pull or both), the environment the component sets on the service is read by the
// consumer's own parser (settings.Parse) as the stack config says: every variable the
// component sets is one of consumer/settings, and written again from what was read, each
// is the same text.
func TestConsumerEnvRoundTrips(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 0xe))
	names := map[string]bool{}
	for _, v := range settings.Vars() {
		names[v.Name] = true
	}
	for i := range 24 {
		g := genConsumerOf(rng, i)
		svc := one(t, declareStack(t, stackHead+g.yaml), tService, "orders")
		vars := env(t, svc)
		for name := range vars {
			if !names[name] && !strings.HasPrefix(name, "OTEL_") && name != "GOOGLE_CLOUD_PROJECT" {
				t.Errorf("case %d: the component sets %s, which consumer/settings does not list", i, name)
			}
		}
		delete(vars, settings.Store) // a secret reference in some cases; the store has tests of its own
		e, err := settings.Parse(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
		if err != nil {
			t.Fatalf("case %d:\n%s\nthe consumer refuses the environment %v: %v", i, g.yaml, vars, err)
		}
		want := g.want
		if e.Environment != "dev" || e.Service != want.Service || e.CollectionPrefix != want.CollectionPrefix || e.RequestTimeout != want.RequestTimeout ||
			e.Routes != want.Routes || !slices.Equal(e.CallbackAccounts, want.CallbackAccounts) || e.CallbackAudience != want.CallbackAudience ||
			e.HandlerURL != want.HandlerURL || e.HandlerHealthPath != want.HandlerHealthPath || (g.pull && e.PullMaxOutstandingMessages < 1) ||
			(g.push) != (e.OIDCAudience != "") || (g.pull) != (len(e.PullSubscriptions) == 1) {
			t.Errorf("case %d:\n%s\nread %+v\nwant %+v (push %v, pull %v)", i, g.yaml, e, want, g.push, g.pull)
		}
		for name, text := range vars {
			if names[name] && name != settings.MemoryLimit && e.Value(name) != text {
				t.Errorf("case %d: %s is %q on the service, written again %q", i, name, text, e.Value(name))
			}
		}
	}
}

// genConsumer is a generated pipeline consumer: its stack config (YAML under the
// pipeline's consumer) and what the consumer should read from its environment.
type genConsumer struct {
	yaml       string
	push, pull bool
	want       settings.Env
}

func genConsumerOf(rng *rand.Rand, i int) genConsumer {
	var g genConsumer
	g.want.HandlerHealthPath = settings.DefaultHandlerHealthPath
	var y strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&y, "        "+format+"\n", a...) }
	w("minInstances: 1")
	g.want.Service = "orders-consumer"
	if rng.IntN(2) == 0 {
		g.want.Service = fmt.Sprintf("orders-%d-consumer", i)
		w("serviceName: %s", g.want.Service)
	}
	g.want.CollectionPrefix = spec.PipelineCollectionPrefix("orders")
	if rng.IntN(2) == 0 {
		g.want.CollectionPrefix = []string{"ops_", "eventpipe_orders_v2_", "billing_"}[rng.IntN(3)]
		w("collectionPrefix: %s", g.want.CollectionPrefix)
	}
	g.want.RequestTimeout = spec.DefaultRequestTimeout
	if rng.IntN(2) == 0 {
		g.want.RequestTimeout = time.Duration(10+rng.IntN(591)) * time.Second
		w("requestTimeout: %s", []string{settings.FormatDuration(g.want.RequestTimeout), g.want.RequestTimeout.String()}[rng.IntN(2)])
	}
	if rng.IntN(2) == 0 {
		w("concurrency: %d", 1+rng.IntN(80))
	}
	withHandler := rng.IntN(2) == 0
	if withHandler {
		w("memory: 2Gi") // room for the handler beside the consumer
	} else {
		w("memory: %s", []string{"512Mi", "1Gi", "2Gi"}[rng.IntN(3)])
	}
	if rng.IntN(2) == 0 {
		g.want.Routes = "/etc/eventpipe/routes-" + fmt.Sprint(i) + ".json"
		w("routes: %s", g.want.Routes)
	}
	g.push, g.pull = true, rng.IntN(2) == 0
	if rng.IntN(3) == 0 {
		g.push, g.pull = false, true
	}
	if g.push { // unset, the callback audience is the push audience
		g.want.CallbackAudience = "acme-dev/orders/pubsub-push"
	}
	if n := rng.IntN(3); n > 0 {
		accounts := []string{"billing-jobs@acme-dev.iam.gserviceaccount.com", "sync@acme-ops.iam.gserviceaccount.com"}[:n]
		g.want.CallbackAccounts = accounts
		w("callbackAccounts: [%s]", strings.Join(accounts, ", "))
		g.want.CallbackAudience = "acme-dev/orders/pubsub-push"
		if rng.IntN(2) == 0 || !g.push {
			g.want.CallbackAudience = "https://orders.example/callback-" + fmt.Sprint(i)
			w("callbackAudience: %s", g.want.CallbackAudience)
		}
	}
	if withHandler {
		port := 9000 + rng.IntN(100)
		g.want.HandlerURL, g.want.HandlerHealthPath = fmt.Sprintf("http://localhost:%d", port), "/healthz"
		w("handler:")
		w("  image: europe-docker.pkg.dev/acme/orders/handler:2.0.1")
		w("  port: %d", port)
		if rng.IntN(2) == 0 {
			g.want.HandlerHealthPath = "/ready-" + fmt.Sprint(i)
			w("  healthPath: %s", g.want.HandlerHealthPath)
		}
	}
	y.WriteString("      subscriptions:\n")
	if g.push {
		y.WriteString("        main:\n          delivery: push\n")
	}
	if g.pull {
		y.WriteString("        work:\n          delivery: pull\n")
	}
	g.yaml = y.String()
	return g
}
