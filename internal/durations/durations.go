// Package durations reads and writes the durations people put in stack
// config: Go syntax ("90s", "1h30m") plus a whole-day suffix ("14d") that
// Go's parser lacks, formatted back in the largest whole unit. spec and
// alerts both use it, each with its own messages and edge cases.
package durations

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// Day is 24 hours.
const Day = 24 * time.Hour

// Errors of Parse, for callers to turn into their own messages.
var (
	// ErrDays: the value ends in "d" but is not a whole, non-negative number of days.
	ErrDays = errors.New("not a whole number of days")
	// ErrSyntax: the value is neither Go duration syntax nor a number of days.
	ErrSyntax = errors.New("not a duration")
)

// Parse parses s (surrounding space ignored) as a whole number of days
// ("14d") or as Go duration syntax ("600s", "1h30m").
func Parse(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 {
			return 0, ErrDays
		}
		return time.Duration(n) * Day, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, ErrSyntax
	}
	return d, nil
}

// Whole formats d in the largest of d, h, m, s that divides it exactly
// ("14d", "2h", "90m", "45s"). ok is false when d is not a positive whole
// number of seconds; the caller decides how to write such a value.
func Whole(d time.Duration) (s string, ok bool) {
	if d <= 0 || d%time.Second != 0 {
		return "", false
	}
	for _, u := range [...]struct {
		suffix string
		size   time.Duration
	}{{"d", Day}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}} {
		if d%u.size == 0 {
			return strconv.FormatInt(int64(d/u.size), 10) + u.suffix, true
		}
	}
	return "", false // unreachable: every whole second divides by time.Second
}

// Seconds writes d the way Google APIs spell a protobuf Duration: "600s".
func Seconds(d time.Duration) string {
	return strconv.FormatInt(int64(d/time.Second), 10) + "s"
}
