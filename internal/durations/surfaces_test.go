package durations_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/alerts"
	"github.com/eventpipe/eventpipe/consumer/route"
	"github.com/eventpipe/eventpipe/consumer/server"
	"github.com/eventpipe/eventpipe/internal/durations"
	"github.com/eventpipe/eventpipe/spec"
)

// surface is one place eventpipe reads a duration from text: ok says it accepted s.
type surface struct {
	name  string
	parse func(t *testing.T, s string) (d time.Duration, ok bool)
}

// surfaces are every config surface that reads a duration: the stack config (spec), the
// alerts block, the consumer's routes file, and its EVENTPIPE_* variables.
var surfaces = []surface{
	{"stack config (spec.ParseDuration)", func(t *testing.T, s string) (time.Duration, bool) {
		d, err := spec.ParseDuration(s)
		return d, err == nil
	}},
	{"alerts config (alerts.Duration)", func(t *testing.T, s string) (time.Duration, bool) {
		var d alerts.Duration
		if err := json.Unmarshal(jsonString(t, s), &d); err != nil {
			t.Fatalf("alerts.Duration refused the JSON string outright: %v", err)
		}
		v, err := d.Parse()
		return v, err == nil
	}},
	{"routes file (route.Duration)", func(t *testing.T, s string) (time.Duration, bool) {
		var d route.Duration
		err := json.Unmarshal(jsonString(t, s), &d)
		return time.Duration(d), err == nil
	}},
	{"EVENTPIPE_MAX_EVENT_SKEW", func(t *testing.T, s string) (time.Duration, bool) {
		c, err := server.ConfigFromEnv(func(k string) (string, bool) {
			if k == "EVENTPIPE_MAX_EVENT_SKEW" {
				return s, true
			}
			return "", false
		})
		return c.MaxEventSkew, err == nil
	}},
}

func jsonString(t *testing.T, s string) []byte {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkSurfaces asserts the invariant: a duration text one surface accepts, every surface
// accepts, as the same time.Duration, and it is what durations.Parse reads. The variables'
// own bound (a positive duration; blank is unset) is the one difference allowed.
func checkSurfaces(t *testing.T, s string) {
	want, err := durations.Parse(s)
	for _, sf := range surfaces {
		got, ok := sf.parse(t, s)
		if strings.HasPrefix(sf.name, "EVENTPIPE_") {
			if strings.TrimSpace(s) == "" || (err == nil && want == 0) {
				continue // unset, or below the variable's bound: not the grammar's business
			}
		}
		if ok != (err == nil) || (ok && got != want) {
			t.Errorf("%q: %s accepts=%v as %v; durations.Parse = %v, %v", s, sf.name, ok, got, want, err)
		}
	}
}

// TestSurfacesAgree walks a table built from every unit, number form and spelling the
// grammar has (and the ones it refuses), plus the text that broke it: "1d" in a routes file.
func TestSurfacesAgree(t *testing.T) {
	texts := []string{"1d", "14d", "0d", "0s", "0", "", " ", " 90s ", "1.5d", "-1d", "-5s", "+5s", "1h30m",
		"2h45m30.5s", "1e3s", "d", "s", "1D", "1 d", "5m0s", "1µs", "1us", "99999999999d", "9223372036s", "10"}
	for _, n := range []string{"0", "1", "7", "90", "1.5", ".5", "007", "-3"} {
		for _, u := range []string{"ns", "us", "µs", "ms", "s", "m", "h", "d", "", "w", "y"} {
			texts = append(texts, n+u, " "+n+u, n+u+"\t")
		}
	}
	for i := range 40 {
		texts = append(texts, fmt.Sprintf("%dd", i*9), fmt.Sprintf("%dh%dm", i, i*7%60))
	}
	for _, s := range texts {
		checkSurfaces(t, s)
	}
}

// FuzzSurfacesAgree is TestSurfacesAgree on generated texts.
func FuzzSurfacesAgree(f *testing.F) {
	for _, s := range []string{"1d", "14d", "90s", "1h30m", "1.5d", "-5s", "", "10", "2.5s"} {
		f.Add(s)
	}
	f.Fuzz(checkSurfaces)
}
