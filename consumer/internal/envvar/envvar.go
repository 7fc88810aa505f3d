// Package envvar parses the consumer's environment variables with one wording for every
// error: the variable, its value and the fix.
package envvar

import (
	"fmt"
	"strconv"
	"time"

	"github.com/eventpipe/eventpipe/internal/durations"
)

// Duration sets *dst to v, the value of variable k, when v is a positive duration in the
// grammar of the stack config and the routes file (internal/durations: "90s", "1h30m",
// "1d"); an empty v leaves *dst as it is. The error names k, v and example as the fix.
func Duration(k, v, example string, dst *time.Duration) error {
	if v == "" {
		return nil
	}
	d, err := durations.Parse(v)
	if err != nil || d <= 0 {
		return fmt.Errorf("%s=%q: use a positive duration such as %s", k, v, example)
	}
	*dst = d
	return nil
}

// Int sets *dst to v, the value of variable k, when v is a whole number from lo to hi; an
// empty v leaves *dst as it is. The error names k, v and fix.
func Int[T ~int | ~int64](k, v string, lo, hi T, fix string, dst *T) error {
	if v == "" {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < int64(lo) || n > int64(hi) {
		return fmt.Errorf("%s=%q: %s", k, v, fix)
	}
	*dst = T(n)
	return nil
}
