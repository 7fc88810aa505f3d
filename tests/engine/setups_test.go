package engine_test

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/consumer/settings"
	"github.com/eventpipe/eventpipe/examples/orders/orders"
	"github.com/eventpipe/eventpipe/internal/testing/gcpstandin"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optpreview"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"gopkg.in/yaml.v3"
)

// TestExampleUnderTheRealEngine runs examples/orders, a team's own program, as an inline
// program: preview, up (its store is PostgreSQL on 10.0.0.5, which the stand-in lets the
// consumer reach only through the Direct VPC egress the example declares), a re-preview
// with nothing to do, and destroy, which the example's protected pipeline refuses (the
// components protect a pipeline's state unless told otherwise) while every resource stays.
func TestExampleUnderTheRealEngine(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	// The example's one secure value is encrypted with another passphrase: it is set
	// here as a secret instead.
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(mustRead(t, filepath.Join(repo, "examples", "orders", "Pulumi.dev.yaml"))), &doc); err != nil {
		t.Fatal(err)
	}
	cfg, _ := doc["config"].(map[string]any)
	if _, ok := cfg["orders:storeUrl"]; !ok {
		t.Fatal("examples/orders/Pulumi.dev.yaml has no orders:storeUrl")
	}
	delete(cfg, "orders:storeUrl")
	config, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	d := deployConfig(t, "orders", "dev", config, orders.Program, projectsIn(t, "orders", config))
	if err := d.stack.SetConfig(ctx, "orders:storeUrl", auto.ConfigValue{Value: "postgres://app:engine-test@10.0.0.5/orders", Secret: true}); err != nil {
		t.Fatal(err)
	}
	// The example's production waits, shortened to the stand-in's.
	if err := d.stack.SetConfigWithOptions(ctx, "orders:setup", auto.ConfigValue{Value: fmt.Sprintf(`{"apiPropagation":%q,"grantPropagation":%q}`, shortWait, shortWait)}, nil); err != nil {
		t.Fatal(err)
	}
	created := firstUpAndRepreview(t, d)
	before(t, created, "create gcp:secretmanager/secretVersion:SecretVersion ", "create gcp:cloudrunv2/service:Service ")
	// An immutable change (the warehouse subscription's filter) would replace a protected
	// subscription: the engine refuses to plan it.
	if err := d.stack.SetConfig(ctx, "orders:warehouseFilter", auto.ConfigValue{Value: `attributes.region = "eu"`}); err != nil {
		t.Fatal(err)
	}
	if pre, err := d.stack.Preview(ctx); err == nil || !strings.Contains(err.Error(), "marked for protection") {
		t.Errorf("a filter change of the example's protected subscription previews %v (%v), want refused by protect", pre.ChangeSummary, err)
	}
	if err := d.stack.RemoveConfig(ctx, "orders:warehouseFilter"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.stack.Destroy(ctx); err == nil || !strings.Contains(err.Error(), "protect") {
		t.Errorf("destroy of the example's protected pipeline: %v, want refused by protect", err)
	}
	// The pipeline's data path stays: its topics and subscriptions (protect) and its
	// service (deletion protection, and the subscriptions pushing to it).
	left, err := gcpstandin.ReadState(d.standin)
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, r := range left {
		held["create "+r.Type+" "+r.Name] = true
	}
	for _, op := range created {
		for _, kept := range []string{"gcp:pubsub/topic:Topic ", "gcp:pubsub/subscription:Subscription ", "gcp:cloudrunv2/service:Service "} {
			if strings.HasPrefix(op, "create "+kept) && !held[op] {
				t.Errorf("a destroy refused by protect deleted %s", strings.TrimPrefix(op, "create "))
			}
		}
	}
}

