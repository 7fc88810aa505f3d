package components_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/render"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func consumerPlan(t *testing.T, st *spec.Stack) *render.Plan {
	t.Helper()
	return runMocked(t, st, func(ctx *pulumi.Context) error {
		_, err := components.NewConsumer(ctx, "orders", &components.ConsumerArgs{Stack: st, Pipeline: st.Pipelines["orders"]})
		return err
	})
}

// env returns the container environment of a service as a map.
func env(t *testing.T, svc render.State) map[string]string {
	t.Helper()
	out := map[string]string{}
	list, _ := input(svc, "template.containers.0.envs").([]any)
	for _, e := range list {
		m := e.(map[string]any)
		out[m["name"].(string)] = m["value"].(string)
	}
	return out
}

func TestConsumer(t *testing.T) {
	plan := consumerPlan(t, loadStack(t, baseStack))
	want := map[string]int{tAccount: 1, tProjectIAM: 1, tService: 1}
	if got := countByType(plan); !equalJSON(got, want) {
		t.Fatalf("resources = %v, want %v", got, want)
	}
	svc := one(t, plan, tService, "orders")
	wantEnv := map[string]string{
		components.EnvEnvironment:       "dev",
		components.EnvService:           "orders-consumer",
		components.EnvVersion:           "1.2.3",
		components.EnvStore:             "firestore://acme-dev/(default)",
		components.EnvOIDCAudience:      "acme-dev/orders/pubsub-push",
		components.EnvPushAccounts:      pushEmail,
		components.EnvPullSubscriptions: "projects/acme-dev/subscriptions/orders-work",
		components.EnvCollectionPrefix:  "eventpipe_orders_",
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
		{"concurrency", input(svc, "template.maxInstanceRequestConcurrency"), float64(80)},
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
	grant := one(t, plan, tProjectIAM, "orders-run-datastore-user")
	if input(grant, "role") != components.RoleDatastore || input(grant, "member") != "serviceAccount:"+consumerEmail || input(grant, "project") != "acme-dev" {
		t.Errorf("store grant = %v", grant.Inputs)
	}
	b, _ := json.Marshal(plan)
	if strings.Contains(string(b), "allUsers") || strings.Contains(string(b), "allAuthenticatedUsers") {
		t.Error("consumer must never be public")
	}
}

func TestConsumerSettings(t *testing.T) {
	doc := strings.Replace(baseStack, "        minInstances: 1\n", `        minInstances: 2
        maxInstances: 4
        requestTimeout: 5m
        concurrency: 10
        ingress: internal-and-cloud-load-balancing
        routes: /etc/eventpipe/routes.yaml
        collectionPrefix: ops_
        store: postgres://db.internal/eventpipe
`, 1)
	svc := one(t, consumerPlan(t, loadStack(t, doc)), tService, "orders")
	e := env(t, svc)
	if e[components.EnvRoutes] != "/etc/eventpipe/routes.yaml" || e[components.EnvCollectionPrefix] != "ops_" || e[components.EnvStore] != "postgres://db.internal/eventpipe" {
		t.Errorf("env = %v", e)
	}
	if input(svc, "ingress") != "INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER" || input(svc, "template.timeout") != "300s" ||
		input(svc, "template.maxInstanceRequestConcurrency") != float64(10) || input(svc, "template.scaling.maxInstanceCount") != float64(4) {
		t.Errorf("service inputs = %v", svc.Inputs)
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
		{"bbolt:///var/lib/eventpipe.db", ""},
	}
	for _, tc := range tests {
		t.Run(tc.store, func(t *testing.T) {
			st := loadStack(t, baseStack)
			st.Pipelines["orders"].Consumer.Store = tc.store
			grants := custom(consumerPlan(t, st), tProjectIAM)
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

func TestConsumerSecretStore(t *testing.T) {
	st := loadStack(t, baseStack)
	st.Store, st.StoreSecret = "postgres://u:pw@db/eventpipe", true
	st.Pipelines["orders"].Consumer.Store = st.Store
	plan := consumerPlan(t, st)
	if got := env(t, one(t, plan, tService, "orders"))[components.EnvStore]; got != render.Secret {
		t.Errorf("secret store rendered as %q", got)
	}
	b, _ := json.Marshal(plan)
	if strings.Contains(string(b), "pw@db") {
		t.Error("secret leaked into the plan")
	}
}
