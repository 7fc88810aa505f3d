package plan

import (
	"testing"

	"github.com/eventpipe/eventpipe/policies/internal/benchgen"
)

// BenchmarkParse10k parses the 10,000-resource preview scripts/bench-check.sh checks.
func BenchmarkParse10k(b *testing.B) {
	data, err := benchgen.Generate(10000)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := Parse(data, "bench.json")
		if err != nil {
			b.Fatal(err)
		}
		if len(p.Resources) != 10000 {
			b.Fatalf("%d resources", len(p.Resources))
		}
	}
}

// BenchmarkLines10k finds the report lines of the 10,000 resources (run by `eventpipe
// check` beside Parse).
func BenchmarkLines10k(b *testing.B) {
	data, err := benchgen.Generate(10000)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if n := len(Lines(data, 10000)); n != 10000 {
			b.Fatalf("%d lines", n)
		}
	}
}
