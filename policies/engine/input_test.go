package engine

import (
	"syscall"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/policies/internal/benchgen"
	"github.com/eventpipe/eventpipe/policies/plan"
)

func benchPlan(b *testing.B) []byte {
	b.Helper()
	data, err := benchgen.Generate(10000)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// cpuTime is the processor time (user + system) the process has used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure runs fn b.N times and reports, beside the wall time, the processor time per
// run (every goroutine and the garbage collector included): on a shared machine it
// varies less than the wall time.
func measure(b *testing.B, fn func()) {
	b.ReportAllocs()
	start := cpuTime(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fn()
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N)/1e6, "cpu-ms/op")
}

// BenchmarkToValue10k converts the parsed 10,000-resource preview to OPA input.
func BenchmarkToValue10k(b *testing.B) {
	p, err := plan.Parse(benchPlan(b), "bench.json")
	if err != nil {
		b.Fatal(err)
	}
	measure(b, func() {
		if _, rs, err := toValue(p); err != nil || rs.Len() != 10000 {
			b.Fatal(err)
		}
	})
}

// BenchmarkParse10k parses the 10,000-resource preview (plan.Parse).
func BenchmarkParse10k(b *testing.B) {
	data := benchPlan(b)
	measure(b, func() {
		if p, err := plan.Parse(data, "bench.json"); err != nil || len(p.Resources) != 10000 {
			b.Fatal(err)
		}
	})
}

// BenchmarkParseToValue10k parses the 10,000-resource preview and converts it to OPA
// input: everything `eventpipe check` does before evaluating.
func BenchmarkParseToValue10k(b *testing.B) {
	data := benchPlan(b)
	measure(b, func() {
		p, err := plan.Parse(data, "bench.json")
		if err != nil {
			b.Fatal(err)
		}
		if _, rs, err := toValue(p); err != nil || rs.Len() != 10000 {
			b.Fatal(err)
		}
	})
}
