package engine

import (
	"errors"
	"math"
	"time"

	"github.com/eventpipe/eventpipe/consumer/store"
)

func isNotFound(err error) bool      { return errors.Is(err, store.ErrNotFound) }
func isAlreadyExists(err error) bool { return errors.Is(err, store.ErrAlreadyExists) }

// str, i64 and tm read typed fields tolerantly (missing or mistyped gives the zero value).
func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func i64(m map[string]any, k string) int64 {
	switch v := m[k].(type) {
	case int64:
		return v
	case float64:
		// Saturated: a store that keeps integers as doubles (the npm
		// Firestore emulator) gives back 2^63 for math.MaxInt64, which
		// int64() would turn into an unspecified value.
		switch {
		case v >= math.MaxInt64:
			return math.MaxInt64
		case v <= math.MinInt64:
			return math.MinInt64
		}
		return int64(v)
	}
	return 0
}

func tm(m map[string]any, k string) time.Time {
	t, _ := m[k].(time.Time)
	return t
}

func has(m map[string]any, k string) bool {
	_, ok := m[k]
	return ok
}

func sub(m map[string]any, k string) map[string]any {
	s, _ := m[k].(map[string]any)
	return s
}
