package envvar

import (
	"strconv"
	"testing"
)

// TestInt checks Int against strconv.Atoi over every value around the bounds and some that
// are not numbers: a value is taken exactly when it is a whole number from lo to hi, an
// empty one leaves the destination as it is, and the error names the variable, the value
// and the fix.
func TestInt(t *testing.T) {
	const lo, hi = -3, 7
	values := []string{"", "x", "1e3", "1.0", " 4", "4 ", "+5", "07", "99999999999999999999"}
	for n := lo - 3; n <= hi+3; n++ {
		values = append(values, strconv.Itoa(n))
	}
	for _, v := range values {
		dst := 42
		err := Int("K", v, lo, hi, "use the fix", &dst)
		n, perr := strconv.Atoi(v)
		switch ok := perr == nil && n >= lo && n <= hi; {
		case v == "":
			if err != nil || dst != 42 {
				t.Errorf("empty: %d %v; want 42 unchanged, no error", dst, err)
			}
		case ok:
			if err != nil || dst != n {
				t.Errorf("%q: %d %v; want %d", v, dst, err, n)
			}
		default:
			if want := "K=" + strconv.Quote(v) + ": use the fix"; err == nil || err.Error() != want || dst != 42 {
				t.Errorf("%q: %d %v; want error %q and 42 unchanged", v, dst, err, want)
			}
		}
	}
}
