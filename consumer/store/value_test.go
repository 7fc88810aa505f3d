package store_test

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/store"
)

func TestJSONRoundTripKeepsTypes(t *testing.T) {
	in := map[string]any{
		"int": int64(3), "float": 3.0, "small": 1e-7, "str": `"quoted" ✓`, "nil": nil, "bool": false,
		"time": time.Date(2026, 1, 8, 10, 0, 0, 123456789, time.UTC),
		"list": []any{int64(1), 2.5, "x", map[string]any{"k": time.Unix(0, 0).UTC()}},
		// A user map that looks like the time tag but has more keys stays a map.
		"tagLike": map[string]any{"$eventpipe_time": "not a time", "other": int64(1)},
	}
	data, err := store.EncodeJSON(store.Document{Fields: in})
	if err != nil {
		t.Fatal(err)
	}
	out, err := store.DecodeJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip:\n in %#v\nout %#v\njson %s", in, out, data)
	}
}

func TestCopyFieldsNormalisesAndNamesBadFields(t *testing.T) {
	got, err := store.CopyFields(map[string]any{"i": 7, "u": uint16(3), "f": float32(0.5), "ss": []string{"a"},
		"m": map[string]string{"k": "v"}, "t": time.Date(2026, 1, 8, 11, 0, 0, 0, time.FixedZone("CET", 3600))})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"i": int64(7), "u": int64(3), "f": 0.5, "ss": []any{"a"}, "m": map[string]any{"k": "v"},
		"t": time.Date(2026, 1, 8, 10, 0, 0, 0, time.UTC)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CopyFields = %#v, want %#v", got, want)
	}
	for name, bad := range map[string]any{"nan": math.NaN(), "chan": make(chan int), "huge": uint64(math.MaxUint64)} {
		_, err := store.CopyFields(map[string]any{"outer": map[string]any{name: bad}})
		if err == nil || !strings.Contains(err.Error(), `"outer"`) || !strings.Contains(err.Error(), `"`+name+`"`) {
			t.Errorf("%s: err = %v; want an error naming the field path", name, err)
		}
	}
}

func TestValueModelFieldsEqualsCopyFields(t *testing.T) {
	utc := time.Date(2026, 1, 8, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		fields map[string]any
		same   bool // every value is in the value model: fields itself
	}{
		{"value model", map[string]any{"s": "x", "i": int64(1), "f": 0.5, "b": true, "n": nil, "t": utc,
			"m": map[string]any{"k": []any{int64(1), "y"}}}, true},
		{"int", map[string]any{"m": map[string]any{"i": 7}}, false},
		{"zoned time", map[string]any{"m": map[string]any{"t": utc.In(time.FixedZone("CET", 3600))}}, false},
		{"monotonic time", map[string]any{"m": map[string]any{"t": time.Now()}}, false},
		{"nil slice", map[string]any{"m": map[string]any{"s": []any(nil)}}, false},
		{"nil map", map[string]any{"m": map[string]any{"s": map[string]any(nil)}}, false},
		{"typed slice", map[string]any{"m": map[string]any{"s": []string{"a"}}}, false},
		{"nil fields", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want, err := store.CopyFields(tc.fields)
			if err != nil {
				t.Fatal(err)
			}
			if tc.fields != nil && reflect.ValueOf(want["m"]).UnsafePointer() == reflect.ValueOf(tc.fields["m"]).UnsafePointer() {
				t.Error("CopyFields shares a nested map with its input; want a deep copy")
			}
			got, err := store.ValueModelFields(tc.fields)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ValueModelFields = %#v, want %#v", got, want)
			}
			same := reflect.ValueOf(got).UnsafePointer() == reflect.ValueOf(tc.fields).UnsafePointer()
			if same != tc.same {
				t.Errorf("returned its input = %v, want %v", same, tc.same)
			}
		})
	}
	_, err := store.ValueModelFields(map[string]any{"outer": map[string]any{"nan": math.NaN()}})
	if err == nil || !strings.Contains(err.Error(), `"outer"`) || !strings.Contains(err.Error(), `"nan"`) {
		t.Errorf("err = %v; want CopyFields' error naming the field path", err)
	}
}

func TestCopyFieldsCopiesDeeply(t *testing.T) {
	in := map[string]any{"m": map[string]any{"l": []any{map[string]any{"k": "v"}}}, "s": "x"}
	out, err := store.CopyFields(in)
	if err != nil {
		t.Fatal(err)
	}
	out["m"].(map[string]any)["l"].([]any)[0].(map[string]any)["k"] = "changed"
	out["s"] = "changed"
	if in["m"].(map[string]any)["l"].([]any)[0].(map[string]any)["k"] != "v" || in["s"] != "x" {
		t.Errorf("changing the copy changed the input: %v", in)
	}
}

// TestCopyFieldsIntegerKinds: every Go integer kind becomes the int64 of the same value, at
// both ends of its range and at zero, and an unsigned value above math.MaxInt64 is refused
// with an error that names it.
func TestCopyFieldsIntegerKinds(t *testing.T) {
	cases := []struct {
		in   any
		want int64
	}{
		{int(math.MinInt), math.MinInt}, {int(math.MaxInt), math.MaxInt},
		{int8(math.MinInt8), math.MinInt8}, {int8(math.MaxInt8), math.MaxInt8},
		{int16(math.MinInt16), math.MinInt16}, {int16(math.MaxInt16), math.MaxInt16},
		{int32(math.MinInt32), math.MinInt32}, {int32(math.MaxInt32), math.MaxInt32},
		{uint8(0), 0}, {uint8(math.MaxUint8), math.MaxUint8},
		{uint16(0), 0}, {uint16(math.MaxUint16), math.MaxUint16},
		{uint32(0), 0}, {uint32(math.MaxUint32), math.MaxUint32},
		{uint(0), 0}, {uint(math.MaxInt64), math.MaxInt64},
		{uint64(0), 0}, {uint64(math.MaxInt64), math.MaxInt64},
	}
	for _, c := range cases {
		got, err := store.CopyFields(map[string]any{"n": c.in})
		if err != nil || got["n"] != c.want {
			t.Errorf("%T(%v): %#v %v; want int64(%d)", c.in, c.in, got["n"], err, c.want)
		}
	}
	for _, in := range []any{uint(math.MaxInt64 + 1), uint64(math.MaxInt64 + 1), uint64(math.MaxUint64)} {
		_, err := store.CopyFields(map[string]any{"n": in})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("integer %d overflows int64", in)) {
			t.Errorf("%T(%v): err = %v; want it refused as overflowing int64", in, in, err)
		}
	}
}
