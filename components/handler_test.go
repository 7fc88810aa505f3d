package components_test

import (
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/consumer/handler"
	"github.com/eventpipe/eventpipe/consumer/settings"
	"github.com/eventpipe/eventpipe/spec"
)

// withHandler are consumer settings (YAML, indented for a pipeline's
// consumer) with a handler, and the memory the consumer needs beside it and
// the collector.
const withHandler = `        memory: 2Gi
        handler:
          image: europe-docker.pkg.dev/acme/orders/handler:2.0.1
          port: 9090
          healthPath: /ready
          env: {LOG_LEVEL: debug}
          memory: 1Gi
`

// TestHandlerContainer checks the consumer's handler input: a second
// container with no ingress port, its port as HANDLER_PORT, its own
// environment and limits, a startup probe on its health path; the consumer
// starts after it (dependsOn, with the collector when traced) and is told
// its URL. Without a handler nothing changes.
func TestHandlerContainer(t *testing.T) {
	plain := one(t, declareStack(t, baseStack), tService, "orders")
	if _, ok := env(t, plain)[settings.HandlerURL]; ok || input(plain, "template.containers.0.dependsOns") != nil {
		t.Fatalf("a consumer without a handler got %s or dependsOns", settings.HandlerURL)
	}
	doc := strings.Replace(baseStack, "        minInstances: 1\n", "        minInstances: 1\n"+withHandler, 1)
	traced := strings.Replace(doc, "  eventpipe:pipelines:", "  eventpipe:defaults:\n    traceCollector: true\n  eventpipe:pipelines:", 1)
	for name, d := range map[string]string{"handler": doc, "handler and collector": traced} {
		svc := one(t, declareStack(t, d), tService, "orders")
		containers := input(svc, "template.containers").([]any)
		h := "template.containers." + map[string]string{"handler": "1", "handler and collector": "2"}[name] + "."
		if input(svc, h+"name") != spec.HandlerContainer || input(svc, h+"image") != "europe-docker.pkg.dev/acme/orders/handler:2.0.1" {
			t.Fatalf("%s: containers %v", name, containers)
		}
		if input(svc, h+"ports") != nil {
			t.Errorf("%s: the handler must not take the service's ingress port", name)
		}
		if got := input(svc, h+"envs"); !equalJSON(got, []map[string]string{{"name": "HANDLER_PORT", "value": "9090"}, {"name": "LOG_LEVEL", "value": "debug"}}) {
			t.Errorf("%s: handler env %v", name, got)
		}
		if input(svc, h+"startupProbe.httpGet.path") != "/ready" || input(svc, h+"startupProbe.httpGet.port") != float64(9090) {
			t.Errorf("%s: handler probe %v", name, input(svc, h+"startupProbe"))
		}
		if input(svc, h+"resources.limits.memory") != "1Gi" || input(svc, h+"resources.limits.cpu") != "1" {
			t.Errorf("%s: handler limits %v", name, input(svc, h+"resources.limits"))
		}
		want := []string{spec.HandlerContainer}
		if name != "handler" {
			want = []string{spec.CollectorContainer, spec.HandlerContainer}
		}
		if got := input(svc, "template.containers.0.dependsOns"); !equalJSON(got, want) {
			t.Errorf("%s: consumer dependsOns %v, want %v", name, got, want)
		}
		if got := env(t, svc)[settings.HandlerURL]; got != "http://localhost:9090" {
			t.Errorf("%s: consumer %s = %q", name, settings.HandlerURL, got)
		}
		// The request timeout is 60 s: keyed requests wait 50 s, and the
		// drain fits Cloud Run's 10 s grace.
		e := env(t, svc)
		if e[settings.HandlerTimeout] != "50s" || e[settings.ShutdownTimeout] != "9s" {
			t.Errorf("%s: consumer %s = %q, %s = %q; want 50s and 9s", name, settings.HandlerTimeout, e[settings.HandlerTimeout],
				settings.ShutdownTimeout, e[settings.ShutdownTimeout])
		}
		got := consumerReads(t, map[string]string{settings.RequestTimeout: e[settings.RequestTimeout],
			settings.HandlerTimeout: e[settings.HandlerTimeout], settings.ShutdownTimeout: e[settings.ShutdownTimeout]})
		if got.HandlerTimeout != components.HandlerTimeout(got.RequestTimeout) || got.ShutdownTimeout != settings.DefaultShutdownTimeout {
			t.Errorf("%s: the consumer reads a handler timeout of %v and a shutdown deadline of %v; want %v and its default %v", name,
				got.HandlerTimeout, got.ShutdownTimeout, components.HandlerTimeout(got.RequestTimeout), settings.DefaultShutdownTimeout)
		}
	}
}

