package devpipe

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/consumer/route"
)

// TestLoadSamples: a folder of samples loads a file per pipeline, in both
// formats, with each event's file and line; every problem is reported at once
// with its place.
func TestLoadSamples(t *testing.T) {
	pipelines := []string{"orders", "invoices"}
	write := func(t *testing.T, files map[string]string) string {
		dir := t.TempDir()
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	dir := write(t, map[string]string{
		"orders.jsonl":  "// placed, then shipped\n{\"eventType\":\"order_placed\",\"orderId\":\"o1\"}\n\n{\"eventType\":\"order_shipped\",\"orderId\":\"o1\"}\n",
		"invoices.json": "[\n  {\"invoiceId\": \"i1\"},\n  {\"invoiceId\": \"i2\"}\n]\n",
		"README.md":     "not a sample",
	})
	got, err := LoadSamples(dir, pipelines)
	if err != nil {
		t.Fatal(err)
	}
	var sources []string
	for _, p := range pipelines {
		for _, s := range got[p] {
			sources = append(sources, strings.TrimPrefix(s.Source, dir+string(filepath.Separator)))
		}
	}
	if want := []string{"orders.jsonl:2", "orders.jsonl:4", "invoices.json:2", "invoices.json:3"}; !slices.Equal(sources, want) {
		t.Errorf("sources %v, want %v", sources, want)
	}
	if string(got["invoices"][1].Data) != `{"invoiceId": "i2"}` {
		t.Errorf("invoices.json's second event: %s", got["invoices"][1].Data)
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"problems", map[string]string{
			"order.jsonl":    `{"a":1}`,
			"orders.jsonl":   "{\"a\":1}\nnot json\n[1,2]\n",
			"invoices.jsonl": "\n// nothing\n",
		}, []string{"4 problems", "order.jsonl: names no pipeline of the stack (it has orders, invoices)", "orders.jsonl:2: not JSON",
			"orders.jsonl:3: a JSON []interface {}, not an object", "invoices.jsonl: holds no event"}},
		{"two files", map[string]string{"orders.json": `[{"a":1}]`, "orders.jsonl": `{"a":1}`}, []string{
			"orders.jsonl: pipeline orders already has", "orders.json: keep one file per pipeline"}},
		{"array element", map[string]string{"invoices.json": "[\n {\"a\":1},\n 2\n]"}, []string{"invoices.json:3: a JSON float64, not an object"}},
		{"empty folder", map[string]string{}, []string{"no sample file", "orders.jsonl with one JSON event per line"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadSamples(write(t, tc.files), pipelines)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
		})
	}
	if _, err := LoadSamples(filepath.Join(t.TempDir(), "missing"), pipelines); err == nil || !strings.Contains(err.Error(), "orders.jsonl") {
		t.Errorf("missing folder: %v, want the fix naming a file", err)
	}
}

// takes reports whether table gives ex to the route named ex.Route and applies it.
func takes(t *testing.T, table *route.Table, ex RouteExample, now time.Time) error {
	t.Helper()
	payload, err := envelope.DecodePayload(ex.Data)
	if err != nil {
		return err
	}
	r, err := table.Match(payload)
	if err != nil {
		return err
	}
	if r.Name != ex.Route {
		return fmt.Errorf("route %s takes the example of %s", r.Name, ex.Route)
	}
	_, err = r.Apply(&envelope.Message{ID: "m1", Data: ex.Data, Payload: payload, Attributes: ex.Attributes, PublishTime: now,
		OrderingKey: ex.OrderingKey, Subscription: "projects/p/subscriptions/s"}, "dev")
	return err
}

// TestExamplesOfShippedRoutes: the consumer's default routes and the handler
// example's routes each get an example per pubsub route, which that route takes.
func TestExamplesOfShippedRoutes(t *testing.T) {
	now := time.Now()
	for _, path := range []string{"", "../examples/handlers/routes.json"} {
		table, err := route.LoadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Examples(path, "no-such-topic", "dev", now)
		if err != nil {
			t.Fatal(err)
		}
		var want, names []string
		for _, r := range table.Routes() {
			if r.Ingress != route.IngressCallback {
				want = append(want, r.Name)
			}
		}
		for _, ex := range got {
			names = append(names, ex.Route)
			if err := takes(t, table, ex, now); err != nil {
				t.Errorf("%q: example of %s (%s): %v", path, ex.Route, ex.Data, err)
			}
		}
		if !slices.Equal(names, want) {
			t.Errorf("%q: examples for %v, want one per pubsub route %v", path, names, want)
		}
		// A pipeline whose topic a route names gets that route's example only.
		if one, err := Examples(path, table.Routes()[0].Topic, "dev", now); err != nil || len(one) != 1 || one[0].Route != want[0] {
			t.Errorf("%q: examples for topic %q: %v %v, want %s's only", path, table.Routes()[0].Topic, one, err, want[0])
		}
	}
}

