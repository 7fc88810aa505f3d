package components_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/consumer/limits"
	"github.com/eventpipe/eventpipe/consumer/settings"
	"github.com/eventpipe/eventpipe/render"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// env returns the container environment of a service as a map; a value
// read from a secret shows as "secret:SECRET@VERSION".
func env(t *testing.T, svc render.State) map[string]string {
	t.Helper()
	out := map[string]string{}
	list, _ := input(svc, "template.containers.0.envs").([]any)
	for _, e := range list {
		m := e.(map[string]any)
		if v, ok := m["value"].(string); ok {
			out[m["name"].(string)] = v
			continue
		}
		ref := input(render.State{Inputs: m}, "valueSource.secretKeyRef")
		r, _ := ref.(map[string]any)
		out[m["name"].(string)] = fmt.Sprintf("secret:%v@%v", r["secret"], r["version"])
	}
	return out
}

// memoryLimit is GOMEMLIMIT for a container of mib MiB.
func memoryLimit(mib int64) string { return strconv.FormatInt(limits.MemoryLimit(mib<<20), 10) }

func TestConsumer(t *testing.T) {
	plan := declareStack(t, baseStack)
	svc := one(t, plan, tService, "orders")
	concurrency := limits.MaxConcurrency(512<<20, limits.MaxMessageBytes, 80)
	wantEnv := map[string]string{
		settings.Environment:                "dev",
		settings.Service:                    "orders-consumer",
		settings.Version:                    "1.2.3",
		settings.Store:                      "firestore://acme-dev/(default)",
		settings.OIDCAudience:               "acme-dev/orders/pubsub-push",
		settings.PushAccounts:               pushEmail,
		settings.PullSubscriptions:          "projects/acme-dev/subscriptions/orders-work",
		settings.CollectionPrefix:           "eventpipe_orders_",
		settings.RequestTimeout:             "60s",
		settings.MemoryLimit:                memoryLimit(512),
		settings.PullMaxOutstandingMessages: strconv.Itoa(concurrency),
	}
	if got := env(t, svc); !equalJSON(got, wantEnv) {
		t.Errorf("env =\n%v\nwant\n%v", got, wantEnv)
	}
	if _, hasPort := env(t, svc)["PORT"]; hasPort {
		t.Error("PORT is reserved by Cloud Run and must not be set")
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"name", input(svc, "name"), "orders-consumer"},
		{"location", input(svc, "location"), spec.DefaultRegion},
		{"ingress", input(svc, "ingress"), "INGRESS_TRAFFIC_INTERNAL_ONLY"},
		{"custom audience", input(svc, "customAudiences.0"), "acme-dev/orders/pubsub-push"},
		{"service account", input(svc, "template.serviceAccount"), consumerEmail},
		{"timeout", input(svc, "template.timeout"), "60s"},
		{"concurrency held to what 512Mi holds", input(svc, "template.maxInstanceRequestConcurrency"), float64(concurrency)},
		{"execution environment", input(svc, "template.executionEnvironment"), "EXECUTION_ENVIRONMENT_GEN2"},
		{"deletion protection explicit", input(svc, "deletionProtection"), true},
		{"min instances", input(svc, "template.scaling.minInstanceCount"), float64(1)},
		{"max instances", input(svc, "template.scaling.maxInstanceCount"), float64(10)},
		{"image", input(svc, "template.containers.0.image"), "europe-docker.pkg.dev/acme/eventpipe/consumer:1.2.3"},
		{"port", input(svc, "template.containers.0.ports.containerPort"), float64(8080)},
		{"startup probe", input(svc, "template.containers.0.startupProbe.httpGet.path"), "/healthz"},
		{"liveness probe", input(svc, "template.containers.0.livenessProbe.httpGet.path"), "/healthz"},
		{"cpu", input(svc, "template.containers.0.resources.limits.cpu"), "1"},
		{"memory", input(svc, "template.containers.0.resources.limits.memory"), "512Mi"},
		{"cpu always allocated for pull", input(svc, "template.containers.0.resources.cpuIdle"), false},
		{"role label", input(svc, "labels.eventpipe_role"), "consumer"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %#v, want %#v", c.what, c.got, c.want)
		}
	}
	if d, _ := input(svc, "description").(string); !strings.Contains(d, fmt.Sprintf("request concurrency %d, not the configured 80", concurrency)) {
		t.Errorf("description does not say why concurrency is lower: %q", d)
	}
	grant := one(t, plan, tProjectIAM, "orders-run-datastore-user")
	if input(grant, "role") != components.RoleDatastore || input(grant, "member") != "serviceAccount:"+consumerEmail || input(grant, "project") != "acme-dev" {
		t.Errorf("store grant = %v", grant.Inputs)
	}
	b, _ := json.Marshal(plan)
	if strings.Contains(string(b), "allUsers") || strings.Contains(string(b), "allAuthenticatedUsers") {
		t.Error("consumer must never be public")
	}
}

