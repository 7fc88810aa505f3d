package evaluate

import (
	"context"
	"fmt"
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/benchgen"
	"github.com/eventpipe/eventpipe/policies"
	"github.com/eventpipe/eventpipe/policies/plan"
)

// BenchmarkCheck10k decodes and checks the generated 10,000-resource preview with every
// rule, as `eventpipe check` does: 500 subscriptions lack a dead-letter policy (EP001); the
// plan has no alert policies, so every subscription also gets the EP104 backlog warning
// and each dead-lettering one the EP102 DLQ-alert warning.
func BenchmarkCheck10k(b *testing.B) {
	data, err := benchgen.Generate(10000)
	if err != nil {
		b.Fatal(err)
	}
	e := allRules(b, nil)
	b.ResetTimer()
	for b.Loop() {
		p, err := plan.Parse(data, "bench.json")
		if err != nil {
			b.Fatal(err)
		}
		fs, err := e.Evaluate(context.Background(), p)
		if err != nil {
			b.Fatal(err)
		}
		if len(fs) != 500+5000+3500 {
			b.Fatalf("%d findings, want 9000", len(fs))
		}
	}
}

// BenchmarkRules10k is BenchmarkCheck10k without decoding: the evaluation alone.
func BenchmarkRules10k(b *testing.B) {
	data, err := benchgen.Generate(10000)
	if err != nil {
		b.Fatal(err)
	}
	p, err := plan.Parse(data, "bench.json")
	if err != nil {
		b.Fatal(err)
	}
	e := allRules(b, nil)
	b.ResetTimer()
	for b.Loop() {
		if _, err := e.Evaluate(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParse10k decodes the generated preview into OPA's value form.
func BenchmarkParse10k(b *testing.B) {
	data, err := benchgen.Generate(10000)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := plan.Parse(data, "bench.json"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNew measures the start-up cost of an engine with every rule file: parsing,
// compiling and preparing the query.
func BenchmarkNew(b *testing.B) {
	mods, err := policies.Modules()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := New(context.Background(), Options{Modules: mods, Package: policies.Package}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEngine measures what a run costs once the rules are compiled (Compile once,
// then Compiled.Engine per configuration, as policies/check does): set beside BenchmarkNew
// it is the start-up a process saves on each run after its first.
func BenchmarkEngine(b *testing.B) {
	mods, err := policies.Modules()
	if err != nil {
		b.Fatal(err)
	}
	c, err := Compile(mods, policies.Package)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := c.Engine(context.Background(), map[string]any{"environment": "prod"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFormats10k checks the same 10,000 resources as a preview, a stack export and a
// Terraform plan (decode and evaluate), so the formats' costs compare in one run:
// go test -run '^$' -bench Formats10k ./policies/evaluate.
func BenchmarkFormats10k(b *testing.B) {
	e := allRules(b, nil)
	for _, f := range []struct {
		name     string
		generate func(int) ([]byte, error)
	}{{"preview", benchgen.Generate}, {"export", benchgen.GenerateExport}, {"terraform", benchgen.GenerateTerraform}} {
		data, err := f.generate(10000)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(f.name, func(b *testing.B) {
			for b.Loop() {
				p, err := plan.Parse(data, "bench.json")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := e.Evaluate(context.Background(), p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkForEach checks the for_each module's plan (benchgen.GenerateForEachTerraform:
// references indexed by each.key, module instances, planned_values and configuration) and
// the same resources as a preview, at about 1,000, 5,000 and 10,000 changes (decode and
// evaluate, as eventpipe check does), reporting the time per change: linear time keeps it
// flat across sizes, and the plan's over the preview's is what a Terraform user pays more.
//
//	go test -run '^$' -bench ForEach -benchtime 1x -count 3 ./policies/evaluate
func BenchmarkForEach(b *testing.B) {
	e := allRules(b, nil)
	for _, n := range []int{1000, 5000, 10000} {
		for _, f := range []struct {
			name     string
			generate func(int) ([]byte, error)
		}{{"preview", benchgen.GenerateForEachPreview}, {"terraform", benchgen.GenerateForEachTerraform}} {
			data, err := f.generate(n)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("%s/%d", f.name, n), func(b *testing.B) {
				var changes int
				for b.Loop() {
					p, err := plan.Parse(data, "bench.json")
					if err != nil {
						b.Fatal(err)
					}
					res, err := e.Check(context.Background(), p)
					if err != nil {
						b.Fatal(err)
					}
					changes = res.Resources
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(changes), "ns/change")
			})
		}
	}
}
