package engine

import (
	"testing"

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

// measure runs fn b.N times (policies/plan's benchmarks of the same work also report the
// processor time per run).
func measure(b *testing.B, fn func()) {
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fn()
	}
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
