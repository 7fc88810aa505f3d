package spec

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/eventpipe/eventpipe/consumer/settings"
)

// Defaults of a consumer's handler.
const (
	// DefaultHandlerPort is the port the handler listens on, on localhost.
	DefaultHandlerPort = 8081
	// DefaultHandlerHealthPath is the handler's health check path.
	DefaultHandlerHealthPath = "/healthz"
	// HandlerPortEnv is set in the handler's environment to its port (Cloud
	// Run sets PORT for the ingress container only, and reserves the name).
	HandlerPortEnv = "HANDLER_PORT"
)

// Handler is the team's own container beside the consumer, in any language (docs/handlers.md): the
// consumer is the service's ingress container and passes the handler, on localhost, the events of routes
// that name it (once per logical event) and every other request (once per Idempotency-Key).
type Handler struct {
	// Image is the handler's container image, by digest (REPO@sha256:<64 hex>) or tag (REPO:TAG). Required.
	Image string `json:"image" pulumi:"image"`
	// Port is the port the handler listens on, on localhost (default 8081; its environment has it as
	// HANDLER_PORT). Not 8080, the consumer's.
	Port *int `json:"port,omitempty" pulumi:"port,optional"`
	// HealthPath is the handler's health check: the consumer starts once a GET of it answers 2xx (default /healthz).
	HealthPath string `json:"healthPath,omitempty" pulumi:"healthPath,optional"`
	// Env is the handler's environment (names not starting with EVENTPIPE_, and not PORT or HANDLER_PORT:
	// HANDLER_PORT is set to port).
	Env map[string]string `json:"env,omitempty" pulumi:"env,optional"`
	// CPU is the handler container's CPU limit, as for the consumer (default "1"). The instance has the
	// consumer's and the handler's together.
	CPU string `json:"cpu,omitempty" pulumi:"cpu,optional"`
	// Memory is the handler container's memory limit, in Mi or Gi (default "512Mi").
	Memory string `json:"memory,omitempty" pulumi:"memory,optional"`
}

// URL is the handler's base URL as the consumer reaches it.
func (h *Handler) URL() string { return "http://localhost:" + strconv.Itoa(*h.Port) }

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// validateHandler fills in the defaults of a consumer's handler and checks
// it; errors name paths below path.
func validateHandler(c *collector, p *Pipeline, path string) {
	h := p.Consumer.Handler
	if h == nil {
		return
	}
	if e := CheckImage(h.Image); e != nil {
		c.add(p.Name, path+".image", e.Value, e.Allowed, e.Fix)
	}
	if h.Port == nil {
		port := DefaultHandlerPort
		h.Port = &port
	} else if *h.Port < 1 || *h.Port > 65535 || *h.Port == ContainerPort {
		c.add(p.Name, path+".port", strconv.Itoa(*h.Port), fmt.Sprintf("a port from 1 to 65535 other than %d (the consumer's)", ContainerPort),
			fmt.Sprintf("listen on another port, e.g. %d", DefaultHandlerPort))
	}
	if h.HealthPath == "" {
		h.HealthPath = DefaultHandlerHealthPath
	} else if !strings.HasPrefix(h.HealthPath, "/") {
		c.add(p.Name, path+".healthPath", strconv.Quote(h.HealthPath), "a path starting with /", "write the health check path, e.g. /healthz")
	}
	for _, name := range SortedKeys(h.Env) {
		switch {
		case !envNamePattern.MatchString(name):
			c.add(p.Name, path+".env."+name, strconv.Quote(name), "letters, digits and _, not starting with a digit", "rename the variable")
		case strings.HasPrefix(name, settings.Prefix) || name == settings.Port || name == HandlerPortEnv:
			c.add(p.Name, path+".env."+name, strconv.Quote(name), "a name not starting with "+settings.Prefix+", and not "+settings.Port+" or "+HandlerPortEnv,
				"these are the consumer's or set for you: remove it (the handler's port is handler.port)")
		}
	}
	validateLimits(c, p.Name, path, &h.CPU, &h.Memory)
}

// validateLimits fills in and checks a container's CPU and memory limits
// (path.cpu, path.memory), the consumer's or the handler's.
func validateLimits(c *collector, pipeline, path string, cpu, memory *string) {
	if *cpu == "" {
		*cpu = DefaultCPU
	} else if _, ok := ParseCPU(*cpu); !ok {
		c.add(pipeline, path+".cpu", strconv.Quote(*cpu), `a CPU count: "1", "2", "4", "6", "8", or from "0.08" up to 1 (also written "500m")`, "write the CPU limit as a quoted number")
	}
	if *memory == "" {
		*memory = DefaultMemory
	} else if _, ok := ParseMemory(*memory); !ok {
		c.add(pipeline, path+".memory", strconv.Quote(*memory), `a memory size in Mi or Gi, such as "512Mi" or "2Gi"`, "write a whole number followed by Mi or Gi")
	}
}
