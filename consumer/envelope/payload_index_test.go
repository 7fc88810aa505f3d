package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// checkPayloadAgainstEncodingJSON is the invariant of DecodePayload's
// index, for any data: it accepts exactly the JSON objects encoding/json
// decodes into a map, and then its keys are the map's keys and every value,
// at a top-level name or a dotted path one object deep (names without a
// dot: Get reads a dot as a step of its path), is the one
// encoding/json decodes with UseNumber (the last of a name given twice, a
// name's escapes and invalid UTF-8 read as encoding/json reads them).
func checkPayloadAgainstEncodingJSON(t *testing.T, data []byte) {
	t.Helper()
	var want map[string]json.RawMessage
	wantErr := json.Unmarshal(data, &want)
	p, err := DecodePayload(data)
	if wantErr != nil || want == nil {
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Path != "message.data" {
			t.Fatalf("DecodePayload(%q) = %v; encoding/json refuses it as a map (%v): want a message.data error", data, err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatalf("DecodePayload(%q): %v; encoding/json decodes it", data, err)
	}
	if got, keys := p.Keys(), slices.Sorted(maps.Keys(want)); !slices.Equal(got, keys) {
		t.Fatalf("DecodePayload(%q).Keys() = %q, want %q", data, got, keys)
	}
	for k, raw := range want {
		var inner map[string]json.RawMessage
		if strings.Contains(k, ".") { // a dotted name is a path (Get)
			continue
		}
		checkGet(t, data, p, k, raw)
		if json.Unmarshal(raw, &inner) != nil {
			continue
		}
		for sub, subRaw := range inner {
			if !strings.Contains(sub, ".") {
				checkGet(t, data, p, k+"."+sub, subRaw)
			}
		}
		if _, ok := p.Get(k + ".\x00absent"); ok {
			t.Fatalf("DecodePayload(%q).Get(%q) found an absent name", data, k+".\x00absent")
		}
	}
	if _, ok := p.Get("\x00absent"); ok {
		t.Fatalf("DecodePayload(%q) found an absent name", data)
	}
}

// checkGet checks p's value at path against raw decoded by encoding/json
// with UseNumber.
func checkGet(t *testing.T, data []byte, p Payload, path string, raw json.RawMessage) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var want any
	if err := dec.Decode(&want); err != nil {
		t.Fatal(err)
	}
	got, ok := p.Get(path)
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodePayload(%q).Get(%q) = %#v, %v; want %#v", data, path, got, ok, want)
	}
	if p.Present(path) != (want != nil) {
		t.Fatalf("DecodePayload(%q).Present(%q) = %v", data, path, p.Present(path))
	}
}

// genJSON writes a random JSON value of the shapes producers send: objects
// nesting objects and arrays, names and strings with escapes, unicode and
// now and then invalid UTF-8, numbers of every form, names given twice,
// white space anywhere JSON allows it.
func genJSON(r *rand.Rand, b *strings.Builder, depth int) {
	space := func() {
		if r.IntN(4) == 0 {
			b.WriteString([]string{" ", "\n\t", "\r\n  "}[r.IntN(3)])
		}
	}
	str := func() {
		b.WriteString([]string{`"service"`, `"status"`, `"a"`, `"a.b"`, `""`, `"s\u0065rvice"`, `"esc\"aped\\"`,
			`"caf\u00e9"`, `"café"`, "\"bad\xffutf8\"", `"\ud800"`, `"x\/y"`, `"tab\there"`, `"日本"`}[r.IntN(14)])
	}
	switch k := r.IntN(10); {
	case depth < 3 && k < 4:
		b.WriteByte('{')
		space()
		for i, n := 0, r.IntN(6); i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
				space()
			}
			str()
			space()
			b.WriteByte(':')
			space()
			genJSON(r, b, depth+1)
			space()
		}
		b.WriteByte('}')
	case depth < 3 && k < 5:
		b.WriteByte('[')
		for i, n := 0, r.IntN(4); i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			space()
			genJSON(r, b, depth+1)
		}
		b.WriteByte(']')
	case k < 7:
		str()
	default:
		b.WriteString([]string{"0", "-1.5e3", "12345678901234567890", "true", "false", "null", "3.25E-2", "-0"}[r.IntN(8)])
	}
}

// TestPayloadIndexMatchesEncodingJSON checks the invariant on generated
// payloads: objects at the top (and now and then another value, or a
// broken text).
func TestPayloadIndexMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 1))
	for range 3000 {
		var b strings.Builder
		if r.IntN(8) > 0 {
			b.WriteString(" {")
			for i, n := 0, r.IntN(7); i < n; i++ {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "%q : ", []string{"service", "status", "region", "o", "service"}[r.IntN(5)])
				genJSON(r, &b, 1)
			}
			b.WriteString("} ")
		} else {
			genJSON(r, &b, 0)
		}
		data := []byte(b.String())
		if r.IntN(10) == 0 && len(data) > 1 {
			data = data[:r.IntN(len(data))] // cut short: not JSON
		}
		checkPayloadAgainstEncodingJSON(t, data)
	}
}

// FuzzPayloadIndex checks the invariant on any text.
func FuzzPayloadIndex(f *testing.F) {
	for _, seed := range []string{
		`{"service":"api","status":"ok","o":{"a":{"b":[1,"x",{"c":null}]},"dot.ted":1}}`,
		// A name given twice is its last value; escaped and plain spellings are one name.
		`{"a":1,"a":{"b":2},"\u0061":"last"}`,
		`{"o":{"k":1,"k":[2]},"o2":{"\u006b":"{\"not\":\"an object\"}"}}`,
		"{\"bad\xff\":\"v\xff\",\"\\ud800\":1}",
		` { "s" : "a \"quoted\" } ] value" , "n" : -0.5e-3 , "e" : {} , "arr" : [ {} , [ ] ] } `,
		`[1]`, `null`, `{"a":1} {}`, `{"a":`, `{"a":1,}`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkPayloadAgainstEncodingJSON(t, data) })
}
