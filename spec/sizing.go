package spec

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/eventpipe/eventpipe/consumer/limits"
)

// Cloud Run's instance sizes (cloud.google.com/run/docs/configuring/services/cpu
// and …/memory-limits): CPU is 1, 2, 4, 6 or 8, or from 0.08 up to 1 in
// steps of 0.001; memory is 128 MiB to 32 GiB, at least 512 MiB in the
// second-generation environment, within the range each CPU count allows.
const (
	// MinCPUMilli is the smallest CPU Cloud Run accepts (0.08).
	MinCPUMilli = 80
	// MinMemoryMiB and MaxMemoryMiB bound the memory limit.
	MinMemoryMiB = 128
	MaxMemoryMiB = 32 << 10
	// MinGen2MemoryMiB is the least memory of a second-generation instance.
	MinGen2MemoryMiB = 512
)

// Execution environments of consumer.executionEnvironment.
const (
	Gen1 = "gen1"
	Gen2 = "gen2"
	// DefaultExecutionEnvironment: the second generation has full Linux
	// compatibility and faster CPU and network; gen1 is for instances
	// under 512 MiB.
	DefaultExecutionEnvironment = Gen2
)

// cpuMemory is the memory range, in MiB, Cloud Run allows with n whole
// CPUs; ok is false for a CPU count it does not offer.
func cpuMemory(n int) (lo, hi int, ok bool) {
	switch n {
	case 1:
		return MinMemoryMiB, 4 << 10, true
	case 2:
		return MinMemoryMiB, 8 << 10, true
	case 4:
		return 2 << 10, 16 << 10, true
	case 6:
		return 4 << 10, 24 << 10, true
	case 8:
		return 4 << 10, 32 << 10, true
	}
	return 0, 0, false
}

// wholeCPUs are the CPU counts above 1 Cloud Run offers, in order.
func wholeCPUs() []int { return []int{1, 2, 4, 6, 8} }

