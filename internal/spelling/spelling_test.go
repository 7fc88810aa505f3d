package spelling

import (
	"strings"
	"testing"
)

// naive is the Levenshtein distance by its recursive definition, the reference Distance is
// held to on short strings.
func naive(a, b string) int {
	switch {
	case a == "":
		return len(b)
	case b == "":
		return len(a)
	}
	cost := 1
	if a[0] == b[0] {
		cost = 0
	}
	return min(naive(a[1:], b)+1, naive(a, b[1:])+1, naive(a[1:], b[1:])+cost)
}

// FuzzDistance holds Distance to the definition and to the properties of a metric: zero
// exactly for equal strings, symmetric, at least the difference of the lengths and at most
// the longer length, and no more than an edit away from the distance to a one-byte edit of b.
func FuzzDistance(f *testing.F) {
	for _, s := range [][2]string{{"", ""}, {"EVENTPIPE_STOR", "EVENTPIPE_STORE"}, {"deadletter", "deadLetter"}, {"kitten", "sitting"}, {"abc", ""}, {"flaw", "lawn"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a) > 64 || len(b) > 64 {
			t.Skip()
		}
		d := Distance(a, b)
		if (d == 0) != (a == b) {
			t.Fatalf("Distance(%q, %q) = %d", a, b, d)
		}
		if r := Distance(b, a); r != d {
			t.Fatalf("Distance(%q, %q) = %d, but %d the other way", a, b, d, r)
		}
		if lo, hi := max(len(a), len(b))-min(len(a), len(b)), max(len(a), len(b)); d < lo || d > hi {
			t.Fatalf("Distance(%q, %q) = %d, outside [%d, %d]", a, b, d, lo, hi)
		}
		if len(b) > 0 {
			if e := Distance(a, b[1:]); e < d-1 || e > d+1 {
				t.Fatalf("Distance(%q, %q) = %d but Distance to %q = %d: one deletion changes it by at most 1", a, b, d, b[1:], e)
			}
		}
		if len(a) <= 7 && len(b) <= 7 {
			if want := naive(a, b); d != want {
				t.Fatalf("Distance(%q, %q) = %d, want %d", a, b, d, want)
			}
		}
	})
}

// TestDistanceExhaustive compares Distance with the definition on every pair of strings of
// up to 4 bytes over a two-letter alphabet.
func TestDistanceExhaustive(t *testing.T) {
	words := []string{""}
	for n := 1; n <= 4; n++ {
		for _, w := range words {
			if len(w) == n-1 {
				words = append(words, w+"a", w+"b")
			}
		}
	}
	for _, a := range words {
		for _, b := range words {
			if got, want := Distance(a, b), naive(a, b); got != want {
				t.Fatalf("Distance(%q, %q) = %d, want %d", a, b, got, want)
			}
		}
	}
}

// TestClosest: the nearest candidate within MaxDistance, case ignored, the first of equals;
// nothing beyond MaxDistance.
func TestClosest(t *testing.T) {
	names := []string{"EVENTPIPE_STORE", "EVENTPIPE_ENV", "EVENTPIPE_ROUTES", "EVENTPIPE_DLQ"}
	for _, tt := range []struct {
		got, want string
		ok        bool
	}{
		{"EVENTPIPE_STOR", "EVENTPIPE_STORE", true},
		{"eventpipe_store", "EVENTPIPE_STORE", true},
		{"EVENTPIPE_ROUTE", "EVENTPIPE_ROUTES", true},
		{"EVENTPIPE_DLQS", "EVENTPIPE_DLQ", true},
		{"EVENTPIPE_ENVV", "EVENTPIPE_ENV", true},
		{"EVENTPIPE_DATABASE_URL", "", false},
		{"", "", false},
	} {
		got, ok := Closest(tt.got, names)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("Closest(%q) = %q, %v; want %q, %v", tt.got, got, ok, tt.want, tt.ok)
		}
	}
	// Every candidate is its own closest, and a candidate MaxDistance+1 edits away is none.
	for _, n := range names {
		if got, ok := Closest(n, names); !ok || got != n {
			t.Errorf("Closest(%q) = %q, %v", n, got, ok)
		}
		far := n + strings.Repeat("X", MaxDistance+1)
		if got, ok := Closest(far, []string{n}); ok {
			t.Errorf("Closest(%q, [%q]) = %q: %d edits away is not a misspelling", far, n, got, MaxDistance+1)
		}
	}
}

// TestClosestWithinKeepsItsBound: for every bound and every name n edits from a
// candidate, ClosestWithin offers it exactly when n is within the bound.
func TestClosestWithinKeepsItsBound(t *testing.T) {
	for maxDist := 0; maxDist <= MaxDistance+1; maxDist++ {
		for n := 0; n <= MaxDistance+2; n++ {
			got := "prod" + strings.Repeat("x", n)
			meant, ok := ClosestWithin(got, []string{"prod"}, maxDist)
			if ok != (n <= maxDist) || ok && meant != "prod" {
				t.Errorf("ClosestWithin(%q, [prod], %d) = %q, %v", got, maxDist, meant, ok)
			}
		}
	}
}
