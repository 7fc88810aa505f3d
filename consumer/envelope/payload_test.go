package envelope

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// TestDecodePushHoldsLargeDataOnce decodes the push of a 10 MB message and
// checks that decoding allocates the decoded data and little besides: the
// body is not copied on the way and the payload's values are not decoded
// until asked for.
func TestDecodePushHoldsLargeDataOnce(t *testing.T) {
	const size = 10_000_000
	head := `{"service":"api","status":"ok","detail":"`
	data := head + strings.Repeat("x", size-len(head)-2) + `"}`
	body := pushBody(t, b64(data), nil)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m, err := DecodePush(body)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Data) != data {
		t.Fatal("data changed")
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > size+size/10 {
		t.Errorf("decoding a push of %d bytes allocated %d bytes; want about the %d bytes of its data", len(body), alloc, size)
	}
	if v, _ := m.Payload.Get("service"); v != "api" {
		t.Errorf("service = %v", v)
	}
}

// TestPayloadGetMatchesEncodingJSON reads every path of payloads through
// Payload and through encoding/json with UseNumber: the values are equal.
func TestPayloadGetMatchesEncodingJSON(t *testing.T) {
	payloads := []string{
		`{"s":"plain","e":"esc\"aped\u00e9\n","n":-1.5e3,"big":12345678901234567890,"t":true,"f":false,"z":null,
		  "o":{"a":{"b":[1,"x",{"c":null}]},"dot.ted":1},"a":[],"empty":{}}`,
		` { "bad-utf8-escape" : "\ud800" , "k" : " spaced " } `,
	}
	for _, text := range payloads {
		p, err := DecodePayload([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		var want map[string]any
		dec := json.NewDecoder(strings.NewReader(text))
		dec.UseNumber()
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		for _, k := range p.Keys() {
			got, ok := p.Get(k)
			if !ok || !reflect.DeepEqual(got, want[k]) {
				t.Errorf("Get(%q) = %#v, %v; want %#v", k, got, ok, want[k])
			}
			if p.Present(k) != (want[k] != nil) {
				t.Errorf("Present(%q) = %v", k, p.Present(k))
			}
		}
	}
	p, _ := DecodePayload([]byte(payloads[0]))
	for path, want := range map[string]any{"o.a.b": []any{json.Number("1"), "x", map[string]any{"c": nil}}, "o.dot": nil, "s.x": nil, "missing": nil} {
		got, ok := p.Get(path)
		if !reflect.DeepEqual(got, want) || ok != (want != nil) {
			t.Errorf("Get(%q) = %#v, %v; want %#v", path, got, ok, want)
		}
	}
}

func TestDecodePayloadErrors(t *testing.T) {
	for in, want := range map[string]string{
		`[1]`:              "a JSON array, not an object",
		`null`:             "a JSON null, not an object",
		`"s"`:              "a JSON string, not an object",
		`12`:               "a JSON number, not an object",
		`{"a":1} {}`:       "content after the JSON value",
		`{"a":`:            "not valid JSON",
		"\xff":             "not valid JSON",
		`{"a":1,}`:         "not valid JSON",
		``:                 "not valid JSON",
		`{"a":tru}`:        "not valid JSON",
		`  {"a":1}  `:      "",
		"{\"a\":\"\xff\"}": "",
	} {
		_, err := DecodePayload([]byte(in))
		if want == "" {
			if err != nil {
				t.Errorf("DecodePayload(%q): %v", in, err)
			}
			continue
		}
		var fe *FieldError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), want) || fe.Path != "message.data" {
			t.Errorf("DecodePayload(%q) = %v, want a message.data error saying %q", in, err, want)
		}
	}
}

// TestGetFindsNamesAsEncodingJSONReadsThem looks up generated member names,
// plain, escaped and with bytes of invalid UTF-8 (which encoding/json
// reads as U+FFFD), by every spelling of each, and wants a name found
// exactly when encoding/json decodes the object to a map holding it: by
// the name's decoded text, never by its raw bytes when they are not
// UTF-8, nor by a text of another length.
func TestGetFindsNamesAsEncodingJSONReadsThem(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 3))
	pieces := []string{"a", "é", "\xff", "\xe2\x82", "\uFFFD", `\u0061`, `\ufffd`, `\"`, "日"}
	for range 2000 {
		var names []string
		var b strings.Builder
		b.WriteByte('{')
		for i, n := 0, 1+r.IntN(4); i < n; i++ {
			var name strings.Builder
			for j, m := 0, r.IntN(4); j < m; j++ {
				name.WriteString(pieces[r.IntN(len(pieces))])
			}
			names = append(names, name.String())
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"%s":%d`, name.String(), i)
		}
		b.WriteByte('}')
		text := []byte(b.String())
		var want map[string]json.RawMessage
		if err := json.Unmarshal(text, &want); err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		p, err := DecodePayload(text)
		if err != nil {
			t.Fatalf("DecodePayload(%q): %v", text, err)
		}
		var paths []string
		for _, name := range names {
			paths = append(paths, name, unquote(rawValue(`"`+name+`"`)), name+"\uFFFD", strings.ReplaceAll(name, "\uFFFD", "\xff"))
		}
		for _, path := range paths {
			if strings.Contains(path, ".") {
				continue // a dot is a step of Get's path
			}
			raw, in := want[path]
			got, ok := p.lookupRaw(path)
			if ok != in || ok && string(got) != string(raw) {
				t.Fatalf("DecodePayload(%q).lookupRaw(%q) = %q, %v; encoding/json's map holds %q, %v", text, path, got, ok, raw, in)
			}
		}
	}
}
