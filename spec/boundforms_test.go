package spec_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/eventpipe/eventpipe/internal/testing/ruletest"
	"github.com/eventpipe/eventpipe/policies/checkconfig"
	"github.com/eventpipe/eventpipe/render"
	"github.com/eventpipe/eventpipe/spec"
)

// form is one way a stack file writes a value of a bounded setting: the YAML text, and
// what it means (n: a count, or nanoseconds of a duration), when it means a number of
// the setting's kind at all (kind false: a quoted count, an unquoted duration).
type form struct {
	text string
	n    float64
	kind bool
}

// accepted is the property's oracle: validation accepts f for b exactly when f is of b's
// kind, a whole count or whole seconds, and inside b's range.
func (f form) accepted(b spec.Bound) bool {
	unit := 1.0
	if b.Kind == spec.Span {
		unit = float64(time.Second)
	}
	return f.kind && f.n == math.Trunc(f.n/unit)*unit && f.n >= float64(b.Min) && f.n <= float64(b.Max)
}

// nearBounds are the values a generator tries for b: each end, one step (a count, or a
// second) and half a step inside and outside it, zero, the default, and far out: -1 and the
// ends of an int for a count, 100000 days for a duration.
func nearBounds(b spec.Bound) []float64 {
	step := 1.0
	if b.Kind == spec.Span {
		step = float64(time.Second)
	}
	var out []float64
	for _, end := range []float64{float64(b.Min), float64(b.Max)} {
		for _, d := range []float64{-step, -step / 2, 0, step / 2, step} {
			out = append(out, end+d)
		}
	}
	out = append(out, 0, float64(b.Default))
	if b.Kind == spec.Count {
		// -1, and the whole numbers at and past the ends of an int.
		out = append(out, -step, math.MinInt64, 1e20)
	} else {
		out = append(out, float64(100000*spec.Day)) // near the largest duration there is
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// formsOf writes n, a value near b's bounds, in every form the stack file's grammar has for
// b's kind, and in the forms of the other kind.
func formsOf(b spec.Bound, n float64) []form {
	if b.Kind == spec.Count {
		out := []form{
			{strconv.FormatFloat(n, 'f', -1, 64), n, true},                 // 5, 5.5
			{strconv.Quote(strconv.FormatFloat(n, 'f', -1, 64)), n, false}, // "5"
			{strconv.FormatFloat(n, 'e', -1, 64), n, true},                 // 5e+00
		}
		if n == math.Trunc(n) {
			out = append(out, form{strconv.FormatFloat(n, 'f', 1, 64), n, true}) // 5.0
			if n >= 0 {
				out = append(out, form{"0x" + strconv.FormatInt(int64(n), 16), n, true}, form{"+" + strconv.FormatInt(int64(n), 10), n, true})
			}
		}
		return out
	}
	if n < 0 {
		return nil // the grammar has no negative duration (durations tests that)
	}
	d := time.Duration(n)
	secs := strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
	out := []form{
		{strconv.Quote(secs + "s"), n, true},                                     // "600s", "600.5s"
		{strconv.Quote(d.String()), n, true},                                     // "10m0s", "10m0.5s"
		{strconv.Quote(spec.FormatDuration(d)), n, true},                         // "10m", "14d"
		{strconv.Quote(strconv.FormatInt(d.Milliseconds(), 10) + "ms"), n, true}, // "600000ms"
		{strconv.Quote(" +" + secs + "s "), n, true},                             // " +600s "
		{secs, n, false}, // 600, unquoted
	}
	if d%spec.Day == 0 {
		out = append(out, form{strconv.Quote(strconv.FormatInt(int64(d/spec.Day), 10) + "d"), n, true})
	}
	if d >= time.Hour {
		h := d.Truncate(time.Hour)
		out = append(out, form{strconv.Quote(fmt.Sprintf("%dh%s", int64(h/time.Hour), strconv.FormatFloat((d-h).Seconds(), 'f', -1, 64)+"s")), n, true}) // "336h0.5s"
	}
	return out
}

// twoPipelines is boundsStack with a second pipeline, billing, whose settings stay at their
// defaults: a value out of bounds in orders is refused there alone.
func twoPipelines() map[string]any {
	config := boundsStack()
	pipelines := config[spec.Namespace+":"+spec.KeyPipelines].(map[string]any)
	pipelines["billing"] = map[string]any{
		"consumer":      map[string]any{"image": "europe-west1-docker.pkg.dev/acme-prod/eventpipe/consumer:1.0.0"},
		"subscriptions": map[string]any{"ledger": map[string]any{"delivery": "push"}},
	}
	return config
}

// stackWith is the text of a twoPipelines stack file with text written at b's path (and
// its companions, written in the same form, so they agree with it).
func stackWith(t *testing.T, b spec.Bound, text string, n float64) []byte {
	t.Helper()
	config := twoPipelines()
	const token = "VALUE_UNDER_TEST"
	setBound(config, b.Path, token)
	for path := range companions(b, int64(n)) {
		if path == "pipelines.*.consumer.requestTimeout" {
			setBound(config, path, token) // the push ack deadline equals it
			continue
		}
		cb := spec.BoundAt(path)
		setBound(config, path, configValue(cb, companions(b, int64(n))[path]))
	}
	data, err := yaml.Marshal(map[string]any{"config": config})
	if err != nil {
		t.Fatal(err)
	}
	return []byte(strings.ReplaceAll(string(data), token, text))
}

// writtenPaths are the config paths the stack of stackWith writes for b.
func writtenPaths(b spec.Bound) []string {
	paths := []string{fullPath(b.Path)}
	for path := range companions(b, 0) {
		paths = append(paths, fullPath(path))
	}
	return paths
}

// fullPath is a Bounds path as errors name it in the test stack (* is orders, then main).
func fullPath(path string) string {
	return spec.Namespace + ":" + strings.Replace(strings.Replace(path, "*", "orders", 1), "*", "main", 1)
}

// settingOf is the value validation left at b's path in s (a count, or a duration setting).
func settingOf(t *testing.T, s *spec.Stack, b spec.Bound) any {
	t.Helper()
	v := reflect.ValueOf(s).Elem()
	for _, part := range strings.Split(strings.Replace(strings.Replace(b.Path, "*", "orders", 1), "*", "main", 1), ".") {
		for v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		switch v.Kind() {
		case reflect.Map:
			v = v.MapIndex(reflect.ValueOf(part))
		case reflect.Struct:
			f, ok := fieldByJSON(v.Type(), part)
			if !ok {
				t.Fatalf("%s: no field %s in %s", b.Path, part, v.Type())
			}
			v = v.FieldByIndex(f.Index)
		default:
			t.Fatalf("%s: cannot walk %s at %s", b.Path, v.Kind(), part)
		}
	}
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	return v.Interface()
}

func fieldByJSON(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); tag == name {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// TestEveryFormOfEveryBound is the bounds guarantee over the forms a stack file writes,
// built by code from spec.Bounds: for every bounded setting, every value near its bounds
// (each end, a step and half a step either side, zero, the default) in every form of the
// grammar (counts as 5, 5.0, 5e+00, 0x5, +5 and "5"; durations as "600s", "10m0s", "10m",
// "600000ms", " +600s ", "14d", "336h0.5s" and unquoted), in a stack of two pipelines:
//
//   - validation accepts the form exactly when it is of the setting's kind, a whole count
//     or whole seconds, and inside the range (form.accepted), and leaves the value as
//     written: a count equal to it, a duration of the same length;
//   - an accepted value renders, into the plan field a rule reads exactly (Pub/Sub's
//     seconds), and the check with its default settings finds nothing;
//   - a refused one is refused at the key written, naming the setting's range in the words
//     of spec.Bound.Allowed, and nowhere else (not in the other pipeline, not again at a
//     setting that inherits it).
func TestEveryFormOfEveryBound(t *testing.T) {
	eng := ruletest.Engine(t, (*checkconfig.Config)(nil).Data("prod"))
	dir := t.TempDir()
	forms := 0
	for _, b := range spec.Bounds() {
		rendered := map[float64]bool{}
		for _, n := range nearBounds(b) {
			for _, f := range formsOf(b, n) {
				forms++
				name := fmt.Sprintf("%s=%s", b.Path, f.text)
				data := stackWith(t, b, f.text, n)
				file, err := spec.ParseStackFile("Pulumi.prod.yaml", data)
				if err != nil {
					t.Errorf("%s: the stack file does not parse: %v", name, err)
					continue
				}
				s, err := file.Load("prod")
				if !f.accepted(b) {
					assertRefused(t, name, b, err)
					continue
				}
				if err != nil {
					t.Errorf("%s (%v, in %s) refused: %v", name, n, b.Allowed(), err)
					continue
				}
				switch got := settingOf(t, s, b).(type) {
				case int:
					if float64(got) != n {
						t.Errorf("%s validated as %d", name, got)
					}
				case string:
					if float64(spec.Length(got)) != n {
						t.Errorf("%s validated as %q (%v)", name, got, spec.Length(got))
					}
				}
				if rendered[n] {
					continue // one render per value: the forms of it validate alike
				}
				rendered[n] = true
				path := filepath.Join(dir, "Pulumi.prod.yaml")
				if err := os.WriteFile(path, data, 0o600); err != nil {
					t.Fatal(err)
				}
				res, err := render.Render(context.Background(), render.Options{Stack: "prod", ConfigFile: path})
				if err != nil {
					t.Errorf("%s validates but does not render: %v", name, err)
					continue
				}
				doc := planDocument(t, res)
				if b.Field != "" {
					movePast(t, doc, b, int64(n), int64(n)) // fails unless the plan holds the value exactly
				}
				if fs := checkDocument(t, eng, doc); len(fs) != 0 {
					t.Errorf("%s renders, but the check finds %v", name, messages(fs))
				}
			}
		}
	}
	t.Logf("%d forms of %d bounded settings", forms, len(spec.Bounds()))
}

// assertRefused asserts err refuses the value written at b's path, naming its range, and
// nothing the stack did not write.
func assertRefused(t *testing.T, name string, b spec.Bound, err error) {
	t.Helper()
	errs, ok := err.(spec.Errors)
	if !ok {
		t.Errorf("%s accepted (err %v), want it refused naming %s", name, err, b.Allowed())
		return
	}
	at := false
	for _, e := range errs {
		if !slices.Contains(writtenPaths(b), e.Path) {
			t.Errorf("%s: refused at %s, which the stack does not write: %v", name, e.Path, e)
		}
		if e.Path == fullPath(b.Path) {
			at = true
			if !strings.Contains(e.Allowed, b.Allowed()) {
				t.Errorf("%s: refusal %q does not name the range %s", name, e.Error(), b.Allowed())
			}
		}
	}
	if !at {
		t.Errorf("%s: no refusal at %s: %v", name, fullPath(b.Path), errs)
	}
}

// TestOrderJudgedWhereWritten: for each pair of settings where one may not exceed the other
// (minBackoff ≤ maxBackoff, minInstances ≤ maxInstances), at each level that writes them
// (eventpipe:defaults, a pipeline), writing one end past the other's default, or both
// upside down, is refused once, at a key the stack writes, naming the other end; and an end
// written invalid at the defaults is refused there alone, not again on each pipeline that
// inherits it. The cases that broke: defaults.minInstances: 100 was refused at
// pipelines.orders.consumer.minInstances, and defaults.maxBackoff: "-1s" also as
// "minBackoff at most maxBackoff (0s)" on every subscription.
func TestOrderJudgedWhereWritten(t *testing.T) {
	type pair struct{ lo, hi string }
	pairs := []pair{
		{"defaults.minBackoff", "defaults.maxBackoff"},
		{"pipelines.*.subscriptions.*.minBackoff", "pipelines.*.subscriptions.*.maxBackoff"},
		{"defaults.minInstances", "defaults.maxInstances"},
		{"pipelines.*.consumer.minInstances", "pipelines.*.consumer.maxInstances"},
	}
	value := func(b spec.Bound, n int64) any { return configValue(b, n) }
	for _, p := range pairs {
		lo, hi := spec.BoundAt(p.lo), spec.BoundAt(p.hi)
		// hi written below lo's default, lo written above hi's default, both upside down.
		cases := []struct {
			name   string
			write  map[string]any
			wantAt string
		}{
			{"hi below lo's default", map[string]any{p.hi: value(hi, max(hi.Min, lo.Default-step(lo)))}, p.hi},
			{"lo above hi's default", map[string]any{p.lo: value(lo, min(lo.Max, hi.Default+step(hi)))}, p.lo},
			{"both, upside down", map[string]any{p.lo: value(lo, lo.Max), p.hi: value(hi, min(hi.Max, lo.Max-step(lo)))}, p.lo},
			{"hi invalid", map[string]any{p.hi: "-1s"}, p.hi},
		}
		for _, tc := range cases {
			switch {
			case tc.name == "hi below lo's default" && lo.Default-step(lo) < hi.Min,
				tc.name == "lo above hi's default" && hi.Default+step(hi) > lo.Max:
				continue // the defaults leave no room to cross
			case tc.name == "hi invalid" && hi.Kind == spec.Count:
				tc.write[p.hi] = -1
			}
			t.Run(p.lo+"/"+tc.name, func(t *testing.T) {
				config := twoPipelines()
				for path, v := range tc.write {
					setBound(config, path, v)
				}
				data, err := yaml.Marshal(map[string]any{"config": config})
				if err != nil {
					t.Fatal(err)
				}
				file, err := spec.ParseStackFile("Pulumi.prod.yaml", data)
				if err != nil {
					t.Fatal(err)
				}
				_, err = file.Load("prod")
				errs, ok := err.(spec.Errors)
				if !ok || len(errs) != 1 || errs[0].Path != fullPath(tc.wantAt) {
					t.Fatalf("wrote %v: got %v, want one refusal at %s", tc.write, err, fullPath(tc.wantAt))
				}
			})
		}
	}
}

// FuzzBoundedSetting is TestEveryFormOfEveryBound's validation half on any text: whatever
// YAML scalar a stack file writes for a bounded setting (index picks it from spec.Bounds),
// validation accepts it exactly when it means a value of the setting's kind, whole (a
// count) or in whole seconds (a duration, read by spec.ParseDuration), inside the range;
// and a refusal is at that key alone (and its companions), naming the range. Seeds: the
// forms the table test writes, and texts that broke it.
func FuzzBoundedSetting(f *testing.F) {
	for i, b := range spec.Bounds() {
		for _, n := range nearBounds(b) {
			for _, fm := range formsOf(b, n) {
				f.Add(uint8(i), fm.text)
			}
		}
	}
	for _, s := range []string{`"10.5s"`, "5.5", "1e20", "9223372036854775807", `"1d12h"`, `"-0s"`, `"0x10s"`, ".inf", "~", "[]", `"1.5d"`, `"106752d"`} {
		f.Add(uint8(0), s)
		f.Add(uint8(13), s)
	}
	bounds := spec.Bounds()
	f.Fuzz(func(t *testing.T, i uint8, text string) {
		b := bounds[int(i)%len(bounds)]
		var node yaml.Node
		if strings.ContainsAny(text, "\n:#{}[]&*!|>%@`,") && text != "[]" || yaml.Unmarshal([]byte(text), &node) != nil ||
			len(node.Content) != 1 || node.Content[0].Kind != yaml.ScalarNode {
			return // not one YAML scalar: a stack file's shape, not a value's
		}
		var v any
		if err := node.Content[0].Decode(&v); err != nil {
			return
		}
		fm := form{text: text}
		switch x := v.(type) {
		case nil: // null: unset, so the default
			fm.n, fm.kind = float64(b.Default), true
		case string:
			if x == "" && b.Kind == spec.Span { // a duration written "": unset, as Pulumi passes it
				fm.n, fm.kind = float64(b.Default), true
			} else if d, err := spec.ParseDuration(x); err == nil && b.Kind == spec.Span {
				fm.n, fm.kind = float64(d), true
			}
		case int:
			fm.n, fm.kind = float64(x), b.Kind == spec.Count
		case float64:
			if math.IsInf(x, 0) || math.IsNaN(x) {
				return // the reader refuses it before validation (TestStackFileRefusesNonFiniteNumbers)
			}
			fm.n, fm.kind = x, b.Kind == spec.Count
		}
		file, err := spec.ParseStackFile("Pulumi.prod.yaml", stackWith(t, b, text, fm.n))
		if err != nil {
			return // a text that reshapes the file around it
		}
		_, err = file.Load("prod")
		if fm.accepted(b) {
			if err != nil {
				t.Fatalf("%s = %s (%v) refused: %v", b.Path, text, fm.n, err)
			}
			return
		}
		assertRefused(t, b.Path+"="+text, b, err)
	})
}

// TestStackFileRefusesNonFiniteNumbers: .inf and .nan, which no JSON (and so no Pulumi
// program) carries, are refused by the reader naming the key, not with a bare encoder error.
func TestStackFileRefusesNonFiniteNumbers(t *testing.T) {
	for _, text := range []string{".inf", "-.inf", ".nan", ".NaN", "+.Inf"} {
		b := spec.BoundAt("pipelines.*.subscriptions.*.maxDeliveryAttempts")
		_, err := spec.ParseStackFile("Pulumi.prod.yaml", stackWith(t, b, text, 0))
		if err == nil || !strings.Contains(err.Error(), fullPath(b.Path)+" = "+text+": allowed a finite number") {
			t.Errorf("%s: %v, want a refusal naming %s", text, err, fullPath(b.Path))
		}
	}
}
