package spec

import (
	"fmt"
	"strconv"
	"strings"
)

// ContainerSize is the CPU and memory limit of one container of a consumer
// instance besides the consumer's own (a sidecar).
type ContainerSize struct {
	// Name is the container's name, for messages.
	Name string
	// CPU and Memory are written as in config ("1", "256Mi").
	CPU, Memory string
}

// CheckInstance checks the sum of the consumer's CPU and memory and its
// sidecars' against Cloud Run's per-instance limits: every container of an
// instance shares them, so a consumer that fits alone may not with its
// sidecars. The total CPU is rounded up to the whole count Cloud Run
// offers and must allow the total memory. It returns the problems on path
// (the consumer's config path); the consumer's own CPU and memory must be
// valid already (ValidateConsumer).
func CheckInstance(p *Pipeline, path string, sidecars ...ContainerSize) Errors {
	if len(sidecars) == 0 {
		return nil
	}
	k := &p.Consumer
	milli, cpuOK := ParseCPU(k.CPU)
	mib, memOK := ParseMemory(k.Memory)
	if !cpuOK || !memOK {
		return nil
	}
	var names []string
	for _, sc := range sidecars {
		m, ok1 := ParseCPU(sc.CPU)
		b, ok2 := ParseMemory(sc.Memory)
		if !ok1 || !ok2 {
			panic(fmt.Sprintf("spec.CheckInstance: sidecar %s has an invalid size %q/%q", sc.Name, sc.CPU, sc.Memory))
		}
		milli += m
		mib += b
		names = append(names, fmt.Sprintf("%s (%s CPU, %s)", sc.Name, sc.CPU, sc.Memory))
	}
	with := "the consumer plus " + strings.Join(names, ", ")
	total := fmt.Sprintf("%s CPU, %s in total", strconv.FormatFloat(float64(milli)/1000, 'f', -1, 64), formatMiB(mib))
	c := &collector{}
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
	return c.errors()
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