// TestExamplesOfAnyRoute is the property behind dev --serve's examples: for any
// valid pubsub route, alone in its routes file, Examples gives an event the route
// takes and applies. Routes are generated from the shapes routes files use (type
// fields, required fields from nested paths, attributes, publish time, dedupe, ordering,
// leases), each valid by construction (the consumer's validation must accept it).
func TestExamplesOfAnyRoute(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 1))
	// Payload paths with the type producers give them, and the message's own
	// sources with the types they convert to: a route reads a path as its type.
	typed := map[string][]string{"orderId": {"string", ""}, "customer.id": {"string"}, "status": {"string", ""}, "amount": {"number"},
		"placedAt": {"timestamp", "string"}, "meta.seq": {"integer", "number"}, "region": {"string"}, "paid": {"boolean"},
		"$publishTime": {"timestamp", "string"}, "$messageId": {"string"}, "$attributes.tenant": {"string"}, "$topic": {"string"}, "$env": {""}, "$orderingKey": {"string"}}
	sources := slices.Sorted(maps.Keys(typed))
	var paths []string
	for _, p := range sources {
		if !strings.HasPrefix(p, "$") {
			paths = append(paths, p)
		}
	}
	dir := t.TempDir()
	now := time.Now()
	// field makes a field of type typ (picked from its first source's types when
	// ""): sources that hold that type, first one of first.
	field := func(first, typ string) route.Field {
		if typ == "" {
			typ = typed[first][rng.IntN(len(typed[first]))]
		}
		from := []string{first}
		for range rng.IntN(3) {
			if p := paths[rng.IntN(len(paths))]; slices.Contains(typed[p], typ) {
				from = append(from, p)
			}
		}
		return route.Field{From: from, Type: typ, Required: rng.IntN(2) == 0}
	}
	// pick returns a source that holds typ.
	pick := func(typ string) string {
		for {
			if src := sources[rng.IntN(len(sources))]; slices.Contains(typed[src], typ) {
				return src
			}
		}
	}
	for i := range 300 {
		// Every route has its aggregate id (a required string) and an event time;
		// a few more fields of any type; a match by type field, by fields, or both.
		id := field(pick("string"), "string")
		id.Required = true
		fields := map[string]route.Field{"id": id, "at": field(pick("timestamp"), "timestamp")}
		for range rng.IntN(4) {
			name := []string{"status", "seq", "source.topic", "total", "flag"}[rng.IntN(5)]
			fields[name] = field(sources[rng.IntN(len(sources))], "")
		}
		r := route.Route{Name: fmt.Sprintf("r%d", i), Mode: route.ModeLatestState, Fields: fields,
			Target: route.Target{Collection: "docs", ID: "id"}, Ordering: &route.Ordering{EventTime: "at"}}
		if rng.IntN(3) > 0 {
			r.Match.TypeField = "eventType"
			r.Match.Types = []string{"created", "updated"}[:1+rng.IntN(2)]
		}
		if r.Match.TypeField == "" || rng.IntN(2) == 0 {
			r.Match.Fields = []string{paths[rng.IntN(len(paths))]}
		}
		if f, ok := fields["seq"]; ok && f.Type == "integer" && rng.IntN(2) == 0 {
			r.Ordering.Sequence = "seq"
		}
		if rng.IntN(3) == 0 {
			r.Dedupe = &route.Dedupe{EventIDField: "eventId", Identity: []string{paths[rng.IntN(len(paths))]}}
		}
		if rng.IntN(4) == 0 {
			r.Mode, r.Target, r.Ordering = route.ModeLease, route.Target{}, nil
			r.Action = &route.Action{URL: "http://localhost:1/act"}
			if f, ok := fields["seq"]; ok && f.Type == "integer" {
				r.Action.Aggregate, r.Action.Sequence = "id", "seq" // the sequence guard takes both
			}
		}
		b, err := json.Marshal(route.Config{Routes: []route.Route{r}})
		if err != nil {
			t.Fatal(err)
		}
		table, err := route.Parse(b)
		if err != nil {
			t.Fatalf("generated route %s is invalid: %v", b, err)
		}
		path := filepath.Join(dir, "routes.json")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := Examples(path, "orders", "dev", now)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			ex := example(table.Routes()[0], "orders", now)
			t.Fatalf("route %s gets %d examples, want 1; the built event %s (attributes %v): %v", b, len(got), ex.Data, ex.Attributes, takes(t, table, ex, now))
		}
		if err := takes(t, table, got[0], now); err != nil {
			t.Fatalf("route %s: example %s: %v", b, got[0].Data, err)
		}
	}

}
