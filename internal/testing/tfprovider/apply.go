package tfprovider

import (
	"fmt"
	"hash/fnv"
	"math/big"

	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// Applying stands in for the API: a created resource gets the id the real provider
// sets, the values the resource type's created function knows the API returns, and for
// every other value still unknown the empty value of its type. Everything is derived from
// the configuration, so a fixture's state is the same on every run.

// applied returns the state after applying planned (nil when destroying).
func (r *resourceType) applied(planned object, p *providerConfig) object {
	if planned == nil {
		return nil
	}
	out := cloneValue(planned).(object)
	if r.created != nil {
		r.created(out, p)
	}
	if isUnknown(out["id"]) && r.id != nil {
		out["id"] = r.id(out)
	}
	return fillUnknown(r.objectType(), out).(object)
}

// fillUnknown replaces every unknown value in v (of type t) with the empty value of its
// type: "", 0, false, an empty collection.
func fillUnknown(t tftypes.Type, v any) any {
	if isUnknown(v) {
		switch {
		case t.Is(tftypes.String):
			return ""
		case t.Is(tftypes.Number):
			return big.NewFloat(0)
		case t.Is(tftypes.Bool):
			return false
		case t.Is(tftypes.List{}), t.Is(tftypes.Set{}):
			return []any{}
		case t.Is(tftypes.Map{}):
			return object{}
		}
		return nil
	}
	switch tt := t.(type) {
	case tftypes.List:
		return fillItems(tt.ElementType, v)
	case tftypes.Set:
		return fillItems(tt.ElementType, v)
	case tftypes.Map:
		if m, ok := v.(object); ok {
			for k, e := range m {
				m[k] = fillUnknown(tt.ElementType, e)
			}
		}
	case tftypes.Object:
		if m, ok := v.(object); ok {
			for k, at := range tt.AttributeTypes {
				m[k] = fillUnknown(at, m[k])
			}
		}
	}
	return v
}

func fillItems(t tftypes.Type, v any) any {
	if items, ok := v.([]any); ok {
		for i, e := range items {
			items[i] = fillUnknown(t, e)
		}
	}
	return v
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	case object:
		out := make(object, len(x))
		for k, e := range x {
			out[k] = cloneValue(e)
		}
		return out
	}
	return v
}

// setUnknown sets v[k] to value when it is unknown.
func setUnknown(v object, k string, value any) {
	if isUnknown(v[k]) {
		v[k] = value
	}
}

// projectNumber is the stand-in's number for a project: twelve digits derived from its
// id, so a project always has the same number.
func projectNumber(projectID string) string {
	h := fnv.New64a()
	h.Write([]byte(projectID))
	return fmt.Sprint(100_000_000_000 + h.Sum64()%900_000_000_000)
}

// text returns v[k] as a string ("" when unset or unknown).
func text(v object, k string) string {
	s, _ := v[k].(string)
	return s
}
