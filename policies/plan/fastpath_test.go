package plan

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/policies/internal/benchgen"
)

// sameResult fails unless the fast path's plan equals the general path's: every field of
// every resource and its OPA value.
func sameResult(t *testing.T, fast, general *Plan) {
	t.Helper()
	if fast.Format != general.Format || fast.Complete != general.Complete || len(fast.Resources) != len(general.Resources) {
		t.Fatalf("fast: %s complete %v, %d resources; general: %s complete %v, %d resources",
			fast.Format, fast.Complete, len(fast.Resources), general.Format, general.Complete, len(general.Resources))
	}
	for i := range fast.Resources {
		f, g := &fast.Resources[i], &general.Resources[i]
		if f.URN != g.URN || f.Type != g.Type || f.Name != g.Name || f.ID != g.ID || f.Op != g.Op {
			t.Errorf("resource %d: fast %q %q %q %q %q, general %q %q %q %q %q", i, f.URN, f.Type, f.Name, f.ID, f.Op, g.URN, g.Type, g.Name, g.ID, g.Op)
		}
		if !slices.Equal(f.Dependencies, g.Dependencies) || !maps.EqualFunc(f.PropertyDependencies, g.PropertyDependencies, slices.Equal[[]string]) {
			t.Errorf("%s: dependencies fast %v %v, general %v %v", f.URN, f.Dependencies, f.PropertyDependencies, g.Dependencies, g.PropertyDependencies)
		}
		if f.Value().Compare(g.Value()) != 0 {
			t.Errorf("%s: OPA value\nfast    %v\ngeneral %v", f.URN, f.Value(), g.Value())
		}
	}
}

// parseBoth parses data with the fast path (reporting whether it took the document) and
// with the general path.
func parseBoth(t *testing.T, data string) (fast *Plan, fastOK bool, general *Plan, generalErr error) {
	t.Helper()
	fast, fastOK = parseFast([]byte(data))
	general, generalErr = parseGeneral([]byte(data), "doc")
	return
}

func TestFastPathMatchesGeneralPathOnFixtures(t *testing.T) {
	docs := map[string][]byte{}
	for _, name := range []string{"preview_show_sames.json.txt", "preview_changes_only.json.txt", "stack_export.json.txt", "terraform_plan.json.txt"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		docs[name] = data
	}
	// Large enough to be decoded by several workers.
	big, err := benchgen.Generate(2000)
	if err != nil {
		t.Fatal(err)
	}
	docs["benchgen 2000"] = big
	for name, data := range docs {
		t.Run(name, func(t *testing.T) {
			fast, ok, general, err := parseBoth(t, strings.TrimSpace(string(data)))
			if !ok {
				t.Fatal("the fast path gave up on a well-formed document")
			}
			if err != nil {
				t.Fatal(err)
			}
			sameResult(t, fast, general)
		})
	}
}

// previewWith is a preview document whose subscription step has the given inputs, with
// an extra step (a protected component, a deleted topic and a replaced topic) around it.
func previewWith(inputs string) string {
	return `{"config": {"a": [1, {"b": null}]}, "steps": [
	  {"op": "same", "urn": "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev", "newState": {"type": "pulumi:pulumi:Stack", "custom": false}},
	  {"op": "create", "urn": "urn:pulumi:dev::p::gcp:pubsub/subscription:Subscription::s", "provider": "x",
	   "newState": {"urn": "urn:pulumi:dev::p::gcp:pubsub/subscription:Subscription::s", "type": "gcp:pubsub/subscription:Subscription",
	     "custom": true, "inputs": ` + inputs + `, "parent": "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev",
	     "dependencies": ["urn:pulumi:dev::p::gcp:pubsub/topic:Topic::t"], "propertyDependencies": {"topic": ["urn:pulumi:dev::p::gcp:pubsub/topic:Topic::t"]}},
	   "detailedDiff": null, "diffReasons": []},
	  {"op": "delete", "urn": "urn:pulumi:dev::p::gcp:pubsub/topic:Topic::old", "oldState": {"type": "gcp:pubsub/topic:Topic", "inputs": {"name": "old"}}},
	  {"op": "create-replacement", "urn": "urn:pulumi:dev::p::gcp:pubsub/topic:Topic::t", "newState": {"type": "gcp:pubsub/topic:Topic", "id": "", "inputs": {"name": "t1"}}},
	  {"op": "replace", "urn": "urn:pulumi:dev::p::gcp:pubsub/topic:Topic::t", "oldState": {"type": "gcp:pubsub/topic:Topic", "id": "projects/p/topics/t", "inputs": {"name": "t0"}},
	   "newState": {"type": "gcp:pubsub/topic:Topic", "inputs": {"name": "t2"}, "dependencies": null, "propertyDependencies": null}},
	  {"op": "same", "urn": "urn:pulumi:dev::p::gcp:pubsub/topic:Topic::kept", "oldState": {"type": "gcp:pubsub/topic:Topic", "id": "projects/p/topics/kept", "inputs": {"name": "kept", "labels": {"x": "y"}}}}
	], "diagnostics": [], "changeSummary": {"create": 1, "same": 2}}`
}

