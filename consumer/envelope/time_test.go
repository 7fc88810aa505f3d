package envelope

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestParseTimeReadsEveryRFC3339Spelling states that ParseTime reads every
// spelling RFC 3339 gives one instant: "T" or "t", "Z", "z" or a numeric
// offset, and fractions of 0 to 12 digits (beyond nanoseconds, cut). The
// table is built from every combination over instants from year 1 to 9999.
// Broke it: "2026-01-02t03:00:00z", valid RFC 3339, was refused as "not an
// RFC 3339 timestamp", making the message poison.
func TestParseTimeReadsEveryRFC3339Spelling(t *testing.T) {
	instants := []time.Time{
		time.Date(1, 1, 2, 0, 0, 1, 0, time.UTC),
		time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC),
		time.Date(2026, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(9999, 12, 30, 23, 59, 59, 1, time.UTC),
	}
	zones := []*time.Location{time.UTC, time.FixedZone("", 14*3600), time.FixedZone("", -(9*3600 + 30*60))}
	for _, at := range instants {
		for _, zone := range zones {
			local := at.In(zone)
			for digits := 0; digits <= 12; digits++ {
				frac := ""
				if digits > 0 {
					frac = "." + (fmt.Sprintf("%09d", local.Nanosecond()) + "000")[:digits]
				}
				want := local.Truncate(time.Second).Add(time.Duration(fracNanos(frac)))
				offsets := []string{local.Format("-07:00")}
				if zone == time.UTC {
					offsets = append(offsets, "Z", "z", "+00:00", "-00:00")
				}
				for _, sep := range []string{"T", "t"} {
					for _, off := range offsets {
						s := local.Format("2006-01-02") + sep + local.Format("15:04:05") + frac + off
						got, err := ParseTime(s)
						if err != nil || !got.Equal(want) {
							t.Fatalf("ParseTime(%q) = %v, %v; want %v", s, got, err, want)
						}
					}
				}
			}
		}
	}
	for _, bad := range []string{"", "z", "t", "2026-01-02", "2026-01-02 03:04:05Z", "2026-01-02T03:04:05", "2026-01-02T03:04:05zz",
		"2026-01-02x03:04:05z", "2026-13-02T03:04:05Z", "2026-01-02T24:00:00Z", "yesterday", strings.Repeat("9", 100)} {
		if got, err := ParseTime(bad); err == nil {
			t.Errorf("ParseTime(%q) = %v, want an error", bad, got)
		}
	}
}

// fracNanos is the nanoseconds a fraction ".ddd" names, cut at nine digits.
func fracNanos(frac string) int {
	if frac == "" {
		return 0
	}
	d := (strings.TrimPrefix(frac, ".") + "000000000")[:9]
	var n int
	fmt.Sscanf(d, "%d", &n)
	return n
}