// before fails unless the first op starting with first comes before every op starting
// with then (and both occur); a pattern ending in $ matches one op exactly.
func before(t *testing.T, ops []string, first, then string) {
	t.Helper()
	match := func(p string) func(string) bool {
		return func(op string) bool {
			if exact, ok := strings.CutSuffix(p, "$"); ok {
				return op == exact
			}
			return strings.HasPrefix(op, p)
		}
	}
	i := slices.IndexFunc(ops, match(first))
	j := slices.IndexFunc(ops, match(then))
	if i < 0 || j < 0 || i > j {
		t.Errorf("ops: want %q (at %d) before %q (at %d):\n%s", first, i, then, j, strings.Join(ops, "\n"))
	}
}

// setup is a variant of the dev stack: its settings with pipelines replaced by one.
type setup struct {
	name string
	// pipeline is the one pipeline's config (eventpipe:pipelines.orders).
	pipeline map[string]any
	// config adds or replaces keys of the dev stack's config.
	config map[string]any
	// enabledAPIs tells the stand-in which APIs are enabled outside the stack.
	enabledAPIs string
	// refused, when set, is what preview's error must say; upRefused what up's must.
	refused, upRefused []string
	// order lists pairs of ops prefixes: the first created before the second.
	order [][2]string
	// absent lists ops prefixes a first up must not have.
	absent []string
	// check, when set, inspects the stand-in's state after the first up.
	check func(t *testing.T, state map[string]gcpstandin.Record)
	// standin adds to the stand-in's environment (standinEnv).
	standin map[string]string
	// secretStore, when set, is the stack's eventpipe:store, set as a secret.
	secretStore string
	// waits, when set, replaces shortWait as the stack's waits.
	waits string
	// upOps, with upRefused, are the ops the failed up may do; it must do the first.
	upOps []string
}

const image = "europe-west1-docker.pkg.dev/eventpipe-dev/eventpipe/consumer:dev"

