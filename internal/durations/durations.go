// Package durations is the one grammar of the durations eventpipe reads: stack
// config (spec), the alerts block (alerts), the consumer's routes file
// (consumer/route), its EVENTPIPE_* duration variables and the CLI's duration
// flags (cmd/eventpipe). A duration is Go syntax ("90s", "1h30m", "2.5s") or a
// whole number of days ("14d", which Go's parser lacks); surrounding space is
// ignored and a negative value is refused. Each surface keeps its own bounds
// (a window of at least 5m, a positive timeout) but reads the text with Parse
// and reports a text that does not parse with Parse's message. Durations are
// written back in the largest whole unit (Whole) or in Google API seconds
// (Seconds).
package durations

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Day is 24 hours.
const Day = 24 * time.Hour

// Grammar says what Parse accepts, for messages that tell the reader the fix.
const Grammar = `a duration such as "90s", "10m", "1h30m" or "14d"`

// Errors of Parse, wrapped in an error naming the text and the fix; match them
// with errors.Is.
var (
	// ErrEmpty: the value is empty (or only space).
	ErrEmpty = errors.New("empty duration")
	// ErrDays: the value ends in "d" but is not a whole, non-negative number of days.
	ErrDays = errors.New("not a whole number of days")
	// ErrSyntax: the value is neither Go duration syntax nor a number of days.
	ErrSyntax = errors.New("not a duration")
	// ErrNegative: the value parses but is below zero.
	ErrNegative = errors.New("negative duration")
)

// Parse parses s (surrounding space ignored) as a whole number of days
// ("14d") or as Go duration syntax ("600s", "1h30m"). The error says which
// rule s breaks and what to write instead, e.g.
// `"1.5d" is not a whole number of days: write a duration such as "90s", "10m", "1h30m" or "14d"`.
func Parse(s string) (time.Duration, error) {
	d, err := parse(strings.TrimSpace(s))
	if err != nil {
		return 0, &parseError{text: strings.TrimSpace(s), err: err}
	}
	return d, nil
}

func parse(s string) (time.Duration, error) {
	if s == "" {
		return 0, ErrEmpty
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 63)
		if err != nil || time.Duration(n) > time.Duration(1<<63-1)/Day {
			return 0, ErrDays
		}
		return time.Duration(n) * Day, nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, ErrSyntax
	case d < 0:
		return 0, ErrNegative
	}
	return d, nil
}

// parseError is an error of Parse: the text as written, which rule it
// breaks, and the grammar as the fix.
type parseError struct {
	text string
	err  error
}

func (e *parseError) Error() string {
	switch e.err {
	case ErrEmpty:
		return "empty duration: write " + Grammar
	case ErrNegative:
		return fmt.Sprintf("%q is negative: write %s", e.text, Grammar)
	case ErrDays:
		return fmt.Sprintf("%q is not a whole number of days: write %s", e.text, Grammar)
	}
	return fmt.Sprintf("%q is not a duration: write %s", e.text, Grammar)
}

func (e *parseError) Unwrap() error { return e.err }

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

// spelled is a number and a unit written out, as people write durations in prose:
// "10 minutes", "30 sec", "2hrs", "7 days".
var spelled = regexp.MustCompile(`^(\d+)\s*(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?)$`)

// Guess reads a duration Parse refuses but whose meaning is plain, a number and a
// spelled-out unit ("10 minutes", "30 sec", "7 days"), and returns it for a fix to
// propose in the grammar ("10m"); ok is false for anything else.
func Guess(s string) (time.Duration, bool) {
	m := spelled.FindStringSubmatch(strings.ToLower(strings.TrimSpace(s)))
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(m[1], 10, 32)
	if err != nil {
		return 0, false
	}
	unit := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': Day}[m[2][0]]
	return time.Duration(n) * unit, true
}
