package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestGCForInput checks when a check gives the garbage collector back its defaults: only
// for inputs whose allowed heap (gcInputFactor times their size) passes gcCeiling, and
// never when GOGC or GOMEMLIMIT decide.
func TestGCForInput(t *testing.T) {
	cases := []struct {
		name     string
		gogc     string
		size     int
		restored bool
	}{
		{"10 MB preview keeps collection off", "", 10 << 20, false},
		{"exactly at the ceiling keeps it off", "", gcCeiling / gcInputFactor, false},
		{"over the ceiling collects as Go does", "", gcCeiling/gcInputFactor + 1, true},
		{"GOGC set: eventpipe leaves the collector alone", "200", 1 << 30, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc)
			t.Setenv("GOMEMLIMIT", "")
			oldPercent := debug.SetGCPercent(-1)
			oldLimit := debug.SetMemoryLimit(gcCeiling)
			t.Cleanup(func() {
				debug.SetGCPercent(oldPercent)
				debug.SetMemoryLimit(oldLimit)
			})
			if got := gcForInput(tc.size); got != tc.restored {
				t.Fatalf("gcForInput(%d) = %v, want %v", tc.size, got, tc.restored)
			}
			percent, limit := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
			if tc.restored && (percent != 100 || limit != math.MaxInt64) {
				t.Errorf("after a big input: GC percent %d, memory limit %d; want 100 and no limit", percent, limit)
			}
			if !tc.restored && (percent != -1 || limit != gcCeiling) {
				t.Errorf("collector changed: GC percent %d, memory limit %d; want -1 and %d", percent, limit, int64(gcCeiling))
			}
		})
	}
}