// terraformWith is a Terraform plan whose subscription has the given after,
// after_unknown and after_sensitive, beside a data source, a deleted topic, two counted
// topics and a module, with references between them.
func terraformWith(after, unknown, sensitive string) string {
	return `{"format_version": "1.2", "terraform_version": "1.9.8", "planned_values": {"root_module": {}}, "resource_changes": [
	  {"address": "google_pubsub_subscription.s", "mode": "managed", "type": "google_pubsub_subscription", "name": "s", "index": null,
	   "change": {"actions": ["update"], "before": {}, "after": ` + after + `, "after_unknown": ` + unknown + `, "before_sensitive": {}, "after_sensitive": ` + sensitive + `}},
	  {"address": "data.google_project.p", "mode": "data", "type": "google_project", "change": {"actions": ["read"], "after": {"number": "1"}}},
	  {"address": "google_pubsub_topic.old", "mode": "managed", "type": "google_pubsub_topic", "change": {"actions": ["delete"], "after": null}},
	  {"address": "google_pubsub_topic.t[0]", "mode": "managed", "type": "google_pubsub_topic", "index": 0, "change": {"actions": ["create"], "after": {"name": "t0"}, "after_unknown": {"id": true}}},
	  {"address": "google_pubsub_topic.t[1]", "mode": "managed", "type": "google_pubsub_topic", "index": 1, "change": {"actions": ["delete", "create"], "after": {"name": "t1"}}},
	  {"address": "module.m.google_pubsub_topic.dlq", "module_address": "module.m", "mode": "managed", "type": "google_pubsub_topic", "change": {"actions": ["no-op"], "after": {"name": "d"}}}
	], "configuration": {"provider_config": {"google": {"name": "google"}}, "root_module": {
	  "resources": [{"address": "google_pubsub_subscription.s", "expressions": {"topic": {"references": ["google_pubsub_topic.t[0].id", "google_pubsub_topic.t"]},
	     "dead_letter_policy": [{"dead_letter_topic": {"references": ["module.m.google_pubsub_topic.dlq.id"]}}], "name": {"constant_value": "s"}}},
	    {"address": "google_pubsub_topic.t", "expressions": {"name": {"references": ["var.x", "local.y", "data.google_project.p.number"]}}, "count_expression": {"constant_value": 2}}],
	  "module_calls": {"m": {"source": "./m", "module": {"resources": [{"address": "google_pubsub_topic.dlq", "expressions": {"labels": {"references": ["google_pubsub_topic.other"]}}}]}}}}}}`
}

func manyLabels(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `"k%d": "v%d"`, i, i)
	}
	return b.String()
}

