package components_test

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/spec"
)

// TestTraceCollectorSidecar checks the opt-in collector sidecar: absent by
// default; with eventpipe:defaults.traceCollector, a second container the
// consumer depends on, ready on its health check, configured to take OTLP
// on the endpoint the consumer is given and export to Cloud Trace, and the
// consumer's account allowed to write traces.
func TestTraceCollectorSidecar(t *testing.T) {
	plain := declareStack(t, baseStack)
	svc := one(t, plain, tService, "orders")
	if n := len(input(svc, "template.containers").([]any)); n != 1 {
		t.Fatalf("default consumer has %d containers, want 1 (tracing is opt-in)", n)
	}
	for _, k := range []string{components.EnvOTLPEndpoint, components.EnvOTLPProtocol, components.EnvTraceProject} {
		if _, ok := env(t, svc)[k]; ok {
			t.Errorf("untraced consumer has %s", k)
		}
	}
	if _, ok := custom(plain, tProjectIAM)["orders-run-trace-agent"]; ok {
		t.Error("untraced consumer granted cloudtrace.agent")
	}

	traced := declareStack(t, strings.Replace(baseStack, "  eventpipe:pipelines:", "  eventpipe:defaults:\n    traceCollector: true\n  eventpipe:pipelines:", 1))
	svc = one(t, traced, tService, "orders")
	containers := input(svc, "template.containers").([]any)
	if len(containers) != 2 {
		t.Fatalf("traced consumer has %d containers, want the consumer and the collector", len(containers))
	}
	if got := input(svc, "template.containers.0.dependsOns"); !equalJSON(got, []string{spec.CollectorContainer}) {
		t.Errorf("consumer dependsOns = %v, want the collector (it starts first)", got)
	}
	collector := "template.containers.1."
	if input(svc, collector+"name") != spec.CollectorContainer || input(svc, collector+"image") != components.CollectorImage {
		t.Errorf("sidecar %v", containers[1])
	}
	if input(svc, collector+"ports") != nil {
		t.Error("the sidecar must not take the service's ingress port")
	}
	e := env(t, svc)
	want := map[string]string{components.EnvOTLPEndpoint: "http://localhost:4317", components.EnvOTLPProtocol: "grpc", components.EnvTraceProject: "acme-dev"}
	for k, v := range want {
		if e[k] != v {
			t.Errorf("consumer %s = %q, want %q", k, e[k], v)
		}
	}
	grant := one(t, traced, tProjectIAM, "orders-run-trace-agent")
	if input(grant, "role") != components.RoleTraceAgent || input(grant, "member") != "serviceAccount:"+consumerEmail {
		t.Errorf("trace grant %v", grant.Inputs)
	}
	// The collector exports as the consumer's account from its start: the service waits
	// for the grant to take effect, as for the store's.
	waitsAfterGrants(t, traced, svc, "orders-grants-propagated", "2m0s", [2]string{tProjectIAM, "orders-run-trace-agent"},
		[2]string{tProjectIAM, "orders-run-datastore-user"})

	// The configuration the collector reads from its environment.
	args := input(svc, collector+"args").([]any)
	source, ok := strings.CutPrefix(args[0].(string), "--config=env:")
	if len(args) != 1 || !ok {
		t.Fatalf("collector args %v, want --config=env:VAR", args)
	}
	var text string
	for _, v := range input(svc, collector+"envs").([]any) {
		if m := v.(map[string]any); m["name"] == source {
			text, _ = m["value"].(string)
		}
	}
	var cfg struct {
		Receivers struct {
			OTLP struct {
				Protocols struct {
					GRPC struct{ Endpoint string } `yaml:"grpc"`
				}
			} `yaml:"otlp"`
		}
		Processors struct {
			MemoryLimiter struct {
				LimitMiB int `yaml:"limit_mib"`
			} `yaml:"memory_limiter"`
		}
		Extensions struct {
			Health struct{ Endpoint string } `yaml:"health_check"`
		}
		Service struct {
			Extensions []string
			Pipelines  map[string]struct{ Receivers, Processors, Exporters []string }
		}
	}
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		t.Fatalf("collector config %s is not YAML: %v\n%s", source, err, text)
	}
	if !strings.HasPrefix(e[components.EnvOTLPEndpoint], "http://"+cfg.Receivers.OTLP.Protocols.GRPC.Endpoint) {
		t.Errorf("collector receives OTLP/gRPC on %q, the consumer sends to %q", cfg.Receivers.OTLP.Protocols.GRPC.Endpoint, e[components.EnvOTLPEndpoint])
	}
	if port := input(svc, collector+"startupProbe.httpGet.port"); !strings.HasSuffix(cfg.Extensions.Health.Endpoint, ":13133") || port != float64(13133) {
		t.Errorf("startup probe port %v, health_check on %q", port, cfg.Extensions.Health.Endpoint)
	}
	if limit, mem := cfg.Processors.MemoryLimiter.LimitMiB, input(svc, collector+"resources.limits.memory"); limit <= 0 || mem != "256Mi" || limit >= 256 {
		t.Errorf("collector memory_limiter %d MiB in a %v container: it must refuse data before the container is killed", limit, mem)
	}
	traces := cfg.Service.Pipelines["traces"]
	if !equalJSON(traces.Receivers, []string{"otlp"}) || !equalJSON(traces.Exporters, []string{"googlecloud"}) || !equalJSON(cfg.Service.Extensions, []string{"health_check"}) {
		t.Errorf("collector service %+v: want OTLP in, Cloud Trace (googlecloud) out, health_check on", cfg.Service)
	}
}
