package plan

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/eventpipe/eventpipe/policies/internal/benchgen"
)

// opaInput gathers the plan's OPA input as the engine does ({"resources": [...]}, see
// policies/engine's toValue) and returns the number of resources.
func opaInput(p *Plan) int {
	terms := make([]*ast.Term, len(p.Resources))
	for i := range p.Resources {
		terms[i] = ast.NewTerm(p.Resources[i].Value())
	}
	return ast.NewArray(terms...).Len()
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

// BenchmarkParse10k parses the 10,000-resource plan of scripts/bench-check.sh in each
// format (parse), and parses it and gathers the OPA input the rules are evaluated on
// (parse+input).
func BenchmarkParse10k(b *testing.B) {
	for _, format := range []Format{FormatPreview, FormatExport, FormatTerraform} {
		data := generated(b, format, 10000)
		b.Run(string(format)+"/parse", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			measure(b, func() {
				if p, err := Parse(data, "bench.json"); err != nil || len(p.Resources) != 10000 {
					b.Fatal(err)
				}
			})
		})
		b.Run(string(format)+"/parse+input", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			measure(b, func() {
				p, err := Parse(data, "bench.json")
				if err != nil || opaInput(p) != 10000 {
					b.Fatal(err)
				}
			})
		})
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

// BenchmarkParseSmall parses the 12-resource preview fixture and gathers its OPA input:
// a small plan must not pay for the parallel machinery.
func BenchmarkParseSmall(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "preview_show_sames.json.txt"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		p, err := Parse(data, "small.json")
		if err != nil || opaInput(p) != 12 {
			b.Fatal(err)
		}
	}
}
