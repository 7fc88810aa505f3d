package alerts

import "testing"

// BenchmarkNewPolicySet measures building one pipeline's PolicySet (validation, 24
// policies, their runbooks) — the work the Pipeline component adds per
// pipeline to every render.
func BenchmarkNewPolicySet(b *testing.B) {
	tg, c := testTarget(), Defaults()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewPolicySet(tg, c); err != nil {
			b.Fatal(err)
		}
	}
}
