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

// BenchmarkToValue10k converts the parsed 10,000-resource preview to OPA input.
func BenchmarkToValue10k(b *testing.B) {
	p, err := plan.Parse(benchPlan(b), "bench.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, rs, err := toValue(p); err != nil || rs.Len() != 10000 {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseToValue10k parses the 10,000-resource preview and converts it to OPA
// input: everything `eventpipe check` does before evaluating.
func BenchmarkParseToValue10k(b *testing.B) {
	data := benchPlan(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := plan.Parse(data, "bench.json")
		if err != nil {
			b.Fatal(err)
		}
		if _, rs, err := toValue(p); err != nil || rs.Len() != 10000 {
			b.Fatal(err)
		}
	}
}
