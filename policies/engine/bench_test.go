package engine

import (
	"context"
	"testing"

	"github.com/eventpipe/eventpipe/policies"
	"github.com/eventpipe/eventpipe/policies/internal/benchgen"
	"github.com/eventpipe/eventpipe/policies/plan"
)

// BenchmarkEvaluate10k parses and checks a 10,000-resource preview with the core rules.
func BenchmarkEvaluate10k(b *testing.B) {
	benchmarkEvaluate(b, newEngine(b, nil), 500)
}

// BenchmarkEvaluate10kAllRules is BenchmarkEvaluate10k with every rule file, the alert
// rules included, as `eventpipe check` runs them, once per evaluator (the ratio of the two
// is the interpreter's gain): the generated plan has no alert policies, so each
// subscription also gets the EP104 backlog warning and each dead-lettering one the EP102
// DLQ-alert warning.
func BenchmarkEvaluate10kAllRules(b *testing.B) {
	mods, err := policies.Modules()
	if err != nil {
		b.Fatal(err)
	}
	for _, ev := range Evaluators() {
		b.Run("evaluator="+string(ev), func(b *testing.B) {
			e, err := New(context.Background(), Options{Modules: mods, Package: policies.Package, Evaluator: ev})
			if err != nil {
				b.Fatal(err)
			}
			benchmarkEvaluate(b, e, 500+5000+3500)
		})
	}
}

// benchmarkEvaluate parses and checks the generated plan b.N times, expecting want findings.
func benchmarkEvaluate(b *testing.B, e *Engine, want int) {
	data, err := benchgen.Generate(10000)
	if err != nil {
		b.Fatal(err)
	}
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
		if len(fs) != want {
			b.Fatalf("%d findings, want %d", len(fs), want)
		}
	}
}

// BenchmarkNew measures the start-up cost of an engine with every rule file: with the
// embedded plan, planning the rules at start (what a changed rule file costs), and the
// topdown evaluator's compile and query preparation.
func BenchmarkNew(b *testing.B) {
	mods, err := policies.Modules()
	if err != nil {
		b.Fatal(err)
	}
	changed := map[string]string{}
	for name, src := range mods {
		changed[name] = src + "\n"
	}
	for _, c := range []struct {
		name string
		mods map[string]string
		ev   Evaluator
	}{{"ir-embedded-plan", mods, EvaluatorIR}, {"ir-planned-at-start", changed, EvaluatorIR}, {"topdown", mods, EvaluatorTopdown}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				if _, err := New(context.Background(), Options{Modules: c.mods, Package: policies.Package, Evaluator: c.ev}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRules10k evaluates every rule file on the generated 10,000-resource plan,
// parsed once, with each evaluator: the evaluators' own cost, without plan parsing.
func BenchmarkRules10k(b *testing.B) {
	mods, err := policies.Modules()
	if err != nil {
		b.Fatal(err)
	}
	data, err := benchgen.Generate(10000)
	if err != nil {
		b.Fatal(err)
	}
	p, err := plan.Parse(data, "bench.json")
	if err != nil {
		b.Fatal(err)
	}
	for _, ev := range Evaluators() {
		b.Run("evaluator="+string(ev), func(b *testing.B) {
			e, err := New(context.Background(), Options{Modules: mods, Package: policies.Package, Evaluator: ev})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				fs, err := e.Evaluate(context.Background(), p)
				if err != nil {
					b.Fatal(err)
				}
				if len(fs) != 500+5000+3500 {
					b.Fatalf("%d findings, want %d", len(fs), 500+5000+3500)
				}
			}
		})
	}
}
