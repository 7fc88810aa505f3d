package keys

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// TestCanonicalJSON: RFC 8785's forms, among them the ones where it differs from the
// canonical JSON eventpipe wrote before (v1): numbers as ECMAScript writes them, keys in
// UTF-16 order.
func TestCanonicalJSON(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`},
		{" { \"a\" : [ 1 , 2 ,\n3 ] } ", `{"a":[1,2,3]}`},
		{`{"z":{"y":1,"x":2},"a":null}`, `{"a":null,"z":{"x":2,"y":1}}`},
		{`1.0`, `1`},
		{`1e2`, `100`},
		{`-0`, `0`},
		{`-0.0`, `0`},
		{`1.5e300`, `1.5e+300`},
		{`0.000001`, `0.000001`},
		{`1e-7`, `1e-7`},
		{`1234567.5`, `1234567.5`},
		{`1e21`, `1e+21`},
		{`123456789012345678901234567890`, `1.2345678901234568e+29`},
		{`9007199254740993`, `9007199254740992`},
		{`"\u00e9\u002F\/"`, `"é//"`},
		{`"tab\tnl\ncr\r\u0001\u001f"`, `"tab\tnl\ncr\r\u0001\u001f"`},
		{`"<&>\u2028"`, "\"<&>\u2028\""},
		{`{"é":1,"e":2,"E":3}`, `{"E":3,"e":2,"é":1}`},
		// UTF-16 order: U+20AC, then U+1F600 (surrogates D83D DE00), then U+E000.
		{`{"😀":1,"\ue000":2,"€":3}`, "{\"€\":3,\"😀\":1,\"\ue000\":2}"},
		{`[true,false,null,""]`, `[true,false,null,""]`},
	}
	for _, tc := range tests {
		got, err := CanonicalJSON([]byte(tc.in))
		if err != nil {
			t.Errorf("CanonicalJSON(%s): %v", tc.in, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("CanonicalJSON(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestCanonicalJSONErrors(t *testing.T) {
	deep := strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1)
	for _, in := range []string{deep, strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), `{"a":1,"a":2}`, `{"b":1,"a":2,"b":3}`, `{"x":{"a":1,"b":2,"a":3}}`, `[{"a":1},{"b":1,"b":1}]`, `{"\u0061":1,"a":2}`, `{"\/":1,"/":2}`, "\"\xff\"", `{"a":1} {}`, `{"a":`, ``, `[1,]`, `NaN`, `"\ud800"`, `1e400`} {
		if out, err := CanonicalJSON([]byte(in)); err == nil {
			t.Errorf("CanonicalJSON(%q) = %s, want an error", in, out)
		}
	}
}

// TestCanonicalJSONDuplicateKeyError names the duplicate key, cut short
// when it is long, and accepts keys that only share a prefix.
func TestCanonicalJSONDuplicateKeyError(t *testing.T) {
	long := strings.Repeat("é", 100)
	for _, tc := range []struct{ in, want string }{
		{`{"z":0,"k":1,"k":2}`, `duplicate object key "k"`},
		{`{"` + long + `":1,"` + long + `":2}`, `duplicate object key "` + strings.Repeat("é", 31) + `…`},
	} {
		_, err := CanonicalJSON([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CanonicalJSON(%.40q…): %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
	if _, err := CanonicalJSON([]byte(`{"ab":1,"a":2,"abc":{"ab":3}}`)); err != nil {
		t.Errorf("distinct keys: %v", err)
	}
}

func TestCanonicalJSONDepthLimit(t *testing.T) {
	ok := strings.Repeat(`{"a":[`, MaxDepth/2) + "1" + strings.Repeat("]}", MaxDepth/2)
	if _, err := CanonicalJSON([]byte(ok)); err != nil {
		t.Errorf("%d levels: %v", MaxDepth, err)
	}
}

func TestFingerprintIgnoresFormatting(t *testing.T) {
	a, err := Fingerprint([]byte(`{"service":"x","status":"ok","n":1.0}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Fingerprint([]byte("{ \"n\": 1, \"status\": \"ok\",\n \"service\": \"x\" }"))
	c, _ := Fingerprint([]byte(`{"service":"x","status":"down","n":1}`))
	if a != b {
		t.Errorf("same payload, different formatting: %s != %s", a, b)
	}
	if a == c {
		t.Errorf("different payloads share fingerprint %s", a)
	}
	if !strings.HasPrefix(a, "sha256:") || len(a) != len("sha256:")+52 {
		t.Errorf("fingerprint %q: want sha256: and 52 base32 characters", a)
	}
}

// FuzzCanonicalJSON checks that canonical JSON is valid JSON, is its own
// canonical form, and means the same as its input.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":2,"b":3}`, `{"a":{"b":1,"b":2}}`, `{"b":1,"a":[1.0,"x",null,true]}`, `"\ud800"`, `1e400`, `-0.0e-5`, `{"a":{"a":{}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// canonical's two ways (by payload size) write the same form.
		small, serr := canonicalSmall(nil, data)
		large, lerr := canonicalLarge(data)
		if (serr == nil) != (lerr == nil) || !bytes.Equal(small, large) {
			t.Fatalf("the ways disagree on %q: %q (%v) and %q (%v)", data, small, serr, large, lerr)
		}
		// Written piece by piece (as Fingerprint hashes a large payload), the
		// same form, or the same refusal.
		checkStreamed(t, data, 1, 7)
		out, err := CanonicalJSON(data)
		if err != nil {
			return
		}
		// jsontext's strict check refuses duplicate keys and invalid UTF-8, as
		// CanonicalJSON must (it finds duplicates in its sorted output itself).
		if !jsontext.Value(data).IsValid() {
			t.Fatalf("accepted %q, which has a duplicate key or invalid UTF-8", data)
		}
		if !json.Valid(out) {
			t.Fatalf("canonical form is not JSON: %q", out)
		}
		again, err := CanonicalJSON(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q -> %q (%v)", out, again, err)
		}
		var vin, vout any
		if err := json.Unmarshal(data, &vin); err != nil {
			t.Fatalf("input accepted by CanonicalJSON but not by encoding/json: %v", err)
		}
		if err := json.Unmarshal(out, &vout); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(vin, vout) {
			t.Fatalf("meaning changed: %q -> %q", data, out)
		}
	})
}

// TestFingerprintOfLargePayload hashes large payloads (strings and objects with escapes)
// to the hash of their canonical form, and leaves the payload as it was.
func TestFingerprintOfLargePayload(t *testing.T) {
	unit := `a\"é\n\u0001`
	big := strings.Repeat(unit, 40_000)
	payloads := []string{
		`{"z":"` + big + `","a":[` + strings.Repeat(`{"y":1,"x":"`+strings.Repeat(unit, 400)+`"},`, 30) + `null]}`,
		`{"detail":"` + strings.Repeat("x", 10_000_000) + `","service":"checkout"}`,
	}
	for _, text := range payloads {
		payload := []byte(text)
		canon, err := CanonicalJSON(payload)
		if err != nil {
			t.Fatal(err)
		}
		want := prefixedHash("sha256:", sha256.Sum256(canon))
		got, err := Fingerprint(payload)
		if err != nil || got != want {
			t.Fatalf("Fingerprint of %d bytes = %q, %v; want the hash of the canonical form %q", len(payload), got, err, want)
		}
		if string(payload) != text {
			t.Fatal("Fingerprint changed its payload")
		}
	}
}