// TestFastPathMatchesGeneralPath runs both paths on documents with the values where a
// hand-written decoder could go wrong; the fast path must take each (or give up, where
// listed) and agree with the general path.
func TestFastPathMatchesGeneralPath(t *testing.T) {
	sig := `"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270"`
	tests := []struct {
		name   string
		doc    string
		giveUp bool // the fast path must leave the document to the general path
	}{
		{name: "numbers", doc: previewWith(`{"a": 1e6, "b": 1234567, "c": 1.50, "d": -0, "e": 0.1, "f": 12345678901234567890, "g": 100000, "h": 999999, "i": 1000000, "j": -5, "k": 5e-7, "l": 0, "m": 1E+2, "n": 007e0}`), giveUp: true},
		{name: "number forms", doc: previewWith(`{"a": 1e6, "b": 1234567, "c": 1.50, "d": -0, "e": 0.1, "f": 12345678901234567890, "g": 100000, "h": 999999, "i": 1000000, "j": -5, "k": 5e-7, "l": 0, "m": 1E+2, "n": -0.0}`)},
		{name: "escapes", doc: previewWith(`{"s": "a\"b\\c\/d\n\t\r\b\f\u00e9\ud83d\ude00", "k\u0041y": "x", "\u2028": "\u0000"}`)},
		{name: "utf-8", doc: previewWith(`{"s": "héllo ✓ 😀", "é": ["ü"]}`)},
		{name: "secrets", doc: previewWith(`{"a": {` + sig + `, "plaintext": "\"s\""}, "l": [{` + sig + `}, {"b": {` + sig + `}}], "c": "[secret]"}`)},
		{name: "whole inputs secret", doc: previewWith(`{` + sig + `, "ciphertext": "x"}`)},
		{name: "null inputs", doc: previewWith(`null`)},
		{name: "empty containers", doc: previewWith(`{"a": {}, "b": [], "c": [[], {}], "d": ""}`)},
		{name: "literals", doc: previewWith(`{"t": true, "f": false, "n": null, "l": [true, false, null]}`)},
		{name: "long and short strings", doc: previewWith(`{"a": "` + strings.Repeat("x", 200) + `", "b": "10s", "c": "10s", "d": "0123456789012345678901234"}`)},
		{name: "deep", doc: previewWith(`{"a": [[[[[[{"b": [[[{"c": 1}]]]}]]]]]]}`)},
		{name: "compact", doc: strings.NewReplacer("\n", "", "\t", "", ": ", ":", ", ", ",").Replace(previewWith(`{"a": 1}`))},
		{name: "wide whitespace", doc: strings.NewReplacer(`": `, "\" \r\n\t: \t", `, "`, " \n ,\n\t\"").Replace(previewWith(`{"a": 1}`))},
		{name: "no steps", doc: `{"steps": [], "changeSummary": {}}`},
		{name: "incomplete preview", doc: strings.Replace(previewWith(`{}`), `"op": "same"`, `"op": "create"`, -1)},
		{name: "stack export", doc: `{"version": 3, "deployment": {"manifest": {"time": "x"}, "resources": [
			{"urn": "urn:pulumi:dev::p::pulumi:pulumi:Stack::p-dev", "type": "pulumi:pulumi:Stack", "custom": false},
			{"urn": "urn:pulumi:dev::p::gcp:pubsub/topic:Topic::t", "type": "gcp:pubsub/topic:Topic", "custom": true, "id": "projects/p/topics/t",
			 "inputs": {"name": "t", "labels": {` + sig + `, "ciphertext": "x"}}, "outputs": {"name": "t"}},
			{"urn": "urn:pulumi:dev::p::gcp:pubsub/topic:Topic::gone", "type": "gcp:pubsub/topic:Topic", "delete": true, "inputs": {}},
			{"urn": "urn:pulumi:dev::p::pulumi:providers:gcp::default", "type": "pulumi:providers:gcp", "custom": true, "inputs": null}]}}`},

		// Left to the general path: it decides (and reports) these.
		{name: "duplicate input key", doc: previewWith(`{"a": 1, "a": 2}`), giveUp: true},
		{name: "key differing in case", doc: strings.Replace(previewWith(`{}`), `"op": "delete"`, `"Op": "delete"`, 1), giveUp: true},
		{name: "invalid utf-8", doc: previewWith("{\"a\": \"\xff\"}"), giveUp: true},
		{name: "lone surrogate", doc: previewWith(`{"a": "\ud800"}`), giveUp: true},
		{name: "number out of range", doc: previewWith(`{"a": 1e400}`), giveUp: true},
		{name: "trailing comma", doc: previewWith(`{"a": 1,}`), giveUp: true},
		{name: "missing comma between steps", doc: strings.Replace(previewWith(`{}`), `"diffReasons": []},`, `"diffReasons": []}`, 1), giveUp: true},
		{name: "empty step", doc: `{"steps": [{"op": "same", "urn": "u"}, , {"op": "same", "urn": "v"}]}`, giveUp: true},
		{name: "step without op", doc: strings.Replace(previewWith(`{}`), `"op": "delete", `, ``, 1), giveUp: true},
		{name: "null step", doc: `{"steps": [null]}`, giveUp: true},
		{name: "inputs of the wrong type", doc: previewWith(`"inputs"`), giveUp: true},
		{name: "null steps", doc: `{"steps": null, "deployment": {"resources": []}, "version": 3}`, giveUp: true},
		{name: "steps and version", doc: `{"steps": [], "version": 3}`, giveUp: true},
		{name: "export without version", doc: `{"deployment": {"resources": []}}`, giveUp: true},
		{name: "export resource without type", doc: `{"version": 3, "deployment": {"resources": [{"urn": "u"}]}}`, giveUp: true},
		{name: "trailing data", doc: previewWith(`{}`) + ` {}`, giveUp: true},
		{name: "unterminated", doc: previewWith(`{"a": "x`), giveUp: true},
		{name: "terraform without changes", doc: `{"format_version": "1.2", "resource_changes": []}`},
		{name: "terraform values", doc: terraformWith(`{"name": "s", "id": "projects/p/subscriptions/s", "labels": {`+manyLabels(40)+`},
			"push_config": [{"push_endpoint": "https://x", "oidc_token": [{"service_account_email": "a@b"}], "no_wrapper": []}],
			"dead_letter_policy": [], "retry_policy": [{"minimum_backoff": "10s", "maximum_backoff": null}], "big": 1e6, "n": null,
			"template": [{"containers": [{"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}]}], "expiration_policy": [{"ttl": ""}]}`,
			`{"topic": true, "push_config": [{"oidc_token": [{"audience": true}]}], "dead_letter_policy": [], "etag": true}`,
			`{"labels": {"k1": true}, "template": [{"containers": [{"env": [{}, {"value": true}]}]}]}`)},
		{name: "terraform unknown id and whole values", doc: terraformWith(`{"id": "x"}`, `{"id": true}`, `true`)},
		{name: "terraform without after", doc: terraformWith(`null`, `{"name": true}`, `{}`)},
		{name: "terraform duplicate attribute", doc: terraformWith(`{"a": 1, "a": 2}`, `{}`, `{}`), giveUp: true},
		{name: "terraform attributes colliding once renamed", doc: terraformWith(`{"a_b": 1, "aB": 2}`, `{}`, `{}`), giveUp: true},
		{name: "terraform without format version", doc: `{"format_version": "", "resource_changes": []}`, giveUp: true},
		{name: "terraform state", doc: `{"format_version": "1.0", "values": {"root_module": {}}}`, giveUp: true},
		{name: "terraform change without type", doc: `{"format_version": "1.2", "resource_changes": [{"address": "a.b"}]}`, giveUp: true},
		{name: "terraform and pulumi", doc: `{"format_version": "1.2", "resource_changes": [], "steps": []}`, giveUp: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fast, ok, general, err := parseBoth(t, tt.doc)
			if ok == tt.giveUp {
				t.Fatalf("fast path took the document: %v, want %v", ok, !tt.giveUp)
			}
			if !ok {
				return
			}
			if err != nil {
				t.Fatalf("the fast path took a document the general path rejects: %v", err)
			}
			sameResult(t, fast, general)
		})
	}
}

