// Package spelling finds what a misspelt name was meant to be, for the "did you mean"
// of eventpipe's errors and warnings. It imports the standard library alone, so the
// consumer binary may use it too.
package spelling

import "strings"

// MaxDistance is the largest edit distance at which Closest still offers a candidate:
// beyond it a name is something else, not a misspelling.
const MaxDistance = 3

// Closest returns the candidate nearest to got by edit distance, ignoring case, when it
// is at most MaxDistance away; ok is false when none is. Of equally near candidates the
// first wins, so callers pass them in a fixed order.
func Closest(got string, candidates []string) (best string, ok bool) {
	return ClosestWithin(got, candidates, MaxDistance)
}

// ClosestWithin is Closest for a caller that takes fewer edits for a misspelling:
// the nearest candidate when it is at most maxDist away.
func ClosestWithin(got string, candidates []string, maxDist int) (best string, ok bool) {
	bestDist := maxDist + 1
	lower := strings.ToLower(got)
	for _, c := range candidates {
		if d := Distance(lower, strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best, bestDist <= maxDist
}

// Distance is the Levenshtein distance between a and b, in bytes: the fewest single-byte
// insertions, deletions and substitutions that turn a into b.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
