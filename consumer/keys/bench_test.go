package keys

import (
	"fmt"
	"strings"
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

// bigPayloads are maximum-size (10 MB) payloads as the memory benchmark
// sends them: a valid system event with one long string, and a poison
// object of nine megabyte-long keys.
func bigPayloads() map[string][]byte {
	const size = 10_000_000
	head := `{"service":"svc-1","status":"degraded","producedAt":"2026-01-02T03:04:05Z","detail":"`
	valid := head + strings.Repeat("x", size-len(head)-2) + `"}`
	var p strings.Builder
	p.WriteString("{")
	for k := range 9 {
		if k > 0 {
			p.WriteString(",")
		}
		fmt.Fprintf(&p, `"1-%d-%s":%d`, k, strings.Repeat("k", size/9-16), k)
	}
	p.WriteString("}")
	return map[string][]byte{"valid": []byte(valid), "poison": []byte(p.String())}
}

// BenchmarkFingerprintMax: B/op is what fingerprinting a maximum-size
// payload allocates: its form is hashed as it is written (writeCanonical),
// so a few kilobytes (it was 1.25x the payload, the form's buffer, plus
// jsontext's scratch for reordering an object's members: 14.0 MB for the
// valid one, 12.5 MB for the poison one).
func BenchmarkFingerprintMax(b *testing.B) {
	for name, payload := range bigPayloads() {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Fingerprint(payload); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(payload)), "payload-B")
		})
	}
}
