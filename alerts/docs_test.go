package alerts

import (
	"encoding/json"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// alertsDoc returns docs/alerts.md, the alerts' reference page.
func alertsDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../docs/alerts.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReadmeDocumentsEveryAlert keeps docs/alerts.md in step with the code:
// every alert the default policy set raises (each alert is on by default)
// has a table row and a runbook entry with its runbook's title, and every
// metric is listed.
func TestReadmeDocumentsEveryAlert(t *testing.T) {
	sec := alertsDoc(t)
	ps := mustPolicySet(t, testTarget(), Defaults())
	titles := map[string]string{}
	for _, p := range ps.Policies {
		rb, err := runbookFor(testTarget(), Defaults(), p)
		if err != nil {
			t.Fatal(err)
		}
		titles[p.Alert] = rb.title
	}
	if len(titles) == 0 {
		t.Fatal("the default policy set raises no alert")
	}
	for _, a := range slices.Sorted(maps.Keys(titles)) {
		if !strings.Contains(sec, "| `"+a+"` |") {
			t.Errorf("docs/alerts.md alert table lacks `%s`", a)
		}
		title := titles[a]
		if strings.HasPrefix(title, "Lease problems") {
			title = "Lease problems"
		}
		if !strings.Contains(sec, "`"+a+"`") || !strings.Contains(sec, title) {
			t.Errorf("docs/alerts.md runbooks lack %s (%q)", a, title)
		}
	}
	for _, m := range Metrics(testTarget()) {
		if !strings.Contains(sec, "| `"+m.ID+"` |") {
			t.Errorf("docs/alerts.md metric table lacks `%s`", m.ID)
		}
	}
}

// TestReadmeConfigExample decodes the YAML example of docs/alerts.md the way stack
// config arrives (JSON over Defaults()) and checks it validates and changes
// exactly what it says.
func TestReadmeConfigExample(t *testing.T) {
	sec := alertsDoc(t)
	_, rest, ok := strings.Cut(sec, "```yaml\n")
	if !ok {
		t.Fatal("docs/alerts.md has no yaml example")
	}
	example, _, _ := strings.Cut(rest, "```")
	var doc struct {
		Config map[string]json.RawMessage `json:"config"`
	}
	js, err := yaml.YAMLToJSON([]byte(example))
	if err != nil {
		t.Fatalf("docs/alerts.md example is not YAML: %v", err)
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	var section struct {
		Team       string          `json:"team"`
		Channels   Channels        `json:"channels"`
		Thresholds json.RawMessage `json:"thresholds"`
	}
	if err := json.Unmarshal(doc.Config["eventpipe:alerts"], &section); err != nil {
		t.Fatalf("eventpipe:alerts: %v", err)
	}
	c := Defaults()
	dec := json.NewDecoder(strings.NewReader(string(section.Thresholds)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("docs/alerts.md thresholds: %v", err)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("docs/alerts.md thresholds do not validate: %v", err)
	}
	if err := section.Channels.Validate(); err != nil || len(section.Channels.Critical) != 1 || len(section.Channels.Warning) != 1 {
		t.Fatalf("docs/alerts.md channels %+v: %v", section.Channels, err)
	}
	want := Defaults()
	want.Push.ServerErrorWarning = 0.02
	want.Push.MinRequests = 500
	want.DLQ.WarningFor = Dur(10 * time.Minute)
	want.SLO.Goal = 0.999
	if !reflect.DeepEqual(c, want) {
		t.Errorf("docs/alerts.md example decodes to\n%+v\nwant\n%+v", c, want)
	}
	// Every threshold key docs/alerts.md lists exists in Config, and none is missing.
	keys := jsonKeys(reflect.TypeOf(Config{}), "")
	for _, k := range keys {
		leaf := k[strings.LastIndex(k, ".")+1:]
		if !strings.Contains(sec, leaf) {
			t.Errorf("docs/alerts.md does not document threshold key %s", k)
		}
	}
}

// jsonKeys lists the dotted JSON keys of the leaves of struct type t.
func jsonKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Type.Kind() == reflect.Struct {
			out = append(out, jsonKeys(f.Type, prefix+name+".")...)
			continue
		}
		if f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct {
			out = append(out, jsonKeys(f.Type.Elem(), prefix+name+".")...)
			continue
		}
		out = append(out, prefix+name)
	}
	return out
}
