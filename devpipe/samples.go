package devpipe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/consumer/route"
)

// Sample is one of a team's own events, played by the scenario in place of
// the built-in system events.
type Sample struct {
	// Data is the event as published (the message data): one JSON object.
	Data []byte
	// Source is where it was read: FILE:LINE.
	Source string
}

// SampleExts are the file name endings LoadSamples reads: one JSON object per
// line, or a JSON array of objects (or one object).
var SampleExts = []string{".jsonl", ".json"}

// LoadSamples reads a folder of a team's sample events, a file per pipeline:
// DIR/<pipeline>.jsonl (one JSON object per line; blank lines and lines
// starting with // are skipped) or DIR/<pipeline>.json (a JSON array of
// objects, or one object). Every problem is reported at once, with the file
// and line: a file that names no pipeline of the stack, a pipeline with two
// files, an empty file, a line that is not a JSON object.
func LoadSamples(dir string, pipelines []string) (map[string][]Sample, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--samples %s: %w (fix: a folder with one file per pipeline, e.g. %s)", dir, err, exampleSampleFile(dir, pipelines))
	}
	known := map[string]bool{}
	for _, p := range pipelines {
		known[p] = true
	}
	out := map[string][]Sample{}
	from := map[string]string{}
	var problems []string
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		if e.IsDir() || !slices.Contains(SampleExts, ext) {
			continue
		}
		path := filepath.Join(dir, name)
		pipeline := strings.TrimSuffix(name, ext)
		if !known[pipeline] {
			problems = append(problems, fmt.Sprintf("%s: names no pipeline of the stack (it has %s): name it <pipeline>%s", path,
				strings.Join(pipelines, ", "), ext))
			continue
		}
		if prev, ok := from[pipeline]; ok {
			problems = append(problems, fmt.Sprintf("%s: pipeline %s already has %s: keep one file per pipeline", path, pipeline, prev))
			continue
		}
		from[pipeline] = path
		samples, errs := readSamples(path)
		problems = append(problems, errs...)
		if len(samples) == 0 && len(errs) == 0 {
			problems = append(problems, fmt.Sprintf("%s: holds no event: add one JSON object per line", path))
		}
		out[pipeline] = samples
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("--samples %s (%d problems):\n  - %s", dir, len(problems), strings.Join(problems, "\n  - "))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--samples %s: no sample file (fix: one file per pipeline, e.g. %s)", dir, exampleSampleFile(dir, pipelines))
	}
	return out, nil
}

func exampleSampleFile(dir string, pipelines []string) string {
	name := "PIPELINE"
	if len(pipelines) > 0 {
		name = pipelines[0]
	}
	return filepath.Join(dir, name+".jsonl") + " with one JSON event per line"
}

// readSamples reads one sample file; errors name the file and line.
func readSamples(path string) ([]Sample, []string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, []string{err.Error()}
	}
	if filepath.Ext(path) == ".json" {
		return readSampleArray(path, b)
	}
	var out []Sample
	var problems []string
	for i, l := range bytes.Split(b, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if len(l) == 0 || bytes.HasPrefix(l, []byte("//")) {
			continue
		}
		src := fmt.Sprintf("%s:%d", path, i+1)
		if err := isObject(l); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v: write one JSON object per line", src, err))
			continue
		}
		out = append(out, Sample{Data: slices.Clone(l), Source: src})
	}
	return out, problems
}

// readSampleArray reads a .json sample file: an array of objects, or one.
func readSampleArray(path string, b []byte) ([]Sample, []string) {
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		if err := isObject(trimmed); err != nil {
			return nil, []string{fmt.Sprintf("%s: %v", path, err)}
		}
		return []Sample{{Data: trimmed, Source: path + ":1"}}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, []string{fmt.Sprintf("%s: not a JSON array of events or one event object", path)}
	}
	var out []Sample
	var problems []string
	for dec.More() {
		at := int(dec.InputOffset())
		for at < len(b) && bytes.IndexByte([]byte(" \t\r\n,"), b[at]) >= 0 {
			at++ // the element starts after the separator and blanks
		}
		line := 1 + bytes.Count(b[:at], []byte("\n"))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return out, append(problems, fmt.Sprintf("%s:%d: %v", path, line, err))
		}
		raw = bytes.TrimSpace(raw)
		if err := isObject(raw); err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: %v: each element must be an event object", path, line, err))
			continue
		}
		out = append(out, Sample{Data: slices.Clone([]byte(raw)), Source: fmt.Sprintf("%s:%d", path, line)})
	}
	return out, problems
}

// isObject reports whether b is one JSON object.
func isObject(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("not JSON (%v)", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("a JSON %T, not an object", v)
	}
	return nil
}

// RouteExample is an event in one route's shape: what the route takes and applies.
type RouteExample struct {
	// Route is the route's name.
	Route string
	// Data is the event (the message data); Attributes the message
	// attributes the route reads ($attributes.NAME sources, $topic when the
	// route names no topic), OrderingKey the ordering key it reads.
	Data        []byte
	Attributes  map[string]string
	OrderingKey string
}

