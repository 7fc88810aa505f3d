package spec_test

import (
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/spec"
)

func TestParseDuration(t *testing.T) {
	cases := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"10s", 10 * time.Second, false},
		{"10m", 10 * time.Minute, false},
		{"1h30m", 90 * time.Minute, false},
		{"14d", 14 * spec.Day, false},
		{"0s", 0, false},
		{" 7d ", 7 * spec.Day, false},
		{"", 0, true},
		{"7", 0, true},
		{"-5s", 0, true},
		{"1.5d", 0, true},
		{"-1d", 0, true},
		{"ten seconds", 0, true},
	}
	for _, tc := range cases {
		got, err := spec.ParseDuration(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestFormatAndSeconds(t *testing.T) {
	cases := []struct {
		d          time.Duration
		text, secs string
	}{
		{14 * spec.Day, "14d", "1209600s"},
		{2 * time.Hour, "2h", "7200s"},
		{10 * time.Minute, "10m", "600s"},
		{45 * time.Second, "45s", "45s"},
		{0, "0s", "0s"},
		{1500 * time.Millisecond, "1.5s", "1s"},
	}
	for _, tc := range cases {
		if got := spec.FormatDuration(tc.d); got != tc.text {
			t.Errorf("FormatDuration(%v) = %q, want %q", tc.d, got, tc.text)
		}
		if got := spec.Seconds(tc.d); got != tc.secs {
			t.Errorf("Seconds(%v) = %q, want %q", tc.d, got, tc.secs)
		}
	}
}
