package spec

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/internal/durations"
)

// TestDurationFixStaysInRange: for every duration setting of the stack config and any
// value that does not parse (spelled-out units, unknown units, fractions of a day,
// negatives, words), every value the fix proposes parses and lies in the setting's
// range, and a plainly meant value ("10 minutes") is proposed itself when the range
// holds it. (The fix used to propose "90s", "10m", "1h30m" or "14d" for any key.)
func TestDurationFixStaysInRange(t *testing.T) {
	quoted := regexp.MustCompile(`"([^"]*)"`)
	units := []string{"seconds", "sec", "s", "minutes", "min", "m", "hours", "hrs", "h", "days", "day", "d", "weeks", "y", "q", "ms"}
	rng := rand.New(rand.NewPCG(37, 9))
	spans := 0
	for _, b := range Bounds() {
		if b.Kind != Span {
			continue
		}
		spans++
		inputs := []string{"forever", "ten minutes", "1.5d", "-5m", "5m30", "1y", "10 minutes", "   "}
		for range 60 {
			n := rng.IntN(120)
			u := units[rng.IntN(len(units))]
			sep := []string{"", " ", "  "}[rng.IntN(3)]
			inputs = append(inputs, fmt.Sprintf("%d%s%s", n, sep, u))
		}
		for _, in := range inputs {
			_, err := ParseDuration(in)
			if err == nil {
				continue // a value the grammar takes: not this fix's case
			}
			fix := durationFix(b, in, err)
			proposed := quoted.FindAllStringSubmatch(fix, -1)
			if len(proposed) == 0 {
				t.Errorf("%s = %q: fix %q proposes no value", b.Path, in, fix)
			}
			for _, q := range proposed {
				d, perr := durations.Parse(q[1])
				if perr != nil || int64(d) < b.Min || int64(d) > b.Max {
					t.Errorf("%s = %q: fix %q proposes %q, outside %s", b.Path, in, fix, q[1], b.Allowed())
				}
			}
			if g, ok := durations.Guess(in); ok && int64(g) >= b.Min && int64(g) <= b.Max && !strings.Contains(fix, fmt.Sprintf("%q", b.Format(int64(g)))) {
				t.Errorf("%s = %q: fix %q does not propose %s, which it plainly means", b.Path, in, fix, b.Format(int64(g)))
			}
		}
	}
	if spans < 5 {
		t.Fatalf("only %d duration settings in Bounds()", spans)
	}
}

// TestGuess: the spelled forms people write read as they mean; anything else does not.
func TestGuess(t *testing.T) {
	for in, want := range map[string]time.Duration{"10 minutes": 10 * time.Minute, "30 sec": 30 * time.Second, "7 days": 7 * Day, "2hrs": 2 * time.Hour, " 1 Hour ": time.Hour} {
		if got, ok := durations.Guess(in); !ok || got != want {
			t.Errorf("Guess(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"forever", "1.5 days", "10 fortnights", "m10", ""} {
		if got, ok := durations.Guess(in); ok {
			t.Errorf("Guess(%q) = %v, want no guess", in, got)
		}
	}
}
