package spec

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Day is 24 hours, the unit Pub/Sub retention is usually written in.
const Day = 24 * time.Hour

// Duration is a length of time written in config as a string such as "10s",
// "10m", "1h30m" or "14d". An unparsable value is kept as written and
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

// ParseDuration parses "14d", "10m", "600s", "1h30m", "0s".
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty duration")
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a whole number of days", s)
		}
		return time.Duration(n) * Day, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration like 10s, 10m, 1h or 14d", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return d, nil
}

// FormatDuration writes d in the largest whole unit: "14d", "2h", "10m",
// "45s" (fractions fall back to Go's notation).
func FormatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d%Day == 0:
		return strconv.FormatInt(int64(d/Day), 10) + "d"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

// Seconds renders d as Google API duration string, e.g. "600s".
func Seconds(d time.Duration) string {
	return strconv.FormatInt(int64(d/time.Second), 10) + "s"
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