// TestSetupsUnderTheRealEngine takes each documented setup through a first up under the
// stand-in's prerequisites: it deploys, or it is refused at preview with a message that
// says how to fix it, or (an opt-out of managed APIs without APIs enabled centrally) up
// fails with the 403 naming the API, which is why that opt-out needs central management.
func TestSetupsUnderTheRealEngine(t *testing.T) {
	push := map[string]any{"apply": map[string]any{"delivery": "push"}}
	vpc := map[string]any{"network": "shared-vpc", "subnetwork": "run-europe-west1"}
	const privateStore = "postgres://app@10.0.0.5/orders"
	unmanaged := map[string]any{"eventpipe:manageApis": false}
	pushed := map[string]any{"consumer": map[string]any{"image": image}, "subscriptions": push}
	setups := []setup{{
		name: "private store without vpcAccess",
		pipeline: map[string]any{
			"consumer":      map[string]any{"image": image, "store": privateStore},
			"subscriptions": push,
		},
		refused: []string{"eventpipe:pipelines.orders.consumer.vpcAccess", "10.0.0.5", "set eventpipe:pipelines.orders.consumer.vpcAccess.network"},
	}, {
		name: "private store with vpcAccess",
		pipeline: map[string]any{
			"consumer":      map[string]any{"image": image, "vpcAccess": vpc},
			"subscriptions": push,
		},
		secretStore: "postgres://app:engine-test@10.0.0.5/orders",
		// The push subscription after the service it pushes to.
		order: [][2]string{{"create gcp:cloudrunv2/service:Service ", "create gcp:pubsub/subscription:Subscription orders-apply$"}},
	}, {
		name:        "APIs managed centrally",
		pipeline:    pushed,
		config:      unmanaged,
		enabledAPIs: "*",
		absent:      []string{"create gcp:projects/service:Service "},
	}, {
		name:      "APIs opted out but not enabled",
		pipeline:  pushed,
		config:    unmanaged,
		upRefused: []string{"Error 403", ".googleapis.com has not been used in project 100000000001", "SERVICE_DISABLED"},
	}, {
		// A project whose deploying identity has no Cloud Resource Manager: enabling it
		// from the stack fails on its own read-back (terraform-provider-google#6101), and
		// no other API was enabled beside it (docs/deploy.md: enable it first).
		name:      "Cloud Resource Manager not enabled",
		pipeline:  pushed,
		standin:   map[string]string{gcpstandin.EnvEnabledAPIs: strings.Join(gcpstandin.DefaultAPIs, ",")},
		upRefused: []string{"api-cloudresourcemanager", "reading project eventpipe-dev back after enabling cloudresourcemanager.googleapis.com", "SERVICE_DISABLED"},
		upOps:     []string{"enable gcp:projects/service:Service api-cloudresourcemanager", "create gcp:projects/service:Service api-serviceusage"},
	}, {
		// Without the waits, the first resource of an API meets the 403 an enablement
		// gives while it propagates (here a minute), which the provider does not retry.
		name:      "no wait for the APIs",
		pipeline:  pushed,
		waits:     "0s",
		standin:   map[string]string{gcpstandin.EnvPropagation: "1m"},
		upRefused: []string{"Error 403", "If you enabled this API recently, wait a few minutes", "SERVICE_DISABLED"},
	}, {
		name: "pull-only on a worker pool",
		pipeline: map[string]any{
			"consumer":      map[string]any{"image": image, "workerPool": true, "minInstances": 1},
			"subscriptions": map[string]any{"process": map[string]any{"delivery": "pull"}},
		},
		order: [][2]string{
			{"create gcp:pubsub/subscription:Subscription ", "create gcp:cloudrunv2/workerPool:WorkerPool "},
			{"create gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember ", "create gcp:cloudrunv2/workerPool:WorkerPool "},
		},
	}, {
		name: "handler container",
		pipeline: map[string]any{
			"consumer": map[string]any{"image": image, "handler": map[string]any{
				"image": "europe-west1-docker.pkg.dev/eventpipe-dev/eventpipe/orders-handler:1.0.0",
			}},
			"subscriptions": push,
		},
	}, {
		name: "pull-only with a handler on a worker pool",
		pipeline: map[string]any{
			"consumer": map[string]any{"image": image, "workerPool": true, "minInstances": 1, "handler": map[string]any{
				"image": "europe-west1-docker.pkg.dev/eventpipe-dev/eventpipe/orders-handler:1.0.0", "healthPath": "/ready",
			}},
			"subscriptions": map[string]any{"process": map[string]any{"delivery": "pull"}},
		},
		order: [][2]string{
			{"create gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember ", "create gcp:cloudrunv2/workerPool:WorkerPool "},
		},
		absent: []string{"create gcp:cloudrunv2/service:Service orders"},
		check:  handlerOnWorkerPool,
	}}
	for _, s := range setups {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			firstUp(t, s)
		})
	}
}

