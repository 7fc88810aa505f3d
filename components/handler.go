package components

import (
	"strconv"

	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/cloudrunv2"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// handlerContainer is the handler's container (validated settings): no
// ingress port (the consumer has the service's), HANDLER_PORT in its
// environment, and a startup probe on its health path, which the consumer's
// container waits for (dependsOn).
func handlerContainer(h *spec.Handler) *cloudrunv2.ServiceTemplateContainerArgs {
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
			Limits: pulumi.StringMap{"cpu": pulumi.String(h.CPU), "memory": pulumi.String(h.Memory)},
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
