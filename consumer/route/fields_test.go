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
