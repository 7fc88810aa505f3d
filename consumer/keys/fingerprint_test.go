package keys

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// v1Record is a fingerprint (and for some, a logical key) computed by the code before
// RFC 8785, kept in testdata/v1_fingerprints.json: 8 payloads that broke or matter, and
// 292 generated with random keys (astral, private-use, escapes) and numbers (fractions,
// exponents, integers beyond 2^53).
type v1Record struct {
	Payload     string         `json:"payload"`
	Fingerprint string         `json:"fingerprint"`
	Identity    map[string]any `json:"identity"`
	LogicalKey  string         `json:"logicalKey"`
}

func v1Records(t *testing.T) []v1Record {
	t.Helper()
	data, err := os.ReadFile("testdata/v1_fingerprints.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var recs []v1Record
	if err := dec.Decode(&recs); err != nil {
		t.Fatal(err)
	}
	return recs
}

// TestV1FingerprintsStillRecognised: a payload fingerprinted before the upgrade has, after
// it, a fingerprint SameFingerprint matches with the stored one and whose last
// LogicalKeyLen characters (the part record ids take) are the stored one's; it is the
// stored one itself unless the payload's v1 and RFC 8785 forms differ. Identity keys are
// unchanged.
func TestV1FingerprintsStillRecognised(t *testing.T) {
	recs := v1Records(t)
	differ, keysChecked := 0, 0
	for _, r := range recs {
		fp, err := Fingerprint([]byte(r.Payload))
		if err != nil {
			t.Fatalf("%s: %v", r.Payload, err)
		}
		if !SameFingerprint(r.Fingerprint, fp) || !SameFingerprint(fp, r.Fingerprint) {
			t.Errorf("%s: stored v1 %s, now %s: not recognised", r.Payload, r.Fingerprint, fp)
		}
		if fp[len(fp)-LogicalKeyLen:] != r.Fingerprint[len(r.Fingerprint)-LogicalKeyLen:] {
			t.Errorf("%s: record id part %s, was %s", r.Payload, fp[len(fp)-LogicalKeyLen:], r.Fingerprint[len(r.Fingerprint)-LogicalKeyLen:])
		}
		if fp != r.Fingerprint {
			differ++
			if !strings.Contains(fp, v1Mark) {
				t.Errorf("%s: %s differs from v1 %s without naming it", r.Payload, fp, r.Fingerprint)
			}
		}
		if r.LogicalKey != "" {
			keysChecked++
			if got, err := LogicalKey("", r.Identity); err != nil || got != r.LogicalKey {
				t.Errorf("LogicalKey(%v) = %s, %v; v1 wrote %s", r.Identity, got, err, r.LogicalKey)
			}
		}
	}
	if differ == 0 || differ == len(recs) || keysChecked == 0 {
		t.Fatalf("%d of %d payloads have another canonical form, %d identities: the data exercises neither case", differ, len(recs), keysChecked)
	}
	t.Logf("%d of %d payloads carry their v1 hash; %d identity keys unchanged", differ, len(recs), keysChecked)
}

// TestSameFingerprint: fingerprints of other payloads never match, whatever their
// versions.
func TestSameFingerprint(t *testing.T) {
	a, _ := Fingerprint([]byte(`{"ratio":0.0000012}`))
	b, _ := Fingerprint([]byte(`{"ratio":0.0000013}`))
	c, _ := Fingerprint([]byte(`{"ratio":1}`))
	if !strings.Contains(a, v1Mark) || !strings.Contains(b, v1Mark) || strings.Contains(c, v1Mark) {
		t.Fatalf("fingerprints %s %s %s", a, b, c)
	}
	for _, pair := range [][2]string{{a, b}, {a, c}, {legacyFingerprint(a), b}, {a, legacyFingerprint(b)}, {legacyFingerprint(a), c}, {"", a}} {
		if SameFingerprint(pair[0], pair[1]) || SameFingerprint(pair[1], pair[0]) {
			t.Errorf("SameFingerprint(%s, %s)", pair[0], pair[1])
		}
	}
}

// TestFingerprintAcrossLanguages: Python's json module, with sorted keys, no spaces and
// UTF-8 output, writes RFC 8785 for JSON of strings, integers below 2^53, booleans and
// null with keys within U+FFFF (RFC 8785 sorts by UTF-16 code units, Python by code
// point; they agree there); the fingerprint Python computes from it is ours.
func TestFingerprintAcrossLanguages(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	var payloads []string
	for _, r := range v1Records(t) {
		if simpleForPython(r.Payload) {
			payloads = append(payloads, r.Payload)
		}
	}
	if len(payloads) < 20 {
		t.Fatalf("only %d simple payloads in the data", len(payloads))
	}
	const script = `import sys, json, hashlib, base64
for line in sys.stdin:
    c = json.dumps(json.loads(line), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    print("sha256:" + base64.b32encode(hashlib.sha256(c).digest()).decode().rstrip("=").lower())
`
	cmd := exec.Command(python, "-c", script)
	cmd.Stdin = strings.NewReader(strings.Join(payloads, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}
	got := strings.Fields(string(out))
	if len(got) != len(payloads) {
		t.Fatalf("python3 printed %d fingerprints for %d payloads", len(got), len(payloads))
	}
	for i, p := range payloads {
		want, err := Fingerprint([]byte(p))
		if err != nil {
			t.Fatal(err)
		}
		if got[i] != want {
			t.Errorf("%s: python3 %s, Fingerprint %s", p, got[i], want)
		}
	}
}

// simpleForPython reports whether payload has only strings, integers below 2^53,
// booleans and null, and no character beyond U+FFFF.
func simpleForPython(payload string) bool {
	dec := json.NewDecoder(strings.NewReader(payload))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return false
	}
	var simple func(v any) bool
	simple = func(v any) bool {
		switch x := v.(type) {
		case json.Number:
			n, err := x.Int64()
			return err == nil && n < 1<<53 && n > -(1<<53) && !strings.ContainsAny(string(x), ".eE") && string(x) != "-0"
		case string:
			return !strings.ContainsFunc(x, func(r rune) bool { return r > 0xFFFF })
		case []any:
			for _, e := range x {
				if !simple(e) {
					return false
				}
			}
		case map[string]any:
			for k, e := range x {
				if !simple(k) || !simple(e) {
					return false
				}
			}
		}
		return true
	}
	return simple(v)
}

// FuzzFingerprintNamesItsV1Form: a fingerprint carries a v1 hash exactly when the
// payload's v1 canonical form (which v1 fingerprints hashed) differs from its RFC 8785
// form, so a stored v1 fingerprint is always recognised: in particular the scan that
// skips computing the v1 form never skips a payload whose forms differ.
func FuzzFingerprintNamesItsV1Form(f *testing.F) {
	for _, s := range []string{`{"ratio":0.0000012,"big":12345678901234567890}`, `{"😀":1,"\ue000":2}`, `[1e-7,1234567.5,1.5e300,100.0,true,false]`, `{"n":1e+21}`, `9007199254740993`, `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fp, err := Fingerprint(data)
		if err != nil {
			return
		}
		c, err := CanonicalJSON(data)
		if err != nil {
			t.Fatalf("Fingerprint accepts %q, CanonicalJSON does not: %v", data, err)
		}
		v1, err := canonicalV1(data)
		if err != nil {
			return // no v1 fingerprint of it can have been stored
		}
		if named := strings.Contains(fp, v1Mark); named != !bytes.Equal(v1, c) {
			t.Fatalf("%q: fingerprint %s, v1 form %s, RFC 8785 form %s", data, fp, v1, c)
		}
	})
}
