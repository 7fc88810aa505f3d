package keys

import (
	"strings"
	"testing"
)

func TestNormalizeID(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Strategy-Engine", "strategy-engine"},
		{"  strategy-engine\t", "strategy-engine"},
		{"strategy  \n engine", "strategy_20engine"},
		{"a/b", "a_2fb"},
		{"a_b", "a_5fb"},
		{"a_2fb", "a_5f2fb"},
		{".", "_2e"},
		{"..", "_2e_2e"},
		{"__x__", "_5f_5fx_5f_5f"},
		{"É", "_c3_a9"},
		{"é", "_c3_a9"},
		{"a\x00b", "a_00b"},
	}
	for _, tc := range tests {
		got, err := NormalizeID(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("NormalizeID(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "   ", "\t\n"} {
		if _, err := NormalizeID(in); err == nil {
			t.Errorf("NormalizeID(%q): want an error for an empty id", in)
		}
	}
}

func TestNormalizeIDLong(t *testing.T) {
	long := strings.Repeat("ab/", 1000)
	a, err := NormalizeID(long)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NormalizeID(long + "x")
	if len(a) > maxComponentBytes || len(b) > maxComponentBytes {
		t.Errorf("lengths %d, %d exceed %d", len(a), len(b), maxComponentBytes)
	}
	if a == b {
		t.Error("long ids differing at the end collide")
	}
	if !strings.Contains(a, "_h") {
		t.Errorf("long id %q lacks the hash marker", a)
	}
	// The cut never splits an escape: every '_' is followed by two hex digits or 'h'.
	for i := 0; i < len(a); i++ {
		if a[i] == '_' && !(i+1 < len(a) && a[i+1] == 'h') && !(i+2 < len(a) && isHex(a[i+1]) && isHex(a[i+2])) {
			t.Fatalf("broken escape at %d in %q", i, a)
		}
	}
}

func isHex(c byte) bool { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') }

func TestDocID(t *testing.T) {
	a, _ := DocID("prod", "a__b")
	b, _ := DocID("prod__a", "b")
	if a == b {
		t.Errorf("env and id boundaries collide: %q", a)
	}
	p, _ := DocID("prod", "svc")
	s, _ := DocID("staging", "svc")
	if p == s {
		t.Errorf("environments share a document id %q", p)
	}
	if _, err := DocID("", "svc"); err == nil || !strings.Contains(err.Error(), "environment") {
		t.Errorf("empty env: %v, want an error naming the environment", err)
	}
}

func TestValidFirestoreID(t *testing.T) {
	for _, bad := range []string{"", ".", "..", "__x__", "____", "a/b", strings.Repeat("x", 1501)} {
		if ValidFirestoreID(bad) == nil {
			t.Errorf("ValidFirestoreID(%q) accepted an invalid id", bad)
		}
	}
	for _, good := range []string{"a", "_x_", "__x", "x__", "...", strings.Repeat("x", 1500)} {
		if err := ValidFirestoreID(good); err != nil {
			t.Errorf("ValidFirestoreID(%q): %v", good, err)
		}
	}
}

func TestLogicalKey(t *testing.T) {
	k1, _ := LogicalKey("", map[string]any{"service": "x", "producedAt": "2026-01-08T10:00:00Z", "n": 1})
	k2, _ := LogicalKey("", map[string]any{"n": 1.0, "producedAt": "2026-01-08T10:00:00Z", "service": "x"})
	k3, _ := LogicalKey("", map[string]any{"service": "y", "producedAt": "2026-01-08T10:00:00Z", "n": 1})
	if k1 != k2 || k1 == k3 {
		t.Errorf("identity hashes: %q %q %q; want the first two equal and the third different", k1, k2, k3)
	}
	if !strings.HasPrefix(k1, "h-") || len(k1) != 2+LogicalKeyLen {
		t.Errorf("hashed key %q: want h- and %d characters", k1, LogicalKeyLen)
	}
	e, _ := LogicalKey("Evt/1", map[string]any{"ignored": true})
	if e != "e-_45vt_2f1" {
		t.Errorf("event id key = %q, want e-_45vt_2f1 (the event id, exactly, wins over identity fields)", e)
	}
	if _, err := LogicalKey("", nil); err == nil {
		t.Error("no event id and no identity: want an error")
	}
}

// TestEscapeIDKeepsIDsExact: producer and Pub/Sub ids differing only in
// case or spaces (base62, base64url and nanoid ids are case-sensitive) are
// different ids.
func TestEscapeIDKeepsIDsExact(t *testing.T) {
	for _, pair := range [][2]string{{"Ab3xZ", "aB3Xz"}, {"a b", "a  b"}, {" x", "x"}, {"x\t", "x"}, {"É", "é"}, {"a_2fb", "a/b"}} {
		a, errA := EscapeID(pair[0])
		b, errB := EscapeID(pair[1])
		if errA != nil || errB != nil || a == b {
			t.Errorf("EscapeID(%q) = %q, %v and EscapeID(%q) = %q, %v: want two different ids", pair[0], a, errA, pair[1], b, errB)
		}
		ka, _ := LogicalKey(pair[0], nil)
		kb, _ := LogicalKey(pair[1], nil)
		if ka == kb {
			t.Errorf("event ids %q and %q share the key %q", pair[0], pair[1], ka)
		}
	}
	if got, _ := EscapeID("1001"); got != "1001" {
		t.Errorf("EscapeID(1001) = %q: plain ids are unchanged", got)
	}
	if _, err := EscapeID(""); err == nil {
		t.Error("EscapeID(\"\"): want an error")
	}
}

// FuzzEscapeID checks that every escaped id is a valid Firestore document
// id component and that two ids share an escaped form only when equal.
func FuzzEscapeID(f *testing.F) {
	for _, s := range [][2]string{{"Ab3xZ", "aB3Xz"}, {"a b", "a_20b"}, {strings.Repeat("/", 600), strings.Repeat("/", 601)}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ea, errA := EscapeID(a)
		eb, errB := EscapeID(b)
		if (errA != nil) != (a == "") || (errB != nil) != (b == "") {
			t.Fatalf("error iff the id is empty: %q %v, %q %v", a, errA, b, errB)
		}
		if errA != nil || errB != nil {
			return
		}
		for _, e := range []string{ea, eb} {
			if len(e) > maxComponentBytes || strings.Trim(e, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
				t.Fatalf("component %q: too long or bad characters", e)
			}
			if err := ValidFirestoreID(JoinID("prod", "m-"+e)); err != nil {
				t.Fatalf("doc id for %q: %v", e, err)
			}
		}
		if (ea == eb) != (a == b) {
			t.Fatalf("collision mismatch: %q -> %q, %q -> %q", a, ea, b, eb)
		}
	})
}

// FuzzNormalizeID checks that every normalised id is a valid Firestore
// document id and that two ids share a normalised form only when they fold
// to the same string (no collisions).
func FuzzNormalizeID(f *testing.F) {
	for _, s := range [][2]string{{"A/B", "a_2fb"}, {"a b", "a_20b"}, {".", ".."}, {"__x__", "_x_"}, {"É", "é"}, {strings.Repeat("/", 600), strings.Repeat("/", 601)}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		na, errA := NormalizeID(a)
		nb, errB := NormalizeID(b)
		if errA != nil || errB != nil {
			if (errA == nil) == (Fold(a) == "") || (errB == nil) == (Fold(b) == "") {
				t.Fatalf("error iff the id folds to empty: %q %v, %q %v", a, errA, b, errB)
			}
			return
		}
		for _, n := range []string{na, nb} {
			if len(n) > maxComponentBytes || strings.Trim(n, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
				t.Fatalf("component %q: too long or bad characters", n)
			}
			if err := ValidFirestoreID(JoinID("prod", n)); err != nil {
				t.Fatalf("doc id for %q: %v", n, err)
			}
		}
		if (na == nb) != (Fold(a) == Fold(b)) {
			t.Fatalf("collision mismatch: %q -> %q, %q -> %q (folds %q, %q)", a, na, b, nb, Fold(a), Fold(b))
		}
	})
}
