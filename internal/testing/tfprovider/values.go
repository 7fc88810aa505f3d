package tfprovider

import (
	"fmt"
	"math/big"

	"github.com/hashicorp/terraform-plugin-go/tfprotov5"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// The planning code works on plain Go values instead of tftypes.Value: nil for null,
// unknown for a value known only after apply, string, bool, *big.Float, []any for lists
// and sets, map[string]any for maps and objects. fromValue and toValue convert, the
// latter guided by the schema's type.

// unknownValue marks a value Terraform shows as "(known after apply)".
type unknownValue struct{}

var unknown any = unknownValue{}

func isUnknown(v any) bool { _, ok := v.(unknownValue); return ok }

// object is a resource or nested block value.
type object = map[string]any

func fromValue(v tftypes.Value) (any, error) {
	if !v.IsKnown() {
		return unknown, nil
	}
	if v.IsNull() {
		return nil, nil
	}
	t := v.Type()
	switch {
	case t.Is(tftypes.String):
		var s string
		err := v.As(&s)
		return s, err
	case t.Is(tftypes.Bool):
		var b bool
		err := v.As(&b)
		return b, err
	case t.Is(tftypes.Number):
		n := new(big.Float)
		err := v.As(&n)
		return n, err
	case t.Is(tftypes.List{}), t.Is(tftypes.Set{}), t.Is(tftypes.Tuple{}):
		var elems []tftypes.Value
		if err := v.As(&elems); err != nil {
			return nil, err
		}
		out := make([]any, len(elems))
		for i, e := range elems {
			x, err := fromValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case t.Is(tftypes.Map{}), t.Is(tftypes.Object{}):
		var elems map[string]tftypes.Value
		if err := v.As(&elems); err != nil {
			return nil, err
		}
		out := make(object, len(elems))
		for k, e := range elems {
			x, err := fromValue(e)
			if err != nil {
				return nil, err
			}
			out[k] = x
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported value type %s", t)
}

func toValue(t tftypes.Type, v any) (tftypes.Value, error) {
	if isUnknown(v) {
		return tftypes.NewValue(t, tftypes.UnknownValue), nil
	}
	if v == nil {
		return tftypes.NewValue(t, nil), nil
	}
	switch tt := t.(type) {
	case tftypes.List:
		elems, err := toValues(tt.ElementType, v)
		if err != nil {
			return tftypes.Value{}, err
		}
		return tftypes.NewValue(t, elems), nil
	case tftypes.Set:
		elems, err := toValues(tt.ElementType, v)
		if err != nil {
			return tftypes.Value{}, err
		}
		return tftypes.NewValue(t, elems), nil
	case tftypes.Map:
		m, ok := v.(object)
		if !ok {
			return tftypes.Value{}, fmt.Errorf("want a map for %s, have %T", t, v)
		}
		out := make(map[string]tftypes.Value, len(m))
		for k, e := range m {
			x, err := toValue(tt.ElementType, e)
			if err != nil {
				return tftypes.Value{}, err
			}
			out[k] = x
		}
		return tftypes.NewValue(t, out), nil
	case tftypes.Object:
		m, ok := v.(object)
		if !ok {
			return tftypes.Value{}, fmt.Errorf("want an object for %s, have %T", t, v)
		}
		out := make(map[string]tftypes.Value, len(tt.AttributeTypes))
		for k, at := range tt.AttributeTypes {
			x, err := toValue(at, m[k])
			if err != nil {
				return tftypes.Value{}, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = x
		}
		return tftypes.NewValue(t, out), nil
	}
	if err := tftypes.ValidateValue(t, v); err != nil {
		return tftypes.Value{}, err
	}
	return tftypes.NewValue(t, v), nil
}

func toValues(t tftypes.Type, v any) ([]tftypes.Value, error) {
	items, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want a list for %s, have %T", t, v)
	}
	out := make([]tftypes.Value, len(items))
	for i, e := range items {
		x, err := toValue(t, e)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}

// decode reads a value Terraform sent, of type t; a missing value is null.
func decode(dv *tfprotov5.DynamicValue, t tftypes.Type) (any, error) {
	if dv == nil {
		return nil, nil
	}
	v, err := dv.Unmarshal(t)
	if err != nil {
		return nil, err
	}
	return fromValue(v)
}

// encode prepares a value of type t for Terraform.
func encode(t tftypes.Type, v any) (*tfprotov5.DynamicValue, error) {
	tv, err := toValue(t, v)
	if err != nil {
		return nil, err
	}
	dv, err := tfprotov5.NewDynamicValue(t, tv)
	if err != nil {
		return nil, err
	}
	return &dv, nil
}

// equal reports whether two plain values are the same (an unknown value equals nothing).
func equal(a, b any) bool {
	if isUnknown(a) || isUnknown(b) {
		return false
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case *big.Float:
		y, ok := b.(*big.Float)
		return ok && x.Cmp(y) == 0
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case object:
		y, ok := b.(object)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	}
	return a == b
}
