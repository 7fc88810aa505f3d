package components

import (
	"fmt"

	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/cloudrunv2"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/projects"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// The OpenTelemetry Collector sidecar of a consumer (eventpipe:defaults.traceCollector),
// deployed the way Cloud Run documents the Google-Built OpenTelemetry Collector:
// a second container the consumer's container depends on (so it starts first), ready when
// its health_check extension answers, receiving OTLP on localhost and exporting to Cloud
// Trace with the service's identity.
const (
	// CollectorImage is the Google-Built OpenTelemetry Collector, pinned.
	CollectorImage = "us-docker.pkg.dev/cloud-ops-agents-artifacts/google-cloud-opentelemetry-collector/otelcol-google:0.151.0"
	// RoleTraceAgent lets the consumer's account write spans to Cloud Trace.
	RoleTraceAgent = "roles/cloudtrace.agent"
	// EnvOTLPEndpoint and EnvOTLPProtocol point the consumer's exporter at the
	// sidecar (the standard OpenTelemetry variables turn its tracing on).
	EnvOTLPEndpoint = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvOTLPProtocol = "OTEL_EXPORTER_OTLP_PROTOCOL"
	// EnvTraceProject names the project of the traces in the consumer's log lines.
	EnvTraceProject = "GOOGLE_CLOUD_PROJECT"
	// collectorConfigEnv holds the collector's configuration, read with the
	// collector's env: config provider: no secret or volume is needed for a
	// configuration that holds no credential.
	collectorConfigEnv  = "OTELCOL_CONFIG"
	collectorHealthPort = 13133
)

// collectorConfig receives OTLP/gRPC from the consumer on localhost only,
// bounds the collector's memory below its container's 256 MiB (in MiB: a
// percentage needs a cgroup limit the first generation may not show), labels
// spans with the Cloud Run resource and exports them to Cloud Trace.
const collectorConfig = `receivers:
  otlp:
    protocols:
      grpc:
        endpoint: localhost:4317
processors:
  memory_limiter:
    check_interval: 1s
    limit_mib: 200
    spike_limit_mib: 50
  resourcedetection:
    detectors: [env, gcp]
    timeout: 2s
    override: false
  batch:
    send_batch_size: 200
    timeout: 5s
exporters:
  googlecloud: {}
extensions:
  health_check:
    endpoint: 0.0.0.0:13133
service:
  extensions: [health_check]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [memory_limiter, resourcedetection, batch]
      exporters: [googlecloud]
`

// traceCollectorEnv is the consumer container's environment that turns its
// tracing on and points it at the sidecar.
func traceCollectorEnv(project pulumi.StringInput) map[string]pulumi.StringInput {
	return map[string]pulumi.StringInput{
		EnvOTLPEndpoint: pulumi.String("http://localhost:4317"),
		EnvOTLPProtocol: pulumi.String("grpc"),
		EnvTraceProject: project,
	}
}

// declareTraceCollector grants member roles/cloudtrace.agent on project and
// returns the sidecar container of the consumer named name, and the grant
// to wait for. cpuIdle is the consumer's: the provider needs it explicit on
// every container with resource limits, and Cloud Run allocates CPU per
// instance, so the containers agree.
func declareTraceCollector(ctx *pulumi.Context, name string, project pulumi.StringInput, member pulumi.StringInput, cpuIdle bool,
	opts ...pulumi.ResourceOption) (*cloudrunv2.ServiceTemplateContainerArgs, pulumi.Resource, error) {
	grant, err := projects.NewIAMMember(ctx, name+"-run-trace-agent", &projects.IAMMemberArgs{
		Project: project,
		Role:    pulumi.String(RoleTraceAgent),
		Member:  member,
	}, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("grant consumer %s cloudtrace.agent: %w", name, err)
	}
	return &cloudrunv2.ServiceTemplateContainerArgs{
		Name:  pulumi.String(spec.CollectorContainer),
		Image: pulumi.String(CollectorImage),
		Args:  pulumi.StringArray{pulumi.String("--config=env:" + collectorConfigEnv)},
		Envs: cloudrunv2.ServiceTemplateContainerEnvArray{
			&cloudrunv2.ServiceTemplateContainerEnvArgs{Name: pulumi.String(collectorConfigEnv), Value: pulumi.String(collectorConfig)},
		},
		Resources: &cloudrunv2.ServiceTemplateContainerResourcesArgs{
			Limits:  pulumi.StringMap{"cpu": pulumi.String(spec.CollectorCPU), "memory": pulumi.String(spec.CollectorMemory)},
			CpuIdle: pulumi.Bool(cpuIdle),
		},
		StartupProbe: startupProbe("/", collectorHealthPort, 15),
	}, grant, nil
}
