package components_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/settings"
	"github.com/eventpipe/eventpipe/spec"
)

const tWorkerPool = "gcp:cloudrunv2/workerPool:WorkerPool"

// pullOnly is a stack whose consumer only pulls, on a worker pool, with a
// store on a private address and the collector.
const pullOnly = `config:
  eventpipe:project: acme-dev
  eventpipe:projectNumber: "123456789012"
  eventpipe:defaults:
    traceCollector: true
  eventpipe:pipelines:
    orders:
      consumer:
        image: europe-docker.pkg.dev/acme/eventpipe/consumer:1.2.3
        minInstances: 2
        workerPool: true
        store: postgres://app@/orders?host=/cloudsql/acme-dev:europe-west1:orders
        cloudSqlInstances: [acme-dev:europe-west1:orders]
        vpcAccess:
          network: shared
      subscriptions:
        work:
          delivery: pull
`

// TestWorkerPool: a pull-only consumer with workerPool runs on a Cloud
// Run worker pool with the containers, environment, network and volumes
// its service would have had, minInstances instances, after its
// subscription and grant; no service, no invoker; its alerts read the
// worker pool's logs.
func TestWorkerPool(t *testing.T) {
	plan := declareStack(t, pullOnly)
	if n := len(custom(plan, tService)); n != 0 {
		t.Errorf("%d Cloud Run services, want none", n)
	}
	if n := len(custom(plan, tServiceIAM)); n != 0 {
		t.Errorf("%d invoker grants on a worker pool", n)
	}
	pool := one(t, plan, tWorkerPool, "orders")
	checks := []struct {
		what      string
		got, want any
	}{
		{"name", input(pool, "name"), "orders-consumer"},
		{"scaling", input(pool, "scaling"), map[string]any{"scalingMode": "MANUAL", "manualInstanceCount": float64(2)}},
		{"account", input(pool, "template.serviceAccount"), consumerEmail},
		{"consumer image", input(pool, "template.containers.0.image"), "europe-docker.pkg.dev/acme/eventpipe/consumer:1.2.3"},
		{"consumer limits", input(pool, "template.containers.0.resources.limits"), map[string]any{"cpu": "1", "memory": "512Mi"}},
		{"collector", input(pool, "template.containers.1.name"), spec.CollectorContainer},
		{"mount", input(pool, "template.containers.0.volumeMounts.0.mountPath"), "/cloudsql"},
		{"volume", input(pool, "template.volumes.0.cloudSqlInstance.instances"), []any{"acme-dev:europe-west1:orders"}},
		{"egress", input(pool, "template.vpcAccess.networkInterfaces.0.network"), "shared"},
		{"deletion protection", input(pool, "deletionProtection"), true},
	}
	for _, c := range checks {
		if !equalJSON(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	e := env(t, pool)
	if e[settings.PullSubscriptions] != "projects/acme-dev/subscriptions/orders-work" || e[settings.Store] == "" {
		t.Errorf("consumer env = %v", e)
	}
	if _, ok := e[settings.OIDCAudience]; ok {
		t.Error("a worker pool consumer accepts push tokens")
	}
	for _, dep := range []struct{ typ, name string }{{tSub, "orders-work"}, {tSubIAM, "orders-work-consumer-subscriber"}, {tAPI, "api-run"}, {tProjectIAM, "orders-run-cloudsql-client"}} {
		if urn := one(t, plan, dep.typ, dep.name).URN; !waitsFor(plan, pool, urn) {
			t.Errorf("worker pool does not wait for %s", dep.name)
		}
	}
	for name, m := range custom(plan, tMetric) {
		if f, _ := input(m, "filter").(string); !strings.Contains(f, `resource.type="cloud_run_worker_pool" AND resource.labels.worker_pool_name="orders-consumer"`) {
			t.Errorf("metric %s reads %s, not the worker pool's logs", name, f)
		}
	}
}

func TestWorkerPoolValidation(t *testing.T) {
	tests := []struct{ change, wantPath string }{
		{"        work:\n          delivery: push\n", "consumer.workerPool"},
		{"        work:\n          delivery: pull\n          external: true\n          subscribers: [group:data@acme.example]\n", "consumer.workerPool"},
	}
	for _, tc := range tests {
		doc := strings.Replace(pullOnly, "        work:\n          delivery: pull\n", tc.change, 1)
		if err := loadErr(doc); err == nil || !strings.Contains(err.Error(), tc.wantPath) {
			t.Errorf("subscriptions\n%s: err = %v, want one on %s", tc.change, err, tc.wantPath)
		}
	}
	for extra, path := range map[string]string{
		"        callbackAccounts: [job@acme-dev.iam.gserviceaccount.com]\n": "consumer.callbackAccounts",
		"        cpu: \"6\"\n        memory: 8Gi\n":                          "consumer.cpu",
		"        ingress: internal-and-cloud-load-balancing\n":               "consumer.ingress",
	} {
		doc := strings.Replace(pullOnly, "        workerPool: true\n", "        workerPool: true\n"+extra, 1)
		if err := loadErr(doc); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("worker pool with %s: err = %v, want one on %s", extra, err, path)
		}
	}
}

// TestWorkerPoolHandler: a pull-only consumer with a handler on a worker
// pool gets the handler container as its service would (image, HANDLER_PORT
// and its env, limits), the consumer still starts after the collector and
// the handler (dependsOn) and is told the handler's URL and health path,
// which it waits for before pulling: pulumi-gcp v8 declares no probe on a
// worker pool, and no container has an ingress port.
func TestWorkerPoolHandler(t *testing.T) {
	doc := strings.Replace(pullOnly, "        workerPool: true\n", "        workerPool: true\n"+withHandler, 1)
	pool := one(t, declareStack(t, doc), tWorkerPool, "orders")
	h := "template.containers.2."
	checks := []struct {
		what      string
		got, want any
	}{
		{"handler name", input(pool, h+"name"), spec.HandlerContainer},
		{"handler image", input(pool, h+"image"), "europe-docker.pkg.dev/acme/orders/handler:2.0.1"},
		{"handler env", input(pool, h+"envs"), []map[string]string{{"name": "HANDLER_PORT", "value": "9090"}, {"name": "LOG_LEVEL", "value": "debug"}}},
		{"handler limits", input(pool, h+"resources.limits"), map[string]any{"cpu": "1", "memory": "1Gi"}},
		{"consumer dependsOns", input(pool, "template.containers.0.dependsOns"), []string{spec.CollectorContainer, spec.HandlerContainer}},
	}
	for _, c := range checks {
		if !equalJSON(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	for i := range 3 {
		for _, field := range []string{"ports", "startupProbe", "livenessProbe"} {
			if v := input(pool, "template.containers."+strconv.Itoa(i)+"."+field); v != nil {
				t.Errorf("container %d has %s %v: pulumi-gcp v8's worker pool has no such field", i, field, v)
			}
		}
	}
	e := env(t, pool)
	if e[settings.HandlerURL] != "http://localhost:9090" || e[settings.HandlerHealthPath] != "/ready" {
		t.Errorf("consumer env %v: want the handler's URL and health path", e)
	}
}
