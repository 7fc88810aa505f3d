package route

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestApplyFieldSource checks the Routed's on-demand fields: HasField sees
// top-level names only, NewFields builds equal maps that share nothing
// (with each other or the payload), Values holds the leaves.
func TestApplyFieldSource(t *testing.T) {
	table, err := Parse([]byte(`{"routes":[{"name":"things","topic":"things","match":{"fields":["id"]},"mode":"latest-state",
		"target":{"collection":"things","id":"id"},
		"fields":{"id":{"from":["id"],"type":"string","required":true},"meta.tags":{"from":["tags"],"type":"any"},"note":{"from":["note"],"type":"string"},
		"at":{"from":["$publishTime"],"type":"timestamp","required":true}},"ordering":{"eventTime":"at"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	m := msg(t, `{"id":"a","tags":{"k":["x","y"]}}`)
	p, err := table.pubsub[0].Apply(m, "prod")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"at": true, "id": true, "meta": true, "meta.tags": false, "note": false, "tags": false} {
		if got := p.HasField(name); got != want {
			t.Errorf("HasField(%q) = %v, want %v", name, got, want)
		}
	}
	present := 0
	for _, v := range p.Values() {
		if v != nil {
			present++
		}
	}
	if present != 3 || len(p.Values()) != 4 {
		t.Errorf("Values() = %v, want 4 entries, 3 present", p.Values())
	}
	a, b := p.NewFields(), p.NewFields()
	want := map[string]any{"at": m.PublishTime, "id": "a", "meta": map[string]any{"tags": map[string]any{"k": []any{"x", "y"}}}}
	if !reflect.DeepEqual(a, want) || !reflect.DeepEqual(b, want) {
		t.Fatalf("NewFields() = %v and %v, want %v", a, b, want)
	}
	a["meta"].(map[string]any)["tags"].(map[string]any)["k"].([]any)[0] = "changed"
	if !reflect.DeepEqual(b, want) || !reflect.DeepEqual(p.Fields(), want) {
		t.Errorf("NewFields() maps share values: %v, %v", b, p.Fields())
	}
	if k, _ := m.Payload.Get("tags.k"); k.([]any)[0] != "x" {
		t.Errorf("NewFields() shares the payload's values: tags.k = %v", k)
	}
}

// TestApplyAfterApply applies a route to a message, then one with fewer fields on the
// same route in another environment: nothing of the first may show.
func TestApplyAfterApply(t *testing.T) {
	table, err := LoadFile("")
	if err != nil {
		t.Fatal(err)
	}
	full := msg(t, `{"service":"a","status":"up","version":"1","region":"eu","producedAt":"2026-01-02T03:00:00Z","sequence":4}`)
	r, err := table.Match(full.Payload)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		p, err := r.Apply(full, "prod")
		if err != nil {
			t.Fatal(err)
		}
		produced := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
		f := p.Fields()
		if p.Identity == nil || p.Sequence == nil || f["version"] != "1" || f["env"] != "prod" ||
			f["lastHeartbeatAt"] != produced || f["updatedAt"] != produced || f["source"].(map[string]any)["topic"] != "system-events" {
			t.Fatalf("round %d: full message applied as %+v, fields %v", round, p, f)
		}
		// Another environment, and a message without producedAt: neither
		// the environment nor a converted value of the first may show.
		sparse := msg(t, `{"service":"b","status":"down"}`)
		q, err := r.Apply(sparse, "dev")
		if err != nil {
			t.Fatal(err)
		}
		f = q.Fields()
		if q.Identity != nil || q.Sequence != nil || q.AggregateID != "b" || f["version"] != nil || f["region"] != nil || f["sequence"] != nil ||
			f["env"] != "dev" || f["lastHeartbeatAt"] != nil || f["updatedAt"] != sparse.PublishTime || q.EventTime != sparse.PublishTime {
			t.Fatalf("round %d: sparse message after a released Routed: identity %v, sequence %v, id %q, event time %v, fields %v",
				round, q.Identity, q.Sequence, q.AggregateID, q.EventTime, f)
		}
	}
}

// TestApplyManyConversions applies routes with fewer and more distinct
// (source, type) pairs than Apply keeps on the stack: every field gets its
// own source's value, converted, and fields sharing a pair share its value.
func TestApplyManyConversions(t *testing.T) {
	for _, n := range []int{1, stackConversions - 1, stackConversions, stackConversions + 1, 3 * stackConversions} {
		var fields, payload []string
		want := map[string]any{}
		for i := range n {
			fields = append(fields, fmt.Sprintf(`"f%d":{"from":["s%d"],"type":"integer"},"g%d":{"from":["missing","s%d"],"type":"integer"}`, i, i, i, i))
			payload = append(payload, fmt.Sprintf(`"s%d":"%d"`, i, i))
			want[fmt.Sprintf("f%d", i)], want[fmt.Sprintf("g%d", i)] = int64(i), int64(i)
		}
		table, err := Parse([]byte(`{"routes":[{"name":"many","topic":"t","match":{"fields":["s0"]},"mode":"latest-state",
			"target":{"collection":"things","id":"id"},"ordering":{"eventTime":"at"},
			"fields":{"id":{"from":["s0"],"type":"string","required":true},"at":{"from":["$publishTime"],"type":"timestamp","required":true},` +
			strings.Join(fields, ",") + `}}]}`))
		if err != nil {
			t.Fatal(err)
		}
		r := table.pubsub[0]
		if r.conversions != n+3 { // each s%d as an integer, missing, s0 as a string and the publish time
			t.Fatalf("%d fields: %d conversions, want %d", 2*n+2, r.conversions, n+3)
		}
		m := msg(t, "{"+strings.Join(payload, ",")+"}")
		want["id"], want["at"] = "0", m.PublishTime
		p, err := r.Apply(m, "prod")
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Fields(); !reflect.DeepEqual(got, want) {
			t.Errorf("%d pairs: fields = %v, want %v", n+3, got, want)
		}
	}
}

// TestApplySpecialSources applies one field per kind of source and checks
// each took its value from the right part of the message.
func TestApplySpecialSources(t *testing.T) {
	table, err := Parse([]byte(`{"routes":[{"name":"all","topic":"all-topic","match":{"fields":["id"]},"mode":"latest-state",
		"target":{"collection":"things","id":"id"},
		"fields":{"id":{"from":["id"],"type":"string","required":true},"nested":{"from":["a.b"]},
		"mid":{"from":["$messageId"]},"pub":{"from":["$publishTime"],"type":"timestamp","required":true},"topic":{"from":["$topic"]},
		"sub":{"from":["$subscription"]},"env":{"from":["$env"]},"okey":{"from":["$orderingKey"]},"attr":{"from":["$attributes.k"]},
		"fallback":{"from":["missing","$attributes.missing","$messageId"]}},"ordering":{"eventTime":"pub"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	m := msg(t, `{"id":"x","a":{"b":true}}`)
	m.OrderingKey, m.Attributes = "ok-1", map[string]string{"k": "attr-value"}
	p, err := table.pubsub[0].Apply(m, "prod")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"id": "x", "nested": true, "mid": m.ID, "pub": m.PublishTime, "topic": "all-topic", "sub": m.Subscription,
		"env": "prod", "okey": "ok-1", "attr": "attr-value", "fallback": m.ID}
	if got := p.Fields(); !reflect.DeepEqual(got, want) {
		t.Errorf("fields = %#v,\nwant %#v", got, want)
	}
}

// TestApplyDedupeFieldsAreThePayloadValues: whatever fields read them
// first (as strings, timestamps or integers, or not at all), the event id
// and identity Apply gives are the payload's own values, as Payload.Get
// decodes them. The routes read each identity field as a field too, with
// a conversion, and dedupe on one a field does not read (extra).
func TestApplyDedupeFieldsAreThePayloadValues(t *testing.T) {
	table, err := Parse([]byte(`{"routes":[{"name":"d","topic":"t","match":{"fields":["id"]},"mode":"latest-state",
		"target":{"collection":"things","id":"id"},"ordering":{"eventTime":"at"},
		"fields":{"id":{"from":["id"],"type":"string","required":true},"at":{"from":["at","$publishTime"],"type":"timestamp","required":true},
		"n":{"from":["n"],"type":"integer"},"s":{"from":["n"],"type":"string"},"e":{"from":["ev"],"type":"string"}},
		"dedupe":{"eventIdField":"ev","identity":["id","at","n","extra"]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	r := table.pubsub[0]
	values := []string{`"x"`, `"2026-01-02T03:04:05Z"`, `17`, `"17"`, `1.5`, `true`, `null`, `{"a":[1,"b"]}`, `[2]`}
	for i := range 2000 {
		// Each member present or not, with one of the values (a field
		// whose conversion refuses one is poison: skipped).
		var members []string
		for j, name := range []string{"at", "n", "ev", "extra"} {
			if k := (i >> (2 * j)) % (len(values) + 1); k < len(values) {
				members = append(members, fmt.Sprintf("%q:%s", name, values[(k+i)%len(values)]))
			}
		}
		m := msg(t, `{"id":"a",`+strings.Join(append(members, `"z":0`), ",")+`}`)
		p, err := r.Apply(m, "prod")
		if err != nil {
			continue
		}
		want := map[string]any{}
		for _, f := range r.Dedupe.Identity {
			if v, ok := m.Payload.Get(f); ok && v != nil {
				want[f] = v
			}
		}
		if len(want) < len(r.Dedupe.Identity) {
			want = nil
		}
		if got := p.Identity; !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("%s: identity %#v, want the payload's %#v", m.Data, got, want)
		}
		wantID := ""
		if v, ok := m.Payload.Get("ev"); ok && v != nil {
			wantID = sprint(v)
		}
		if p.EventID != wantID {
			t.Fatalf("%s: event id %q, want %q", m.Data, p.EventID, wantID)
		}
	}
}
