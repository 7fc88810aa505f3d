package alerts

import "testing"

// BenchmarkNewPlan measures building one pipeline's plan (validation, 24
// policies, their runbooks) — the work the Pipeline component adds per
// pipeline to every render.
func BenchmarkNewPlan(b *testing.B) {
	tg, c := testTarget(), Defaults()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewPlan(tg, c); err != nil {
			b.Fatal(err)
		}
	}
}
