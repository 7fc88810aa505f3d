package store

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// TestCloneInModelIsCheckAndClone: over generated values, in and out of
// the value model, nested, cloneInModel reports InValueModel and, when it
// holds, gives an equal value that shares no map or slice with its input.
func TestCloneInModelIsCheckAndClone(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	utc := time.Date(2026, 1, 8, 10, 0, 0, 0, time.UTC)
	scalars := []any{nil, true, "s", int64(3), 0.5, utc, // in the model
		7, float32(1), math.NaN(), math.Inf(1), utc.In(time.FixedZone("CET", 3600)), time.Now(), []string{"a"}, map[string]int{"a": 1}, []any(nil), map[string]any(nil)}
	inModel := 6
	var gen func(depth int) any
	gen = func(depth int) any {
		switch k := r.IntN(4); {
		case depth > 0 && k == 0:
			m := map[string]any{}
			for i := range r.IntN(4) {
				m[string(rune('a'+i))] = gen(depth - 1)
			}
			return m
		case depth > 0 && k == 1:
			s := []any{}
			for range r.IntN(4) {
				s = append(s, gen(depth-1))
			}
			return s
		}
		if r.IntN(8) == 0 {
			return scalars[inModel+r.IntN(len(scalars)-inModel)]
		}
		return scalars[r.IntN(inModel)]
	}
	for range 20000 {
		v := gen(3)
		c, ok := cloneInModel(v)
		if ok != InValueModel(v) {
			t.Fatalf("cloneInModel(%#v) ok = %v, InValueModel %v", v, ok, !ok)
		}
		if !ok {
			continue
		}
		if !reflect.DeepEqual(c, v) {
			t.Fatalf("cloneInModel(%#v) = %#v", v, c)
		}
		if shares(c, v) {
			t.Fatalf("cloneInModel(%#v) shares a map or slice with its input", v)
		}
	}
}

// shares reports whether a and b, equal values, share a map or slice.
func shares(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y := b.(map[string]any)
		if reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer() {
			return true
		}
		for k := range x {
			if shares(x[k], y[k]) {
				return true
			}
		}
	case []any:
		y := b.([]any)
		if len(x) > 0 && &x[0] == &y[0] {
			return true
		}
		for i := range x {
			if shares(x[i], y[i]) {
				return true
			}
		}
	}
	return false
}
