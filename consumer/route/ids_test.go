package route

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestIDValuesNeverMerge states that two payloads name the same aggregate
// (or the same event) only when their id values have the same text: a
// string's own, a number's as written. Any other id value is refused with
// a *FieldError naming the field. The table is every ordered pair of id
// values of each JSON kind, for an aggregate id read as "any" and for an
// event id. Broke it: ["a b"] and ["a","b"] (and {"a":1} and {"a":"1"},
// true and "true") named one document, or one event whose second payload
// was then poison as a reused event id.
func TestIDValuesNeverMerge(t *testing.T) {
	table, err := Parse([]byte(`{"routes":[{"name":"r","match":{"fields":["id"]},"mode":"latest-state",
		"target":{"collection":"c","id":"id"},"fields":{"id":{"from":["id"],"type":"any","required":true},
		"at":{"from":["at"],"type":"timestamp"}},"ordering":{"eventTime":"at"},"dedupe":{"eventIdField":"eventId"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	values := []string{`"a b"`, `"[a b]"`, `["a b"]`, `["a","b"]`, `{"a":1}`, `{"a":"1"}`, `"map[a:1]"`, `true`, `"true"`, `false`,
		`1`, `"1"`, `1.0`, `1e0`, `-0`, `0`, `[]`, `{}`, `""`, `"x"`, `[["a"]]`, `[[]]`, `"[]"`}
	// text is the id a value names, and whether it may name one at all.
	text := func(v string) (string, bool) {
		var x any
		dec := json.NewDecoder(bytesReader(v))
		dec.UseNumber()
		if err := dec.Decode(&x); err != nil {
			t.Fatal(err)
		}
		switch x := x.(type) {
		case string:
			return x, x != ""
		case json.Number:
			return string(x), true
		}
		return "", false
	}
	for _, field := range []string{"id", "eventId"} {
		ids := map[string]string{} // id named → the value text that named it
		for _, v := range values {
			payload := `{"id":"agg","eventId":"evt",` + `"` + field + `":` + v + `}`
			p, err := table.pubsub[0].Apply(msg(t, payload), "prod")
			want, ok := text(v)
			if err != nil {
				var fe *FieldError
				if !errors.As(err, &fe) || fe.Path != field {
					t.Fatalf("%s = %s: error %v does not name %s", field, v, err, field)
				}
				if ok && v != `""` {
					t.Fatalf("%s = %s refused: %v", field, v, err)
				}
				continue
			}
			got := p.AggregateID
			if field == "eventId" {
				got = p.EventID
				if got == "" {
					continue // an empty event id is no event id: the message id keys the event
				}
			}
			if !ok {
				t.Fatalf("%s = %s accepted as %q", field, v, got)
			}
			if got != want {
				t.Fatalf("%s = %s names %q, want %q", field, v, got, want)
			}
			if prev, seen := ids[got]; seen {
				if w, _ := text(prev); w != want {
					t.Fatalf("%s = %s and %s both name %q", field, prev, v, got)
				}
			}
			ids[got] = v
		}
	}
}

func bytesReader(s string) *strings.Reader { return strings.NewReader(s) }