func firstUp(t *testing.T, s setup) {
	ctx := t.Context()
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(mustRead(t, filepath.Join(repo, "stacks", "Pulumi.dev.yaml"))), &doc); err != nil {
		t.Fatal(err)
	}
	cfg := doc["config"].(map[string]any)
	cfg["eventpipe:pipelines"] = map[string]any{"orders": s.pipeline}
	for k, v := range s.config {
		cfg[k] = v
	}
	config, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	env := projectsIn(t, "eventpipe", config)
	if s.enabledAPIs != "" {
		env[gcpstandin.EnvEnabledAPIs] = s.enabledAPIs
	}
	maps.Copy(env, s.standin)
	config = withShortWaits(t, config)
	if s.waits != "" {
		config = []byte(strings.ReplaceAll(string(config), shortWait, s.waits))
	}
	d := deployConfig(t, "eventpipe", "dev", config, components.Program(components.ProgramOptions{}), env)
	if s.secretStore != "" {
		if err := d.stack.SetConfig(ctx, "eventpipe:store", auto.ConfigValue{Value: s.secretStore, Secret: true}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = d.stack.Preview(ctx)
	if s.refused != nil {
		if err == nil {
			t.Fatal("preview succeeded, want refused")
		}
		for _, want := range s.refused {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("preview's refusal does not say %q:\n%v", want, err)
			}
		}
		return
	}
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	_, err = d.stack.Up(ctx)
	if s.upRefused != nil {
		if err == nil {
			t.Fatal("up succeeded, want refused")
		}
		for _, want := range s.upRefused {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("up's failure does not say %q:\n%v", want, err)
			}
		}
		if s.upOps != nil {
			ops := d.ops(t)
			for _, op := range ops {
				if !slices.Contains(s.upOps, op) {
					t.Errorf("the failed up did %q; want nothing but %v", op, s.upOps)
				}
			}
			if !slices.Contains(ops, s.upOps[0]) {
				t.Errorf("the failed up did %v, want %q", ops, s.upOps[0])
			}
		}
		return
	}
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	ops := d.ops(t)
	checkOrder(t, ops)
	// Day two: the next preview, against the state as the API reported it, has
	// nothing to do.
	again, err := d.stack.Preview(ctx, optpreview.Diff())
	if err != nil {
		t.Fatalf("second preview: %v", err)
	}
	if n := count(again.ChangeSummary, apitype.OpCreate, apitype.OpUpdate, apitype.OpReplace, apitype.OpDelete); n != 0 {
		t.Errorf("second preview: %v, want nothing to do:\n%s", again.ChangeSummary, again.StdOut)
	}
	for _, o := range s.order {
		before(t, ops, o[0], o[1])
	}
	for _, a := range s.absent {
		if i := slices.IndexFunc(ops, func(op string) bool { return strings.HasPrefix(op, a) }); i >= 0 {
			t.Errorf("first up: %s", ops[i])
		}
	}
	if s.check != nil {
		state, err := gcpstandin.ReadState(d.standin)
		if err != nil {
			t.Fatal(err)
		}
		s.check(t, state)
	}
	if _, err := d.stack.Destroy(ctx, optdestroy.Remove()); err != nil {
		t.Fatalf("destroy: %v", err)
	}
}

// handlerOnWorkerPool checks the deployed worker pool of a pull-only consumer with a
// handler: the handler container beside the consumer (its port in HANDLER_PORT), the
// consumer depending on it and told its URL and health path, which it waits for before
// pulling (the pool has no probes: the stand-in refuses them, as pulumi-gcp v8 does).
func handlerOnWorkerPool(t *testing.T, state map[string]gcpstandin.Record) {
	t.Helper()
	var pool map[string]any
	for _, r := range state {
		if r.Type == "gcp:cloudrunv2/workerPool:WorkerPool" {
			pool = r.State
		}
	}
	if pool == nil {
		t.Fatal("no worker pool deployed")
	}
	tmpl, _ := pool["template"].(map[string]any)
	cs, _ := tmpl["containers"].([]any)
	byName := map[string]map[string]string{} // container: env
	deps := map[string][]any{}
	for _, c := range cs {
		m, _ := c.(map[string]any)
		name, _ := m["name"].(string)
		env := map[string]string{}
		for _, e := range m["envs"].([]any) {
			em := e.(map[string]any)
			v, _ := em["value"].(string)
			env[em["name"].(string)] = v
		}
		byName[name] = env
		deps[name], _ = m["dependsOns"].([]any)
	}
	h, ok := byName[spec.HandlerContainer]
	if !ok || h["HANDLER_PORT"] != "8081" {
		t.Fatalf("worker pool containers %v: want the handler with HANDLER_PORT 8081", byName)
	}
	if !slices.Contains(deps["consumer"], any(spec.HandlerContainer)) {
		t.Errorf("the consumer depends on %v, not the handler", deps["consumer"])
	}
	if c := byName["consumer"]; c[settings.HandlerURL] != "http://localhost:8081" || c[settings.HandlerHealthPath] != "/ready" {
		t.Errorf("consumer env %v: want the handler's URL and health path", c)
	}
}