// TestConsumerSizing: GOMEMLIMIT follows the container's memory, and the
// request concurrency (with the pull flow control) is the configured one
// unless memory cannot hold that many messages of maxMessageBytes.
func TestConsumerSizing(t *testing.T) {
	cases := []struct {
		name, settings string
		mib            int64
		wantConc       int
		pulls          bool
	}{
		{"small messages keep the configured concurrency", "        maxMessageBytes: 65536\n", 512, 80, false},
		{"gen1 256Mi with maximum-size messages", "        memory: 256Mi\n        executionEnvironment: gen1\n", 256, limits.MaxConcurrency(256<<20, limits.MaxMessageBytes, 80), false},
		{"configured below what memory holds", "        memory: 4Gi\n        concurrency: 20\n", 4096, 20, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(pushOnly, "        minInstances: 1\n", "        minInstances: 1\n"+tc.settings, 1)
			svc := one(t, declareStack(t, doc), tService, "orders")
			if got := input(svc, "template.maxInstanceRequestConcurrency"); got != float64(tc.wantConc) {
				t.Errorf("concurrency = %v, want %d", got, tc.wantConc)
			}
			e := env(t, svc)
			if e[settings.MemoryLimit] != memoryLimit(tc.mib) {
				t.Errorf("GOMEMLIMIT = %s, want %s", e[settings.MemoryLimit], memoryLimit(tc.mib))
			}
			if _, ok := e[settings.PullMaxOutstandingMessages]; ok {
				t.Error("a push-only consumer got pull flow control")
			}
			if d, _ := input(svc, "description").(string); strings.Contains(d, "not the configured") != (tc.wantConc < 80 && !strings.Contains(tc.settings, "concurrency")) {
				t.Errorf("description = %q", d)
			}
		})
	}
	gen1 := one(t, declareStack(t, strings.Replace(pushOnly, "        minInstances: 1\n", "        minInstances: 1\n        memory: 256Mi\n        executionEnvironment: gen1\n", 1)), tService, "orders")
	if got := input(gen1, "template.executionEnvironment"); got != "EXECUTION_ENVIRONMENT_GEN1" {
		t.Errorf("execution environment = %v, want gen1 set explicitly", got)
	}
}

// pushOnly is baseStack without its pull subscription.
var pushOnly = strings.Replace(baseStack, "        work:\n          delivery: pull\n          exactlyOnce: true\n", "", 1)

func TestConsumerSettings(t *testing.T) {
	doc := strings.Replace(baseStack, "        minInstances: 1\n", `        minInstances: 2
        maxInstances: 4
        requestTimeout: 5m
        concurrency: 6
        ingress: internal-and-cloud-load-balancing
        routes: /etc/eventpipe/routes.yaml
        collectionPrefix: ops_
        store: postgres://db.internal/eventpipe
        serviceAccount: shared-runner@acme-dev.iam.gserviceaccount.com
`, 1)
	plan := declareStack(t, doc)
	svc := one(t, plan, tService, "orders")
	e := env(t, svc)
	if e[settings.Routes] != "/etc/eventpipe/routes.yaml" || e[settings.CollectionPrefix] != "ops_" || e[settings.Store] != "postgres://db.internal/eventpipe" {
		t.Errorf("env = %v", e)
	}
	if input(svc, "ingress") != "INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER" || input(svc, "template.timeout") != "300s" ||
		input(svc, "template.maxInstanceRequestConcurrency") != float64(6) || input(svc, "template.scaling.maxInstanceCount") != float64(4) {
		t.Errorf("service inputs = %v", svc.Inputs)
	}
	// A given account is used as it is: none is created, and it gets the pull grant.
	if input(svc, "template.serviceAccount") != "shared-runner@acme-dev.iam.gserviceaccount.com" {
		t.Errorf("service account = %v", input(svc, "template.serviceAccount"))
	}
	if _, ok := custom(plan, tAccount)["orders-run"]; ok {
		t.Error("an account was created although consumer.serviceAccount is set")
	}
	if g := one(t, plan, tSubIAM, "orders-work-consumer-subscriber"); input(g, "member") != "serviceAccount:shared-runner@acme-dev.iam.gserviceaccount.com" {
		t.Errorf("pull grant member = %v", input(g, "member"))
	}
}

func TestConsumerStoreGrantFollowsTheStore(t *testing.T) {
	tests := []struct {
		store       string
		wantProject string // "" means no datastore grant at all
	}{
		{"firestore://acme-dev/(default)", "acme-dev"},
		{"firestore://shared-data/events", "shared-data"},
		{"postgres://db.internal/eventpipe", ""},
	}
	for _, tc := range tests {
		t.Run(tc.store, func(t *testing.T) {
			doc := strings.Replace(baseStack, "        minInstances: 1\n", "        minInstances: 1\n        store: "+tc.store+"\n", 1)
			grants := custom(declareStack(t, doc), tProjectIAM)
			g, ok := grants["orders-run-datastore-user"]
			switch {
			case tc.wantProject == "" && ok:
				t.Errorf("store %s needs no Google IAM role, got grant %v", tc.store, g.Inputs)
			case tc.wantProject != "" && !ok:
				t.Errorf("no datastore grant for store %s; have %v", tc.store, keys(grants))
			case ok && input(g, "project") != tc.wantProject:
				t.Errorf("datastore grant on project %v, want %s (the store's project)", input(g, "project"), tc.wantProject)
			}
		})
	}
}

