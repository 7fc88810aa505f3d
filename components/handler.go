package components

import (
	"strconv"
	"time"

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

// The deadlines of a consumer with a handler, set by the component so that
// they agree with Cloud Run's (docs/handlers.md, "Shutdown").
const (
	// EnvHandlerTimeout is how long a keyed API request waits for the
	// handler's answer (handler.Config.Timeout).
	EnvHandlerTimeout = "EVENTPIPE_HANDLER_TIMEOUT"
	// EnvShutdownTimeout is the time from SIGTERM to the consumer's exit.
	EnvShutdownTimeout = "EVENTPIPE_SHUTDOWN_TIMEOUT"
	// CloudRunTerminationGrace is the time Cloud Run gives an instance's
	// containers between SIGTERM and SIGKILL: 10 s (Cloud Run's container
	// runtime contract, https://cloud.google.com/run/docs/container-contract,
	// and "Graceful shutdowns on Cloud Run", cloud.google.com/blog, 2020).
	// It is not configurable: the v2 API's RevisionTemplate, and so
	// pulumi-gcp v8.41.1's cloudrunv2 Service and WorkerPool, have no field
	// for it.
	CloudRunTerminationGrace = 10 * time.Second
	// ShutdownTimeout is the consumer's shutdown deadline under Cloud Run:
	// the grace less a second for the process to exit after it (flush the
	// last spans, close the store). The consumer's own default
	// (server.DefaultShutdownTimeout) is held to it by a test. Handler
	// calls in flight at SIGTERM run until the drain deadline within it;
	// one still running then is cut, its key held until its reservation
	// lapses.
	ShutdownTimeout = CloudRunTerminationGrace - time.Second
)

// HandlerTimeout is the handler timeout of a service whose request
// timeout is r: a keyed API request gets the consumer's own answer (504;
// the call runs on and its answer is kept for the client's retry) before
// Cloud Run cuts the request at r: r less a sixth of it, at most 10 s
// (the time the consumer may spend settling the key once the handler
// answered).
func HandlerTimeout(r time.Duration) time.Duration { return r - min(r/6, 10*time.Second) }

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
