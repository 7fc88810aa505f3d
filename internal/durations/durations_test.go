package durations

import (
	"errors"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr error
	}{
		{"14d", 14 * Day, nil},
		{" 0d ", 0, nil},
		{"600s", 600 * time.Second, nil},
		{"1h30m", 90 * time.Minute, nil},
		{"-5s", -5 * time.Second, nil}, // sign is the caller's business
		{"1.5d", 0, ErrDays},
		{"-1d", 0, ErrDays},
		{"d", 0, ErrDays},
		{"10", 0, ErrSyntax},
		{"", 0, ErrSyntax},
		{"ten minutes", 0, ErrSyntax},
	}
	for _, tc := range tests {
		got, err := Parse(tc.in)
		if got != tc.want || !errors.Is(err, tc.wantErr) {
			t.Errorf("Parse(%q) = %v, %v; want %v, %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestWholeAndSeconds(t *testing.T) {
	tests := []struct {
		in     time.Duration
		want   string
		wantOK bool
	}{
		{14 * Day, "14d", true},
		{36 * time.Hour, "36h", true},
		{90 * time.Minute, "90m", true},
		{45 * time.Second, "45s", true},
		{0, "", false},
		{-time.Minute, "", false},
		{1500 * time.Millisecond, "", false},
	}
	for _, tc := range tests {
		got, ok := Whole(tc.in)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("Whole(%v) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.wantOK)
		}
	}
	if got := Seconds(10 * time.Minute); got != "600s" {
		t.Errorf("Seconds(10m) = %q", got)
	}
}