// TestConsumerSecretStore: a store URL with a password is never written
// into the service: it goes to a Secret Manager secret, the service reads
// the version written, and only the consumer's account may access it.
func TestConsumerSecretStore(t *testing.T) {
	const url = "postgres://app:hunter2@db.internal/eventpipe"
	plan := runMocked(t, func(ctx *pulumi.Context) error {
		_, err := components.NewConsumer(ctx, "orders", &components.ConsumerArgs{
			Project: pulumi.String("acme-dev"),
			Consumer: spec.Consumer{
				Image:       pulumi.String("europe-docker.pkg.dev/acme/eventpipe/consumer:1.2.3"),
				StoreSecret: pulumi.ToSecret(pulumi.String(url)).(pulumi.StringOutput),
			},
		})
		return err
	})
	b, _ := json.Marshal(plan)
	if strings.Contains(string(b), "hunter2") {
		t.Fatal("the store password is in the plan")
	}
	want := map[string]int{tAccount: 1, tService: 1, tSecret: 1, tSecretVer: 1, tSecretIAM: 1, tSleep: 1}
	if got := countByType(plan); !equalJSON(got, want) {
		t.Fatalf("resources = %v, want %v (no datastore grant for a PostgreSQL store)", got, want)
	}
	svc := one(t, plan, tService, "orders")
	if got := env(t, svc)[settings.Store]; got != "secret:orders-consumer-store@1" {
		t.Errorf("EVENTPIPE_STORE = %q, want a reference to the secret's version", got)
	}
	if ver := one(t, plan, tSecretVer, "orders-store"); input(ver, "secretData") != render.Secret || input(ver, "secret") != "projects/acme-dev/secrets/orders-consumer-store" {
		t.Errorf("secret version = %v", ver.Inputs)
	}
	grant := one(t, plan, tSecretIAM, "orders-store-accessor")
	if input(grant, "role") != components.RoleSecretAccessor || input(grant, "member") != "serviceAccount:orders-run@acme-dev.iam.gserviceaccount.com" ||
		input(grant, "secretId") != "orders-consumer-store" {
		t.Errorf("secret grant = %v", grant.Inputs)
	}
	if !waitsFor(plan, svc, grant.URN) {
		t.Errorf("the service does not wait for its secret grant: %v", svc.Dependencies)
	}
	// Cloud Run checks the secret's grant at deploy time, and grants take minutes.
	wait := one(t, plan, tSleep, "orders-grants-propagated")
	if !slices.Contains(svc.Dependencies, wait.URN) || !slices.Contains(wait.Dependencies, grant.URN) || input(wait, "createDuration") != "2m0s" {
		t.Errorf("grant wait %v (depends on %v), service depends on %v: want the service after a 2m wait after the grant", wait.Inputs, wait.Dependencies, svc.Dependencies)
	}
}

// TestDeletionProtectionIsExplicit: the provider's default (on) would make
// every destroy of a short-lived stack fail, so both values are written.
func TestDeletionProtectionIsExplicit(t *testing.T) {
	for _, protect := range []bool{true, false} {
		doc := strings.Replace(baseStack, "  eventpipe:pipelines:\n", fmt.Sprintf("  eventpipe:defaults:\n    protect: %v\n  eventpipe:pipelines:\n", protect), 1)
		plan := declareStack(t, doc)
		if got := input(one(t, plan, tService, "orders"), "deletionProtection"); got != protect {
			t.Errorf("protect %v: deletionProtection = %v", protect, got)
		}
		for name, s := range custom(plan, tSub) {
			if s.Protect != protect {
				t.Errorf("protect %v: subscription %s protect = %v", protect, name, s.Protect)
			}
		}
	}
}

// TestConsumerRejectsBadArgs: sizes Cloud Run would refuse and an untagged
// image are errors on the argument paths, before anything is declared.
func TestConsumerRejectsBadArgs(t *testing.T) {
	err, regs := runErr(func(ctx *pulumi.Context) error {
		_, err := components.NewConsumer(ctx, "orders", &components.ConsumerArgs{
			Project:  pulumi.String("acme-dev"),
			Consumer: spec.Consumer{Image: pulumi.String("gcr.io/acme/consumer"), CPU: "3", Memory: "64Gi"},
		})
		return err
	})
	for _, want := range []string{
		"consumer orders: invalid eventpipe configuration (2 problems)",
		`consumer.image = "gcr.io/acme/consumer": allowed REPO@sha256:<64 hex digits> or REPO:TAG`,
		`consumer.cpu = "3": allowed 1, 2, 4, 6 or 8 CPUs`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant it to contain %q", err, want)
		}
	}
	if len(regs) != 0 {
		t.Errorf("%d resources registered before validation failed", len(regs))
	}
}
