package spec

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/eventpipe/eventpipe/internal/durations"
)

// Day is 24 hours, the unit Pub/Sub retention is usually written in.
const Day = durations.Day

// Duration is a length of time written in config as a string such as "10s",
// "10m", "1h30m" or "14d" (the grammar of internal/durations). An unparsable value is kept as written and
// reported by validation together with every other error.
type Duration struct {
	// Raw is the value as written in config.
	Raw string
	// D is the parsed value (zero when Raw does not parse).
	D time.Duration
	// Err is the parse error, if any.
	Err error
}

// Dur returns a valid Duration of d, written in the unit config files use.
func Dur(d time.Duration) *Duration {
	return &Duration{Raw: FormatDuration(d), D: d}
}

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

// NewDuration returns the Duration written raw ("10s", "14d"), or nil for
// "" (unset); a value that does not parse keeps its error for validation.
func NewDuration(raw string) *Duration {
	if raw == "" {
		return nil
	}
	d := &Duration{Raw: raw}
	d.D, d.Err = ParseDuration(raw)
	return d
}

// UnmarshalJSON accepts a JSON string; parse errors are kept for validation.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		d.Raw, d.Err = string(b), fmt.Errorf("must be a string such as \"10s\" or \"14d\"")
		return nil
	}
	d.Raw = s
	d.D, d.Err = ParseDuration(s)
	return nil
}

// MarshalJSON writes the duration as written in config.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.Raw) }

// String returns the value as written in config.
func (d Duration) String() string { return d.Raw }
