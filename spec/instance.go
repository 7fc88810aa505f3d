package spec

import (
	"fmt"
	"strconv"
	"strings"
)

// The containers of a consumer instance besides the consumer's own, which
// share the instance's CPU and memory with it: the OpenTelemetry Collector
// (eventpipe:defaults.traceCollector) and the team's handler (consumer.handler).
const (
	// CollectorContainer is the collector sidecar's container name.
	CollectorContainer = "otel-collector"
	// CollectorCPU and CollectorMemory are the collector's limits.
	CollectorCPU    = "1"
	CollectorMemory = "256Mi"
	// HandlerContainer is the name of the handler's container.
	HandlerContainer = "handler"
)

// sidecar is the CPU and memory limit of a container beside the consumer's.
type sidecar struct{ name, cpu, memory string }

// checkInstance checks the sum of the consumer's CPU and memory and its
// sidecars' (the collector when traced, the handler) against Cloud Run's
// per-instance limits: every container of an instance shares them, so a
// consumer that fits alone may not with its sidecars. The total CPU is
// rounded up to the whole count Cloud Run offers and must allow the total
// memory. Problems are reported on path (the consumer's config path); a
// size that does not parse is reported by validateLimits and not summed.
func checkInstance(c *collector, p *Pipeline, path string, traced bool) {
	k := &p.Consumer
	var sidecars []sidecar
	if traced {
		sidecars = append(sidecars, sidecar{CollectorContainer, CollectorCPU, CollectorMemory})
	}
	if h := k.Handler; h != nil {
		sidecars = append(sidecars, sidecar{HandlerContainer, h.CPU, h.Memory})
	}
	milli, cpuOK := ParseCPU(k.CPU)
	mib, memOK := ParseMemory(k.Memory)
	if len(sidecars) == 0 || !cpuOK || !memOK {
		return
	}
	var names []string
	for _, sc := range sidecars {
		m, cpuOK := ParseCPU(sc.cpu)
		b, memOK := ParseMemory(sc.memory)
		if !cpuOK || !memOK {
			return
		}
		milli += m
		mib += b
		names = append(names, fmt.Sprintf("%s (%s CPU, %s)", sc.name, sc.cpu, sc.memory))
	}
	with := "the consumer plus " + strings.Join(names, ", ")
	total := fmt.Sprintf("%s CPU, %s in total", strconv.FormatFloat(float64(milli)/1000, 'f', -1, 64), formatMiB(mib))
	switch lo, hi := memoryRange(roundCPU(milli)); {
	case milli > 8000:
		c.add(p.Name, path+".cpu", strconv.Quote(k.CPU), "at most 8 CPUs for "+with,
			fmt.Sprintf("lower cpu so the instance's %s stays within Cloud Run's 8 CPUs", total))
	case mib > MaxMemoryMiB:
		c.add(p.Name, path+".memory", strconv.Quote(k.Memory), fmt.Sprintf("at most %s for %s", formatMiB(MaxMemoryMiB), with),
			fmt.Sprintf("lower memory so the instance's %s stays within Cloud Run's %s", total, formatMiB(MaxMemoryMiB)))
	case mib > hi:
		c.add(p.Name, path+".memory", strconv.Quote(k.Memory), fmt.Sprintf("at most %s for %s", formatMiB(hi), with),
			fmt.Sprintf("raise cpu or lower memory: the instance has %s; %s", total, cpuMemoryRule))
	case mib < lo:
		c.add(p.Name, path+".memory", strconv.Quote(k.Memory), fmt.Sprintf("at least %s for %s", formatMiB(lo), with),
			fmt.Sprintf("raise memory or lower cpu: the instance has %s; %s", total, cpuMemoryRule))
	}
}

// roundCPU is milli rounded up to the CPU count Cloud Run sizes an
// instance by: itself below 1 CPU, else the next whole count it offers.
func roundCPU(milli int) int {
	if milli <= 1000 {
		return milli
	}
	for _, n := range wholeCPUs() {
		if milli <= n*1000 {
			return n * 1000
		}
	}
	return 8000
}
