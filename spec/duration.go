package spec

import (
	"time"

	"github.com/eventpipe/eventpipe/internal/durations"
)

// Day is 24 hours, the unit Pub/Sub retention is usually written in.
const Day = durations.Day

// ParseDuration parses "14d", "10m", "600s", "1h30m", "0s": the one duration
// grammar (internal/durations), which alerts, the routes file and the
// consumer's variables share.
func ParseDuration(s string) (time.Duration, error) { return durations.Parse(s) }

// FormatDuration writes d in the largest whole unit: "14d", "2h", "10m",
// "45s" (fractions fall back to Go's notation).
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	if w, ok := durations.Whole(d); ok {
		return w
	}
	return d.String()
}

// Seconds renders d as Google API duration string, e.g. "600s".
func Seconds(d time.Duration) string { return durations.Seconds(d) }
