package envelope

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// subscriptionShape is the shape isSubscriptionName checks, as a regular
// expression: the reference it is held to.
var subscriptionShape = regexp.MustCompile(`^projects/[^/]+/subscriptions/[^/]+$`)

// checkSubscriptionName is isSubscriptionName's invariant: for any text it
// answers as the regular expression does.
func checkSubscriptionName(t *testing.T, s string) {
	t.Helper()
	if got, want := isSubscriptionName(s), subscriptionShape.MatchString(s); got != want {
		t.Fatalf("isSubscriptionName(%q) = %v, the regular expression says %v", s, got, want)
	}
}

// TestIsSubscriptionNameIsTheRegexp checks the invariant on every text of
// up to four pieces from those the shape is made of (its literals, their
// parts, slashes, names, white space, a newline, invalid UTF-8) and on
// generated longer ones.
func TestIsSubscriptionNameIsTheRegexp(t *testing.T) {
	pieces := []string{"projects/", "/subscriptions/", "subscriptions/", "projects", "/", "//", "p", "sub-1", "", "\n", " ", "\xff", "é", "/subscriptions"}
	var walk func(prefix string, n int)
	walk = func(prefix string, n int) {
		checkSubscriptionName(t, prefix)
		if n == 0 {
			return
		}
		for _, p := range pieces {
			walk(prefix+p, n-1)
		}
	}
	walk("", 4)
	r := rand.New(rand.NewPCG(35, 4))
	for range 20000 {
		var b strings.Builder
		for i, n := 0, r.IntN(9); i < n; i++ {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		checkSubscriptionName(t, b.String())
	}
}

// FuzzIsSubscriptionName checks the invariant on any text.
func FuzzIsSubscriptionName(f *testing.F) {
	for _, seed := range []string{"projects/p/subscriptions/s", "projects//subscriptions/s", "projects/p/subscriptions/s/x", "projects/p/topics/t", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) { checkSubscriptionName(t, s) })
}
