package keys

import (
	"testing"
)

// The payload and identity of a system event as the push benchmark sends it.
var (
	benchPayload  = []byte(`{"service":"svc-17","status":"healthy","version":"1.0","region":"eu","producedAt":"2026-01-02T03:00:00.017Z"}`)
	benchIdentity = map[string]any{"service": "svc-17", "producedAt": "2026-01-02T03:00:00.017Z"}
)

func BenchmarkFingerprint(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Fingerprint(benchPayload); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLogicalKey(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := LogicalKey("", benchIdentity); err != nil {
			b.Fatal(err)
		}
	}
}
