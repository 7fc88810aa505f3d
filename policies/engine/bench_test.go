package engine

import (
	"context"
	"testing"

	"github.com/eventpipe/eventpipe/policies/internal/benchgen"
	"github.com/eventpipe/eventpipe/policies/plan"
)

// BenchmarkEvaluate10k parses and checks a 10,000-resource preview with every rule.
func BenchmarkEvaluate10k(b *testing.B) {
	data, err := benchgen.Generate(10000)
	if err != nil {
		b.Fatal(err)
	}
	e := newEngine(b, nil)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := plan.Parse(data, "bench.json")
		if err != nil {
			b.Fatal(err)
		}
		fs, err := e.Evaluate(context.Background(), p)
		if err != nil {
			b.Fatal(err)
		}
		if len(fs) != 500 {
			b.Fatalf("%d findings, want 500 (every tenth subscription lacks a DLQ policy)", len(fs))
		}
	}
}
