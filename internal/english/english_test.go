package english

import (
	"strconv"
	"testing"
)

// TestCountAgreesInNumber: for every n, the noun is singular exactly when n
// is 1, and the count is n's digits, a space and that noun.
func TestCountAgreesInNumber(t *testing.T) {
	for n := -3; n <= 1001; n++ {
		want := "calls"
		if n == 1 {
			want = "call"
		}
		if got := Noun(n, "call", "calls"); got != want {
			t.Errorf("Noun(%d) = %q, want %q", n, got, want)
		}
		if got := Count(n, "call", "calls"); got != strconv.Itoa(n)+" "+want {
			t.Errorf("Count(%d) = %q", n, got)
		}
	}
}
