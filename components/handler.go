package components

import (
	"strconv"

	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/cloudrunv2"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// EnvHandlerURL tells the consumer where its handler listens (handler.URLEnv).
const EnvHandlerURL = "EVENTPIPE_HANDLER_URL"

// EnvHandlerHealthPath is the handler's health path (handler.HealthPathEnv):
// a pulling consumer waits until it answers before it pulls, which on a
// worker pool, where pulumi-gcp v8 declares no startup probe, is what
// orders the two containers.
const EnvHandlerHealthPath = "EVENTPIPE_HANDLER_HEALTH_PATH"

// handlerContainer is the handler's container (validated settings): no
// ingress port (the consumer has the service's), HANDLER_PORT in its
// environment, and a startup probe on its health path, which the consumer's
// container waits for (dependsOn). cpuIdle is set explicitly, as the
// consumer's: a container with resources and without cpuIdle gets its CPU
// always allocated, not only during requests (the cpuIdle default holds only
// without resources).
func handlerContainer(h *spec.Handler, cpuIdle bool) *cloudrunv2.ServiceTemplateContainerArgs {
	env := cloudrunv2.ServiceTemplateContainerEnvArray{
		&cloudrunv2.ServiceTemplateContainerEnvArgs{Name: pulumi.String(spec.HandlerPortEnv), Value: pulumi.String(strconv.Itoa(*h.Port))},
	}
	for _, name := range spec.SortedKeys(h.Env) {
		env = append(env, &cloudrunv2.ServiceTemplateContainerEnvArgs{Name: pulumi.String(name), Value: pulumi.String(h.Env[name])})
	}
	return &cloudrunv2.ServiceTemplateContainerArgs{
		Name:  pulumi.String(spec.HandlerContainer),
		Image: pulumi.String(h.Image),
		Envs:  env,
		Resources: &cloudrunv2.ServiceTemplateContainerResourcesArgs{
			Limits:  pulumi.StringMap{"cpu": pulumi.String(h.CPU), "memory": pulumi.String(h.Memory)},
			CpuIdle: pulumi.Bool(cpuIdle),
		},
		StartupProbe: startupProbe(h.HealthPath, *h.Port, 30),
	}
}

// startupProbe gets path on port every 2 seconds, waiting 1 second for an
// answer, until it answers 2xx or fails failures times.
func startupProbe(path string, port, failures int) *cloudrunv2.ServiceTemplateContainerStartupProbeArgs {
	return &cloudrunv2.ServiceTemplateContainerStartupProbeArgs{
		HttpGet:          &cloudrunv2.ServiceTemplateContainerStartupProbeHttpGetArgs{Path: pulumi.String(path), Port: pulumi.Int(port)},
		PeriodSeconds:    pulumi.Int(2),
		FailureThreshold: pulumi.Int(failures),
		TimeoutSeconds:   pulumi.Int(1),
	}
}