// Examples returns an event for each pubsub route of the routes file at path
// ("" the consumer's default routes) that the consumer would give to that
// route and apply: the routes that name topic (a short topic name) when some
// do, else every pubsub route. Each example is checked with the consumer's
// own routing (route.Table.Match and Route.Apply); a route whose example an
// earlier route would take is left out.
func Examples(path, topic, env string, now time.Time) ([]RouteExample, error) {
	table, err := route.LoadFile(path)
	if err != nil {
		return nil, err
	}
	var routes []*route.Route
	for _, r := range table.Routes() {
		if r.Ingress != route.IngressCallback {
			routes = append(routes, r)
		}
	}
	if named := slices.DeleteFunc(slices.Clone(routes), func(r *route.Route) bool { return r.Topic != topic }); len(named) > 0 {
		routes = named
	}
	var out []RouteExample
	for _, r := range routes {
		ex := example(r, topic, now)
		payload, err := envelope.DecodePayload(ex.Data)
		if err != nil {
			continue
		}
		if first, err := table.Match(payload); err != nil || first != r {
			continue
		}
		msg := &envelope.Message{ID: "example", Data: ex.Data, Payload: payload, Attributes: ex.Attributes, PublishTime: now,
			OrderingKey: ex.OrderingKey, Subscription: "projects/local/subscriptions/example"}
		if _, err := r.Apply(msg, env); err != nil {
			continue
		}
		out = append(out, ex)
	}
	return out, nil
}

// example builds an event route r matches, published to topic: its type field
// and match fields, then each field from its first source an example can hold,
// as its type asks.
func example(r *route.Route, topic string, now time.Time) RouteExample {
	payload := map[string]any{}
	attrs := map[string]string{}
	orderingKey := ""
	set := func(path string, v any) {
		if path == "" || strings.HasPrefix(path, "$") {
			return
		}
		if _, done := lookup(payload, path); !done {
			setPath(payload, path, v)
		}
	}
	if f := r.Match.TypeField; f != "" {
		typ := "example"
		if len(r.Match.Types) > 0 {
			typ = r.Match.Types[0]
		}
		set(f, typ)
	}
	if d := r.Dedupe; d != nil {
		set(d.EventIDField, "evt-"+r.Name+"-1") // one per route: the consumer dedupes event ids across routes
	}
	for _, name := range slices.Sorted(maps.Keys(r.Fields)) {
		f := r.Fields[name]
		v := exampleValue(name, f.Type, now)
		// The consumer takes the first source present: stop at the first one
		// the example can make present.
	sources:
		for _, src := range f.From {
			switch {
			case src == "$orderingKey":
				orderingKey = fmt.Sprint(v)
			case src == "$topic" && r.Topic == "":
				attrs["topic"] = topic // the consumer reads it from the attribute then
			case strings.HasPrefix(src, "$attributes."):
				attrs[strings.TrimPrefix(src, "$attributes.")] = fmt.Sprint(v)
			case strings.HasPrefix(src, "$"): // always present
			default:
				set(src, v)
			}
			break sources
		}
	}
	for _, f := range r.Match.Fields {
		set(f, "example")
	}
	if d := r.Dedupe; d != nil {
		for _, f := range d.Identity {
			set(f, "example")
		}
	}
	data, _ := json.Marshal(payload) // maps of strings, numbers and booleans
	return RouteExample{Route: r.Name, Data: data, Attributes: attrs, OrderingKey: orderingKey}
}

// exampleValue is a value of type typ for the output field name.
func exampleValue(name, typ string, now time.Time) any {
	switch typ {
	case "timestamp":
		return now.UTC().Truncate(time.Second).Format(time.RFC3339)
	case "integer":
		return 1
	case "number":
		return 1.5
	case "boolean":
		return true
	default:
		leaf := name[strings.LastIndex(name, ".")+1:]
		return strings.TrimSuffix(strings.TrimSuffix(leaf, "Id"), "ID") + "-1"
	}
}

// lookup finds a dotted path in nested maps.
func lookup(m map[string]any, path string) (any, bool) {
	keys := strings.Split(path, ".")
	var cur any = m
	for _, k := range keys {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// setPath sets a dotted path in nested maps, making the maps on the way.
func setPath(m map[string]any, path string, v any) {
	keys := strings.Split(path, ".")
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = v
}

// ExampleCommand is the curl command that publishes ex to pipeline through
// dev --serve's endpoint at base.
func ExampleCommand(base, pipeline string, ex RouteExample) string {
	target := base + "/publish/" + pipeline
	if len(ex.Attributes) > 0 {
		q := url.Values{}
		for k, v := range ex.Attributes {
			q.Set(k, v)
		}
		target += "?" + q.Encode()
	}
	header := ""
	if ex.OrderingKey != "" {
		header = fmt.Sprintf(" -H '%s: %s'", OrderingKeyHeader, ex.OrderingKey)
	}
	return fmt.Sprintf("curl -sS -X POST '%s'%s -d '%s'", target, header, strings.ReplaceAll(string(ex.Data), "'", `'\''`))
}