// ParseCPU reads a CPU limit ("1", "0.5", "500m") in thousandths of a CPU.
func ParseCPU(s string) (milli int, ok bool) {
	if m, found := strings.CutSuffix(s, "m"); found {
		n, err := strconv.Atoi(m)
		return n, err == nil && n > 0 && m[0] != '+'
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 || math.IsInf(f, 0) || strings.ContainsAny(s, "eE+") {
		return 0, false
	}
	milli = int(math.Round(f * 1000))
	// Cloud Run takes CPU in steps of 0.001.
	return milli, math.Abs(f*1000-float64(milli)) < 1e-6
}

// ParseMemory reads a memory limit written in Mi or Gi, in MiB.
func ParseMemory(s string) (mib int, ok bool) {
	if !memoryPattern.MatchString(s) {
		return 0, false
	}
	n, err := strconv.Atoi(s[:len(s)-2])
	if err != nil || n > 1<<20 {
		return 0, false
	}
	if strings.HasSuffix(s, "Gi") {
		n <<= 10
	}
	return n, true
}

// formatMiB writes n MiB the way config does: "2Gi" when whole, else "1536Mi".
func formatMiB(n int) string {
	if n%1024 == 0 {
		return strconv.Itoa(n>>10) + "Gi"
	}
	return strconv.Itoa(n) + "Mi"
}

// MemoryBytes is the consumer's memory limit in bytes (0 when unset or invalid).
func (c *Consumer) MemoryBytes() int64 {
	mib, _ := ParseMemory(c.Memory)
	return int64(mib) << 20
}

// RequestConcurrency is how many messages an instance handles at once:
// consumer.concurrency, or fewer when memory cannot hold that many messages
// of consumer.maxMessageBytes (limits.MaxConcurrency, the consumer's own
// memory model). It is what the service's maxInstanceRequestConcurrency and
// the consumer's pull flow control are set to. Call it on a validated
// Consumer.
func (c *Consumer) RequestConcurrency() int {
	return limits.MaxConcurrency(c.MemoryBytes(), int64(*c.MaxMessageBytes), *c.Concurrency)
}

// validateSize fills the execution environment and maximum message size and
// checks CPU, memory, concurrency and environment together, with Cloud
// Run's rules; CPU and memory are already filled with their defaults.
func validateSize(c *collector, s *Stack, p *Pipeline, path string) {
	k := &p.Consumer
	switch k.ExecutionEnvironment {
	case "":
		k.ExecutionEnvironment = DefaultExecutionEnvironment
	case Gen1, Gen2:
	default:
		c.add(p.Name, path+".executionEnvironment", strconv.Quote(k.ExecutionEnvironment), Gen1+" or "+Gen2,
			"use gen2 (the default) or gen1 for instances under 512Mi or below 1 CPU")
	}
	k.MaxMessageBytes = intDefault(c, p.Name, path, k.MaxMessageBytes, BoundAt("pipelines.*.consumer.maxMessageBytes"))
	milli, cpuOK := ParseCPU(k.CPU)
	mib, memOK := ParseMemory(k.Memory)
	if !cpuOK {
		return // reported by validateConsumer
	}
	cpu := strconv.Quote(k.CPU)
	whole := milli >= 1000
	switch {
	case milli < MinCPUMilli:
		c.add(p.Name, path+".cpu", cpu, `at least "0.08"`, `raise cpu to "0.08" or more; Cloud Run's smallest instance has 0.08 CPU`)
		return
	case whole && !validWholeCPU(milli):
		c.add(p.Name, path+".cpu", cpu, `1, 2, 4, 6 or 8 CPUs, or from "0.08" up to 1`,
			fmt.Sprintf("set cpu to %q: above 1 CPU, Cloud Run takes only these whole numbers", strconv.Itoa(roundCPU(milli)/1000)))
		return
	}
	if !whole {
		if *k.Concurrency != 1 {
			c.add(p.Name, path+".concurrency", strconv.Itoa(*k.Concurrency), fmt.Sprintf("1 with cpu %s", cpu),
				`set concurrency: 1, or cpu: "1"; below 1 CPU Cloud Run serves one request at a time`)
		}
		if k.ExecutionEnvironment == Gen2 {
			c.add(p.Name, path+".cpu", cpu, "1 or more in the second-generation environment",
				`set cpu: "1", or executionEnvironment: gen1; Cloud Run runs less than 1 CPU only in the first generation`)
		}
		for _, sub := range p.Subscriptions {
			if sub != nil && sub.ConsumerPulls() {
				c.add(p.Name, path+".cpu", cpu, "1 or more when the consumer pulls (its CPU is always allocated)",
					`set cpu: "1"; Cloud Run allocates less than 1 CPU only while a request runs, and pulling happens outside requests`)
				break
			}
		}
	}
	if !memOK {
		return // reported by validateConsumer
	}
	mem := strconv.Quote(k.Memory)
	switch lo, hi := memoryRange(milli); {
	case mib < MinMemoryMiB:
		c.add(p.Name, path+".memory", mem, fmt.Sprintf("%dMi–%s", MinMemoryMiB, formatMiB(MaxMemoryMiB)), fmt.Sprintf("raise memory to %dMi or more", MinMemoryMiB))
	case mib > MaxMemoryMiB:
		c.add(p.Name, path+".memory", mem, fmt.Sprintf("%dMi–%s", MinMemoryMiB, formatMiB(MaxMemoryMiB)),
			fmt.Sprintf(`lower memory to %s or less: Cloud Run's largest instance has %s with cpu: "8"`, formatMiB(MaxMemoryMiB), formatMiB(MaxMemoryMiB)))
	case mib > hi:
		c.add(p.Name, path+".memory", mem, fmt.Sprintf("at most %s with cpu %s", formatMiB(hi), cpu),
			fmt.Sprintf("set cpu: %q or more, or lower memory to %s; %s", cpuFor(mib), formatMiB(hi), cpuMemoryRule))
	case mib < lo:
		c.add(p.Name, path+".memory", mem, fmt.Sprintf("at least %s with cpu %s", formatMiB(lo), cpu),
			fmt.Sprintf("raise memory to %s, or lower cpu; %s", formatMiB(lo), cpuMemoryRule))
	case k.ExecutionEnvironment == Gen2 && mib < MinGen2MemoryMiB:
		c.add(p.Name, path+".memory", mem, fmt.Sprintf("at least %dMi in the second-generation environment", MinGen2MemoryMiB),
			fmt.Sprintf("raise memory to %dMi, or set executionEnvironment: gen1 to run with less", MinGen2MemoryMiB))
	default:
		checkMessageFits(c, p, path, mib)
	}
}

// cpuMemoryRule is Cloud Run's table, for fixes.
const cpuMemoryRule = "Cloud Run allows up to 512Mi below 0.5 CPU, 1Gi below 1, 4Gi with 1 CPU, 8Gi with 2, 2–16Gi with 4, 4–24Gi with 6 and 4–32Gi with 8"

// memoryRange is the memory range, in MiB, Cloud Run allows with milli CPU.
func memoryRange(milli int) (lo, hi int) {
	switch {
	case milli < 500:
		return MinMemoryMiB, 512
	case milli < 1000:
		return MinMemoryMiB, 1 << 10
	}
	lo, hi, _ = cpuMemory(milli / 1000)
	return lo, hi
}

// validWholeCPU reports whether milli is a whole CPU count Cloud Run offers.
func validWholeCPU(milli int) bool {
	_, _, ok := cpuMemory(milli / 1000)
	return milli%1000 == 0 && ok
}

// cpuFor is the least whole CPU count that allows mib of memory.
func cpuFor(mib int) string {
	for _, n := range wholeCPUs() {
		if _, hi, _ := cpuMemory(n); mib <= hi {
			return strconv.Itoa(n)
		}
	}
	return "8"
}

// checkMessageFits reports a memory limit that cannot hold even one message
// of the pipeline's maximum size next to the consumer itself: every such
// delivery would run the instance out of memory.
func checkMessageFits(c *collector, p *Pipeline, path string, mib int) {
	k := &p.Consumer
	maxMsg := int64(*k.MaxMessageBytes)
	if CountError(BoundAt("pipelines.*.consumer.maxMessageBytes"), float64(maxMsg)) != nil {
		return // out of its range: reported as that alone
	}
	if limits.MaxConcurrency(int64(mib)<<20, maxMsg, 1) > 0 {
		return
	}
	need := mib
	for need < MaxMemoryMiB && limits.MaxConcurrency(int64(need)<<20, maxMsg, 1) == 0 {
		need++
	}
	// The largest message that fits: MaxConcurrency falls as the size grows.
	lo, hi := int64(0), maxMsg
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if limits.MaxConcurrency(int64(mib)<<20, mid, 1) > 0 {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	fix := fmt.Sprintf("raise memory to %s or more", formatMiB(need))
	if lo > 0 {
		fix += fmt.Sprintf(", or lower consumer.maxMessageBytes to %d if no producer sends larger messages", lo)
	}
	c.add(p.Name, path+".memory", strconv.Quote(k.Memory),
		fmt.Sprintf("room for at least one %d-byte message (consumer.maxMessageBytes) beside the consumer", maxMsg),
		fix+"; a smaller instance runs out of memory on the first large message")
}
