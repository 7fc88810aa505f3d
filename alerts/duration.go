package alerts

import (
	"time"

	"github.com/eventpipe/eventpipe/internal/durations"
)

// Duration is a length of time written the way people put it in stack
// config: "90s", "5m", "1h", "3d" (the grammar of internal/durations). It is a string, so stack config, Go
// programs and Pulumi programs in other languages all write it alike;
// Validate reports a value that does not parse, with the field and the fix.
type Duration string

// Dur returns d as a Duration in the largest whole unit ("5m", "3d").
func Dur(d time.Duration) Duration { return Duration(promDuration(d)) }

// D parses d. A value that does not parse is 0; Validate reports it.
func (d Duration) D() time.Duration {
	v, err := d.Parse()
	if err != nil {
		return 0
	}
	return v
}

// String formats d in the largest unit that divides it exactly, e.g. "3d",
// "6h", "90m", "45s": the same form PromQL range selectors accept.
func (d Duration) String() string { return promDuration(d.D()) }

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

// Parse parses d with the one duration grammar (internal/durations): what
// D returns, or the error Validate reports for it.
func (d Duration) Parse() (time.Duration, error) { return durations.Parse(string(d)) }
