package tfprovider

import (
	"math/big"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov5"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// configured is a resource object as Terraform decodes a configuration: every attribute
// null and every list or set block empty unless set.
func configured(r *resourceType, set object) object {
	v := object{}
	for _, f := range r.allFields() {
		if f.isBlock() && !f.asAttribute() && f.nesting != tfprotov5.SchemaNestedBlockNestingModeSingle {
			v[f.name] = []any{}
		} else {
			v[f.name] = nil
		}
	}
	for k, x := range set {
		v[k] = x
	}
	return v
}

func num(n float64) *big.Float { return big.NewFloat(n) }

var acme = &providerConfig{project: "acme", attribution: true}

func TestPlanCreatesAsTheSDK(t *testing.T) {
	r := pubsubSubscription()
	config := configured(r, object{
		"name": "orders-worker", "topic": "orders",
		"labels":       object{"team": "payments"},
		"retry_policy": []any{object{"minimum_backoff": "10s", "maximum_backoff": nil}},
	})
	planned, replace := r.plan(config, config, nil, acme)
	if replace != nil {
		t.Errorf("a create asks for a replacement of %v", replace)
	}
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"configured value", planned["name"], "orders-worker"},
		{"default of an unset attribute", planned["message_retention_duration"], "604800s"},
		{"provider's project", planned["project"], "acme"},
		{"default deletion policy", planned["deletion_policy"], "DELETE"},
		{"id", planned["id"], unknown},
		{"unset optional computed attribute", planned["ack_deadline_seconds"], unknown},
		{"unset optional computed block", planned["expiration_policy"], unknown},
		{"unset optional attribute", planned["filter"], nil},
		{"unset optional block", planned["dead_letter_policy"], []any{}},
		{"unset computed attribute of a configured block", planned["retry_policy"].([]any)[0].(object)["maximum_backoff"], unknown},
		{"terraform labels", planned["terraform_labels"], object{"team": "payments", attributionKey: attributionValue}},
		{"effective labels", planned["effective_labels"], object{"team": "payments", attributionKey: attributionValue}},
	}
	for _, tt := range tests {
		if isUnknown(tt.want) != isUnknown(tt.got) || (!isUnknown(tt.want) && !equal(tt.got, tt.want)) {
			t.Errorf("%s: planned %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

// applied is what the stand-in stores after creating config.
func applied(t *testing.T, r *resourceType, config object) object {
	t.Helper()
	planned, _ := r.plan(config, config, nil, acme)
	return r.applied(planned, acme)
}

// proposed is Terraform's proposed new state: the configuration, with the prior state's
// values where the configuration leaves a computed attribute unset.
func proposed(r *resourceType, config, prior object) object {
	out := object{}
	for _, f := range r.allFields() {
		out[f.name] = config[f.name]
		if config[f.name] == nil && f.opts&computed != 0 {
			out[f.name] = prior[f.name]
		}
	}
	return out
}

func TestPlanUpdatesAsTheSDK(t *testing.T) {
	r := pubsubSubscription()
	base := object{"name": "orders-worker", "topic": "orders", "labels": object{"team": "payments", "tier": "1"}}
	prior := applied(t, r, configured(r, base))
	if prior["id"] != "projects/acme/subscriptions/orders-worker" || !equal(prior["ack_deadline_seconds"], num(10)) {
		t.Fatalf("applied state: id %v, ack deadline %v", prior["id"], prior["ack_deadline_seconds"])
	}

	t.Run("unchanged configuration plans the prior state", func(t *testing.T) {
		config := configured(r, base)
		planned, replace := r.plan(proposed(r, config, prior), config, prior, acme)
		if replace != nil || !equal(planned, prior) {
			t.Errorf("planned %v (replace %v), want the prior state %v", planned, replace, prior)
		}
	})
	t.Run("a changed label updates in place", func(t *testing.T) {
		config := configured(r, object{"name": "orders-worker", "topic": "orders", "labels": object{"team": "billing"}})
		planned, replace := r.plan(proposed(r, config, prior), config, prior, acme)
		if replace != nil {
			t.Errorf("a label change asks for a replacement of %v", replace)
		}
		want := object{"team": "billing", attributionKey: attributionValue}
		if !equal(planned["effective_labels"], want) || !equal(planned["terraform_labels"], want) {
			t.Errorf("labels planned %v and %v, want %v", planned["effective_labels"], planned["terraform_labels"], want)
		}
		if planned["id"] != prior["id"] || !equal(planned["expiration_policy"], prior["expiration_policy"]) {
			t.Errorf("an update changed computed values: id %v, expiration %v", planned["id"], planned["expiration_policy"])
		}
	})
	t.Run("a changed ForceNew value replaces", func(t *testing.T) {
		config := configured(r, object{"name": "orders-worker", "topic": "payments", "labels": object{"team": "payments", "tier": "1"}})
		planned, replace := r.plan(proposed(r, config, prior), config, prior, acme)
		if len(replace) != 1 || !replace[0].Equal(tftypes.NewAttributePath().WithAttributeName("topic")) {
			t.Errorf("replacement paths %v, want [topic]", replace)
		}
		if !isUnknown(planned["id"]) || !isUnknown(planned["ack_deadline_seconds"]) {
			t.Errorf("a replacement plans id %v and ack deadline %v, want both unknown", planned["id"], planned["ack_deadline_seconds"])
		}
	})
}

func TestPlanKeepsUnknownDynamicBlocks(t *testing.T) {
	r := pubsubSubscription()
	config := configured(r, object{"name": "s", "topic": "t", "dead_letter_policy": unknown, "labels": unknown})
	planned, _ := r.plan(config, config, nil, acme)
	for _, k := range []string{"dead_letter_policy", "terraform_labels", "effective_labels"} {
		if !isUnknown(planned[k]) {
			t.Errorf("%s planned %v, want unknown", k, planned[k])
		}
	}
}

func TestIAMPolicyDataRendersAsTheProvider(t *testing.T) {
	d := iamPolicyData()
	v := configured(d, object{"binding": []any{
		object{"role": "roles/pubsub.subscriber", "members": []any{"user:b@example.com"}, "condition": []any{}},
		object{"role": "roles/pubsub.publisher", "members": []any{"user:z@example.com", "group:a@example.com"}, "condition": []any{}},
		object{"role": "roles/pubsub.publisher", "members": []any{"user:c@example.com"}, "condition": []any{}},
	}})
	if err := d.read(v, acme); err != nil {
		t.Fatal(err)
	}
	want := `{"bindings":[{"members":["group:a@example.com","user:c@example.com","user:z@example.com"],"role":"roles/pubsub.publisher"},{"members":["user:b@example.com"],"role":"roles/pubsub.subscriber"}]}`
	if v["policy_data"] != want {
		t.Errorf("policy_data %v\nwant %s", v["policy_data"], want)
	}
	if v["id"] == "" || v["id"] == nil {
		t.Error("no id")
	}
}

func TestSchemasFollowTheSDKConversion(t *testing.T) {
	s := pubsubSubscription().schema().Block
	find := func(name string) (*tfprotov5.SchemaAttribute, *tfprotov5.SchemaNestedBlock) {
		for _, a := range s.Attributes {
			if a.Name == name {
				return a, nil
			}
		}
		for _, b := range s.BlockTypes {
			if b.TypeName == name {
				return nil, b
			}
		}
		return nil, nil
	}
	if a, _ := find("id"); a == nil || !a.Optional || !a.Computed {
		t.Errorf("id attribute %+v, want optional and computed", a)
	}
	if _, b := find("timeouts"); b == nil || b.Nesting != tfprotov5.SchemaNestedBlockNestingModeSingle || len(b.Block.Attributes) != 3 {
		t.Errorf("timeouts block %+v, want a single block of create, update, delete", b)
	}
	if _, b := find("expiration_policy"); b == nil || b.MaxItems != 1 || b.MinItems != 0 {
		t.Errorf("expiration_policy %+v, want an optional list block of at most one", b)
	}
	run := cloudRunService().schema().Block
	for _, a := range run.Attributes {
		if a.Name == "conditions" && !a.Type.Is(tftypes.List{}) {
			t.Errorf("conditions type %s, want a list attribute", a.Type)
		}
	}
	for _, b := range run.BlockTypes {
		if b.TypeName == "conditions" {
			t.Error("computed-only conditions served as a block")
		}
		if b.TypeName == "template" && b.MinItems != 1 {
			t.Errorf("required template block has min items %d, want 1", b.MinItems)
		}
	}
}

// TestPubsubTopicDataAsTheProvider: the google_pubsub_topic data source serves the
// resource's fields computed, but name (required) and project (optional), with no blocks
// in configuration; reading it gives the topic's id in the provider's project, or its own.
func TestPubsubTopicDataAsTheProvider(t *testing.T) {
	d := pubsubTopicData()
	s := d.schema().Block
	if len(s.BlockTypes) != 0 {
		t.Errorf("blocks %v: a data source's computed-only blocks are attributes", s.BlockTypes)
	}
	for _, a := range s.Attributes {
		switch a.Name {
		case "name":
			if !a.Required {
				t.Errorf("name %+v, want required", a)
			}
		case "project", "id":
			if !a.Optional {
				t.Errorf("%s %+v, want optional", a.Name, a)
			}
		default:
			if !a.Computed || a.Optional || a.Required {
				t.Errorf("%s %+v, want computed only", a.Name, a)
			}
		}
	}
	for project, want := range map[string]string{"": "projects/acme/topics/dead-letters", "other": "projects/other/topics/dead-letters"} {
		v := configured(d, object{"name": "dead-letters", "project": project})
		if project == "" {
			v["project"] = nil
		}
		if err := d.read(v, acme); err != nil {
			t.Fatal(err)
		}
		if v["id"] != want {
			t.Errorf("project %q: id %v, want %s", project, v["id"], want)
		}
	}
}
