package durations

import (
	"errors"
	"strings"
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
		{"2.5s", 2500 * time.Millisecond, nil},
		{"-5s", 0, ErrNegative},
		{"1.5d", 0, ErrDays},
		{"-1d", 0, ErrDays},
		{"+1d", 0, ErrDays},
		{"d", 0, ErrDays},
		{"99999999999d", 0, ErrDays}, // overflows time.Duration
		{"10", 0, ErrSyntax},
		{"", 0, ErrEmpty},
		{"  ", 0, ErrEmpty},
		{"ten minutes", 0, ErrSyntax},
	}
	for _, tc := range tests {
		got, err := Parse(tc.in)
		if got != tc.want || !errors.Is(err, tc.wantErr) {
			t.Errorf("Parse(%q) = %v, %v; want %v, %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		// Every error names the text as written (trimmed) and the grammar as the fix.
		if err != nil && (!strings.Contains(err.Error(), strings.TrimSpace(tc.in)) || !strings.HasSuffix(err.Error(), "write "+Grammar)) {
			t.Errorf("Parse(%q) error %q does not name the value and the fix", tc.in, err)
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

// FuzzWholeRoundTrip: what Whole writes, Parse reads back as the same duration.
func FuzzWholeRoundTrip(f *testing.F) {
	for _, s := range []int64{1, 60, 3600, 86400, 90 * 60, 14 * 86400, 1<<33 - 1} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, secs int64) {
		if secs <= 0 || secs > int64(time.Duration(1<<63-1)/time.Second) {
			return
		}
		d := time.Duration(secs) * time.Second
		w, ok := Whole(d)
		if !ok {
			t.Fatalf("Whole(%v) not ok", d)
		}
		if got, err := Parse(w); err != nil || got != d {
			t.Fatalf("Parse(Whole(%v) = %q) = %v, %v", d, w, got, err)
		}
	})
}