// consumerReads is the consumer's environment of the variables vars, as
// it parses them (settings.Parse).
func consumerReads(t *testing.T, vars map[string]string) settings.Env {
	t.Helper()
	e, err := settings.Parse(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatalf("the consumer refuses %v: %v", vars, err)
	}
	return e
}

// TestHandlerDeadlinesFitCloudRun: for every request timeout a service
// may have, a keyed request's handler timeout ends before Cloud Run cuts
// the request, with room to settle its key, and is what the consumer
// reads; the shutdown deadline the component sets, the consumer's own
// default, fits Cloud Run's grace.
func TestHandlerDeadlinesFitCloudRun(t *testing.T) {
	if settings.DefaultShutdownTimeout <= 0 || settings.DefaultShutdownTimeout >= settings.CloudRunTerminationGrace {
		t.Errorf("shutdown timeout %v, grace %v: want it within the grace", settings.DefaultShutdownTimeout, settings.CloudRunTerminationGrace)
	}
	for r := spec.MinAckDeadline; r <= spec.MaxAckDeadline; r += time.Second {
		h := components.HandlerTimeout(r)
		if h <= 0 || h >= r || r-h < min(r/6, 10*time.Second) {
			t.Fatalf("request timeout %v: handler timeout %v, want below it by a sixth of it, at most 10 s", r, h)
		}
		e := settings.Default()
		e.RequestTimeout, e.HandlerTimeout = r, h
		cfg, err := handler.ConfigFrom(consumerReads(t, e.Environ(settings.RequestTimeout, settings.HandlerTimeout)))
		if err != nil || cfg.Timeout != h {
			t.Fatalf("request timeout %v: the consumer reads %s=%s as %v (%v), want %v", r, settings.HandlerTimeout, e.Value(settings.HandlerTimeout), cfg.Timeout, err, h)
		}
	}
}

// TestHandlerCountsTowardsTheInstance: the handler's size is added to the consumer's and the
// collector's, and an instance Cloud Run would refuse is refused at preview, naming the handler.
func TestHandlerCountsTowardsTheInstance(t *testing.T) {
	doc := strings.Replace(baseStack, "        minInstances: 1\n", `        minInstances: 1
        handler:
          image: europe-docker.pkg.dev/acme/orders/handler:2.0.1
          memory: 1Gi
`, 1)
	traced := strings.Replace(doc, "  eventpipe:pipelines:", "  eventpipe:defaults:\n    traceCollector: true\n  eventpipe:pipelines:", 1)
	f, err := spec.ParseStackFile("Pulumi.dev.yaml", []byte(traced))
	if err != nil {
		t.Fatal(err)
	}
	_, err = components.LoadStack("dev", f.Source)
	if err == nil || !strings.Contains(err.Error(), "handler (1 CPU, 1Gi)") {
		t.Fatalf("3 CPU and 1792Mi in all: %v, want refused naming the handler", err)
	}
}

// TestHandlerOfInvalidSizeIsReported: a handler whose CPU or memory does
// not parse is reported on its key, with the collector beside it too; the
// instance's totals are not summed from it (they made LoadStack panic).
func TestHandlerOfInvalidSizeIsReported(t *testing.T) {
	for _, size := range []string{"cpu: abc", "memory: 1GB"} {
		doc := strings.Replace(baseStack, "        minInstances: 1\n", "        minInstances: 1\n        handler:\n          image: europe-docker.pkg.dev/acme/orders/handler:2.0.1\n          "+size+"\n", 1)
		doc = strings.Replace(doc, "  eventpipe:pipelines:", "  eventpipe:defaults:\n    traceCollector: true\n  eventpipe:pipelines:", 1)
		key, _, _ := strings.Cut(size, ":")
		if err := loadErr(doc); err == nil || !strings.Contains(err.Error(), "eventpipe:pipelines.orders.consumer.handler."+key+" = ") {
			t.Errorf("handler %s: err = %v, want it reported on handler.%s", size, err, key)
		}
	}
}
