// Package english writes counts the way the project's messages and reports do:
// "1 deny", "2 denies", "0 resources". It is a standard-library leaf, so any
// package may use it.
package english

import "strconv"

// Noun returns one when n is 1 and many otherwise.
func Noun(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Count returns n and its noun in agreement: Count(1, "call", "calls") is
// "1 call", Count(0, "call", "calls") is "0 calls".
func Count(n int, one, many string) string {
	return strconv.Itoa(n) + " " + Noun(n, one, many)
}
