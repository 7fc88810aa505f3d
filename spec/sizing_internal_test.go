package spec

import (
	"fmt"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/limits"
)

// TestMemoryMustHoldOneMessage: an instance whose memory cannot hold one
// message of the pipeline's maximum size beside the consumer is refused,
// with the memory that would and the message size that fits. (With today's
// memory model every size Cloud Run accepts holds one 10 MB message, so the
// rule is exercised below Cloud Run's minimum.)
func TestMemoryMustHoldOneMessage(t *testing.T) {
	const mib = 64
	p := &Pipeline{Name: "orders", Consumer: Consumer{Memory: "64Mi", MaxMessageBytes: ptr(limits.MaxMessageBytes)}}
	c := &collector{}
	checkMessageFits(c, p, "consumer", mib)
	if len(c.errs) != 1 {
		t.Fatalf("errs = %v, want one", c.errs)
	}
	e := c.errs[0]
	need := 0
	for n := mib; n <= MaxMemoryMiB; n++ {
		if limits.MaxConcurrency(int64(n)<<20, limits.MaxMessageBytes, 1) > 0 {
			need = n
			break
		}
	}
	for _, want := range []string{"consumer.memory", "one 10000000-byte message", "raise memory to " + formatMiB(need), "lower consumer.maxMessageBytes to "} {
		if !strings.Contains(e.Error(), want) {
			t.Errorf("error %q lacks %q", e.Error(), want)
		}
	}
	// The message size it offers fits, and one byte more does not.
	_, after, _ := strings.Cut(e.Fix, "maxMessageBytes to ")
	var fits int64
	for _, r := range after {
		if r < '0' || r > '9' {
			break
		}
		fits = fits*10 + int64(r-'0')
	}
	if limits.MaxConcurrency(mib<<20, fits, 1) != 1 || limits.MaxConcurrency(mib<<20, fits+1, 1) != 0 {
		t.Errorf("offered maxMessageBytes %d is not the largest that fits in %dMi", fits, mib)
	}

	c = &collector{}
	p.Consumer.MaxMessageBytes = ptr(1_000_000)
	checkMessageFits(c, p, "consumer", mib)
	if len(c.errs) != 0 {
		t.Errorf("a 1 MB maximum fits in %dMi, got %v", mib, c.errs)
	}
}

// TestInstanceTotals checks checkInstance against Cloud Run's
// instance table, written here independently, for every whole CPU count
// and every memory size in 256Mi steps with the collector.
func TestInstanceTotals(t *testing.T) {
	// The memory range (MiB) Cloud Run allows an instance of n CPUs.
	table := map[int][2]int{1: {128, 4096}, 2: {128, 8192}, 4: {2048, 16384}, 6: {4096, 24576}, 8: {4096, 32768}}
	for _, cpu := range []int{1, 2, 4, 6, 8} {
		for mib := 512; mib <= 32768; mib += 256 {
			p := &Pipeline{Name: "orders", Consumer: Consumer{CPU: fmt.Sprint(cpu), Memory: fmt.Sprintf("%dMi", mib)}}
			totalCPU, totalMiB := cpu+1, mib+256
			instance := 0
			for _, n := range []int{1, 2, 4, 6, 8} {
				if totalCPU <= n {
					instance = n
					break
				}
			}
			fits := instance > 0 && totalMiB >= table[instance][0] && totalMiB <= table[instance][1]
			c := &collector{}
			checkInstance(c, p, "consumer", true)
			errs := c.errors()
			if fits != (len(errs) == 0) {
				t.Errorf("cpu %d, memory %dMi + collector: fits %v, got %v", cpu, mib, fits, errs)
			}
		}
	}
}
