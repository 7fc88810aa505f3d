package route

import (
	"reflect"
	"testing"
)

// TestPlanFieldSource checks the plan's on-demand fields: HasField sees
// top-level names only, NewFields builds equal maps that share nothing
// (with each other or the payload), Values holds the leaves.
func TestPlanFieldSource(t *testing.T) {
	table, err := Parse([]byte(`{"routes":[{"name":"things","topic":"things","match":{"fields":["id"]},"mode":"latest-state",
		"target":{"collection":"things","id":"id"},
		"fields":{"id":{"from":["id"],"type":"string","required":true},"meta.tags":{"from":["tags"],"type":"any"},"note":{"from":["note"],"type":"string"},
		"at":{"from":["$publishTime"],"type":"timestamp","required":true}},"ordering":{"eventTime":"at"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	m := msg(t, `{"id":"a","tags":{"k":["x","y"]}}`)
	p, err := table.PubSubRoutes()[0].Plan(m, "prod")
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
	if got := m.Payload["tags"].(map[string]any)["k"].([]any)[0]; got != "x" {
		t.Errorf("NewFields() shares the payload's values: tags.k[0] = %v", got)
	}
}

// TestPlanReleaseReuse plans a message, releases the plan, and plans one
// with fewer fields on the same route: nothing of the first may show.
func TestPlanReleaseReuse(t *testing.T) {
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
		p, err := r.Plan(full, "prod")
		if err != nil {
			t.Fatal(err)
		}
		if p.Identity == nil || p.Sequence == nil || p.Fields()["version"] != "1" {
			t.Fatalf("round %d: full message planned as %+v", round, p)
		}
		p.Release()
		sparse := msg(t, `{"service":"b","status":"down"}`)
		q, err := r.Plan(sparse, "prod")
		if err != nil {
			t.Fatal(err)
		}
		f := q.Fields()
		if q.Identity != nil || q.Sequence != nil || q.AggregateID != "b" || f["version"] != nil || f["region"] != nil || f["sequence"] != nil {
			t.Fatalf("round %d: sparse message after a released plan: identity %v, sequence %v, id %q, fields %v",
				round, q.Identity, q.Sequence, q.AggregateID, f)
		}
		q.Release()
	}
}
