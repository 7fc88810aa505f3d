package components

import (
	"strconv"
	"time"

	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/cloudrunv2"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// HandlerTimeout is the handler timeout (settings.HandlerTimeout) the
// component gives a consumer with a handler whose service's request
// timeout is r: a keyed API request gets the consumer's own answer (504;
// the call runs on and its answer is kept for the client's retry) before
// Cloud Run cuts the request at r. It is r less a sixth of it, at most
// 10 s (the time the consumer may spend settling the key once the handler
// answered), in whole seconds, as the service's environment has it. The
// component sets the shutdown deadline beside it
// (settings.DefaultShutdownTimeout, within Cloud Run's termination grace).
func HandlerTimeout(r time.Duration) time.Duration {
	return (r - min(r/6, 10*time.Second)).Truncate(time.Second)
}

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
