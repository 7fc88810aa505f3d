package alerts

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/eventpipe/eventpipe/internal/durations"
)

// Duration is a time.Duration that reads and writes the short forms people
// put in stack config ("90s", "5m", "1h", "3d"). JSON and YAML carry it as a
// string; a bare JSON number is refused because its unit would be a guess.
type Duration time.Duration

// D converts d to a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d in the largest unit that divides it exactly, e.g. "3d",
// "6h", "90m", "45s" — the same form PromQL range selectors accept.
func (d Duration) String() string { return promDuration(time.Duration(d)) }

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler. It accepts Go duration
// syntax plus a whole-day suffix "d" ("3d"), which Go's parser lacks.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := parseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// parseDuration parses s as a Go duration or as a whole number of days.
func parseDuration(s string) (time.Duration, error) {
	v, err := durations.Parse(s)
	s = strings.TrimSpace(s)
	switch {
	case errors.Is(err, durations.ErrDays):
		return 0, fmt.Errorf("duration %q: want a whole number of days such as \"3d\", or Go syntax such as \"90m\"", s)
	case err != nil:
		return 0, fmt.Errorf("duration %q: want a value such as \"90s\", \"5m\", \"1h\" or \"3d\"", s)
	}
	return v, nil
}

// promDuration formats d in the largest of d, h, m, s that divides it
// exactly; sub-second remainders are not representable and are rounded down.
func promDuration(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	if w, ok := durations.Whole(d); ok {
		return w
	}
	return durations.Seconds(d)
}

// seconds formats d the way Google APIs spell a protobuf Duration: "300s".
func seconds(d time.Duration) string { return durations.Seconds(d) }