// FuzzFastPath checks that whatever the fast path accepts, the general path reads the
// same way. `go test` runs the seeds; `go test -fuzz FuzzFastPath` explores.
func FuzzFastPath(f *testing.F) {
	f.Add(previewWith(`{"a": [1, 2.5, "x\n", {"b": null}], "c": true}`))
	f.Add(`{"version": 3, "deployment": {"resources": [{"urn": "u::n", "type": "t", "inputs": {"a": 1}}]}}`)
	f.Add(terraformWith(`{"name": "s", "labels": {"a_b": "c"}, "retry_policy": [{"minimum_backoff": "10s"}]}`, `{"topic": true}`, `{"name": true}`))
	f.Fuzz(func(t *testing.T, doc string) {
		fast, ok := parseFast([]byte(doc))
		if !ok {
			return
		}
		general, err := parseGeneral([]byte(doc), "doc")
		if err != nil {
			t.Fatalf("the fast path took a document the general path rejects: %v", err)
		}
		sameResult(t, fast, general)
	})
}

// TestTerraformMapKeysKeepTheirNames checks that the keys of map attributes (label names)
// are not renamed like attributes, on both paths: the rules read labels.eventpipe_role.
func TestTerraformMapKeysKeepTheirNames(t *testing.T) {
	doc := terraformWith(`{"labels": {"eventpipe_role": "dlq", "eventpipe_env": "prod"}, "push_config": [{"attributes": {"x_goog_version": "v1"}}]}`, `{}`, `{}`)
	fast, ok, general, err := parseBoth(t, doc)
	if !ok || err != nil {
		t.Fatalf("fast path took it: %v; general path: %v", ok, err)
	}
	for name, p := range map[string]*Plan{"fast": fast, "general": general} {
		props := find(t, p, "google_pubsub_subscription.s").Properties()
		labels, _ := props["labels"].(map[string]any)
		attrs, _ := props["pushConfig"].(map[string]any)["attributes"].(map[string]any)
		if labels["eventpipe_role"] != "dlq" || labels["eventpipe_env"] != "prod" || attrs["x_goog_version"] != "v1" {
			t.Errorf("%s path: labels %v, push attributes %v", name, labels, attrs)
		}
	}
}
