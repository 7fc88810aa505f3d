package spec

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/alerts"
	"github.com/google/go-cmp/cmp"
)

// wellTyped is a random value of type t as a stack file gives it (decoded
// JSON), every leaf of the right JSON type; leaves lists the paths of its
// leaves below path.
func wellTyped(r *rand.Rand, t reflect.Type, path string, leaves *[]string) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	leaf := func(v any) any { *leaves = append(*leaves, path); return v }
	switch {
	case t == rawMessageType:
		return map[string]any{"push": map[string]any{"serverErrorWarning": 0.05}}
	}
	switch t.Kind() {
	case reflect.Struct:
		m := map[string]any{}
		for _, name := range fieldNames(t) {
			if r.Intn(3) > 0 {
				m[name] = wellTyped(r, fieldsByName(t)[name].Type, path+"."+name, leaves)
			}
		}
		return m
	case reflect.Map:
		m := map[string]any{}
		for i := range r.Intn(3) {
			k := fmt.Sprint("k", i)
			m[k] = wellTyped(r, t.Elem(), path+"."+k, leaves)
		}
		return m
	case reflect.Slice:
		l := []any{}
		for i := range r.Intn(3) {
			l = append(l, wellTyped(r, t.Elem(), fmt.Sprintf("%s[%d]", path, i), leaves))
		}
		return l
	case reflect.String:
		return leaf("s")
	case reflect.Bool:
		return leaf(r.Intn(2) == 0)
	case reflect.Int:
		return leaf(float64(r.Intn(100)))
	case reflect.Float64:
		return leaf(r.Float64())
	}
	panic("no generator for " + t.String())
}

// at sets the value at path (a leaf path of wellTyped, below its root) in v, or deletes it
// when del.
func at(v any, path string, x any, del bool) {
	parts := strings.FieldsFunc(strings.ReplaceAll(path, "[", ".["), func(r rune) bool { return r == '.' })
	parts = parts[1:] // the root
	for i, p := range parts {
		last := i == len(parts)-1
		switch c := v.(type) {
		case map[string]any:
			if last && del {
				delete(c, p)
			} else if last {
				c[p] = x
			}
			v = c[p]
		case []any:
			var n int
			fmt.Sscanf(p, "[%d]", &n)
			if last {
				c[n] = x
			}
			v = c[n]
		}
	}
}

// TestDecodeIsJSONWithFieldErrors: for generated values of the stack's
// structured keys, decode gives what encoding/json gives (into the same
// starting value) and reports nothing; with one leaf of the wrong JSON type
// it reports exactly that leaf, on its full path, and decodes the rest as
// encoding/json decodes the value without it (a leaf in a list drops the
// list, which then keeps what it held).
func TestDecodeIsJSONWithFieldErrors(t *testing.T) {
	r := rand.New(rand.NewSource(24))
	targets := []func() any{
		func() any { return &Defaults{} },
		func() any { return &StackAlerts{} },
		func() any { return &[]string{} },
		// Into what it holds; a list is replaced whole, where encoding/json
		// would decode into the old elements, so the defaults' list is left out.
		func() any { c := alerts.Defaults(); c.SLO.BurnRates = nil; return &c },
	}
	wrong := map[bool]any{true: "text", false: []any{1.0}}
	checked := 0
	for i := range 3000 {
		mk := targets[i%len(targets)]
		var leaves []string
		raw := wellTyped(r, reflect.TypeOf(mk()).Elem(), "k", &leaves)
		text, _ := json.Marshal(raw)
		want, got := mk(), mk()
		if err := json.Unmarshal(text, want); err != nil {
			t.Fatal(err)
		}
		if errs := Decode("k", text, got); errs != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%s): %v %s", text, errs, cmp.Diff(want, got))
		}
		if len(leaves) == 0 {
			continue
		}
		leaf := leaves[r.Intn(len(leaves))]
		bad := wrong[r.Intn(2) == 0]
		if strings.HasSuffix(leaf, "]") || reflect.TypeOf(mk()).Elem().Kind() == reflect.Slice {
			continue // a bad list element drops its list; the shape cases below cover it
		}
		at(raw, leaf, bad, false)
		text, _ = json.Marshal(raw)
		errs := Decode("k", text, got)
		if len(errs) == 0 {
			// "text" is right for a string leaf; a list is wrong for every leaf.
			continue
		}
		if len(errs) != 1 || errs[0].Path != leaf || errs[0].Fix == "" || errs[0].Allowed == "" {
			t.Fatalf("Decode(%s) errors %v, want one at %s", text, errs, leaf)
		}
		at(raw, leaf, nil, true)
		text, _ = json.Marshal(raw)
		want, got = mk(), mk()
		_ = json.Unmarshal(text, want)
		Decode("k", text, got)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("without the bad leaf %s: %+v, want %+v", leaf, got, want)
		}
		checked++
	}
	if checked < 500 {
		t.Fatalf("only %d wrong leaves checked", checked)
	}
}
