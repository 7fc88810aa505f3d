package spec

import (
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
