package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// Fixtures end in .txt so that `opa test policies/` does not load them as policy data.
func load(t *testing.T, name string) *Plan {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(data, name)
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return p
}

func find(t *testing.T, p *Plan, urn string) *Resource {
	t.Helper()
	for i := range p.Resources {
		if p.Resources[i].URN == urn {
			return &p.Resources[i]
		}
	}
	t.Fatalf("%s: no resource %s", p.File, urn)
	return nil
}

const (
	subURN = "urn:pulumi:prod::eventpipe::eventpipe:components:Pipeline$gcp:pubsub/subscription:Subscription::orders-push"
	dlqURN = "urn:pulumi:prod::eventpipe::eventpipe:components:Pipeline$gcp:pubsub/topic:Topic::orders-push.dlq"
	svcURN = "urn:pulumi:prod::eventpipe::eventpipe:components:Pipeline$gcp:cloudrunv2/service:Service::orders-consumer"
)

func TestParseFormats(t *testing.T) {
	tests := []struct {
		file      string
		format    Format
		complete  bool
		resources int
	}{
		{"preview_show_sames.json.txt", FormatPreview, true, 12},
		{"preview_changes_only.json.txt", FormatPreview, false, 4},
		{"stack_export.json.txt", FormatExport, true, 12},
		{"terraform_plan.json.txt", FormatTerraform, true, 11},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			p := load(t, tt.file)
			if p.Format != tt.format || p.Complete != tt.complete || len(p.Resources) != tt.resources {
				t.Fatalf("got format %s complete %v resources %d, want %s %v %d", p.Format, p.Complete, len(p.Resources), tt.format, tt.complete, tt.resources)
			}
			for _, r := range p.Resources {
				if r.Type == "pulumi:pulumi:Stack" || r.Type == "eventpipe:components:Pipeline" {
					t.Errorf("component resource %s kept: rules only see cloud resources", r.URN)
				}
				if r.PropertiesValue() == nil {
					t.Errorf("%s: nil properties", r.URN)
				}
			}
		})
	}
}

func TestPreviewKeepsUnknownsSecretsAndLinks(t *testing.T) {
	p := load(t, "preview_show_sames.json.txt")
	sub := find(t, p, subURN)
	if got := sub.Properties()["topic"]; got != Unknown {
		t.Errorf("topic = %v, want the unknown sentinel", got)
	}
	if got := sub.PropertyDependencies["deadLetterPolicy"]; !reflect.DeepEqual(got, []string{dlqURN}) {
		t.Errorf("propertyDependencies[deadLetterPolicy] = %v", got)
	}
	if sub.Name != "orders-push" || sub.Op != "create" {
		t.Errorf("name %q op %q", sub.Name, sub.Op)
	}
	envs := find(t, p, svcURN).Properties()["template"].(map[string]any)["containers"].([]any)[0].(map[string]any)["envs"].([]any)
	if got := envs[3].(map[string]any)["value"]; got != Secret {
		t.Errorf("secret env = %v", got)
	}
}

func TestExportNormalisesSecrets(t *testing.T) {
	p := load(t, "stack_export.json.txt")
	svc := find(t, p, svcURN)
	envs := svc.Properties()["template"].(map[string]any)["containers"].([]any)[0].(map[string]any)["envs"].([]any)
	if got := envs[3].(map[string]any)["value"]; got != Secret {
		t.Errorf("serialised secret became %v, want %q", got, Secret)
	}
	if sub := find(t, p, subURN); sub.ID != "projects/acme-prod/subscriptions/orders-push" {
		t.Errorf("id = %q", sub.ID)
	}
}

func TestTerraformNormalisation(t *testing.T) {
	p := load(t, "terraform_plan.json.txt")
	sub := find(t, p, "google_pubsub_subscription.push")
	if sub.Type != "gcp:pubsub/subscription:Subscription" {
		t.Fatalf("type = %s", sub.Type)
	}
	dl, ok := sub.Properties()["deadLetterPolicy"].(map[string]any)
	if !ok {
		t.Fatalf("deadLetterPolicy = %#v, want an object", sub.Properties()["deadLetterPolicy"])
	}
	if dl["deadLetterTopic"] != Unknown || dl["maxDeliveryAttempts"] != json.Number("5") {
		t.Errorf("deadLetterPolicy = %v", dl)
	}
	if got := sub.PropertyDependencies["deadLetterPolicy"]; !reflect.DeepEqual(got, []string{"google_pubsub_topic.dlq"}) {
		t.Errorf("propertyDependencies[deadLetterPolicy] = %v", got)
	}
	oidc := sub.Properties()["pushConfig"].(map[string]any)["oidcToken"].(map[string]any)
	if oidc["serviceAccountEmail"] != "orders-push@acme-prod.iam.gserviceaccount.com" {
		t.Errorf("oidcToken = %v", oidc)
	}
	if sub.Properties()["expirationPolicy"].(map[string]any)["ttl"] != "" {
		t.Errorf("expirationPolicy = %v", sub.Properties()["expirationPolicy"])
	}
	dlqSub := find(t, p, "google_pubsub_subscription.dlq")
	if dlqSub.Properties()["deadLetterPolicy"] != nil || dlqSub.Properties()["pushConfig"] != nil {
		t.Errorf("empty blocks must be absent: %v", dlqSub.Properties())
	}
	svc := find(t, p, "google_cloud_run_v2_service.consumer")
	envs := svc.Properties()["template"].(map[string]any)["containers"].([]any)[0].(map[string]any)["envs"].([]any)
	if envs[0].(map[string]any)["value"] != "firestore://acme-prod/(default)" || envs[2].(map[string]any)["value"] != Secret {
		t.Errorf("envs = %v", envs)
	}
	field := find(t, p, `google_firestore_field.ttl["leases"]`)
	if _, ok := field.Properties()["ttlConfig"].(map[string]any); !ok {
		t.Errorf("ttlConfig = %#v, want an object", field.Properties()["ttlConfig"])
	}
	for _, r := range p.Resources {
		if r.URN == "google_pubsub_topic.old" {
			t.Error("a resource planned for deletion is kept")
		}
	}
}

func TestUnusableInput(t *testing.T) {
	for _, name := range []string{"foreign_k8s.yaml.txt", "foreign_k8s_list.json.txt", "truncated_preview.json.txt", "terraform_state.json.txt", "preview_bad_step.json.txt"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			_, err = Parse(data, name)
			if !errors.Is(err, ErrUnrecognised) {
				t.Fatalf("Parse = %v, want ErrUnrecognised", err)
			}
		})
	}
	if _, err := Parse(nil, "-"); !errors.Is(err, ErrUnrecognised) {
		t.Fatalf("empty input: %v", err)
	}
}

func TestLines(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "terraform_plan.json.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"preview_show_sames.json.txt", "terraform_plan.json.txt"} {
		p := load(t, file)
		data, _ = os.ReadFile(filepath.Join("testdata", file))
		lines := bytes.Split(data, []byte{'\n'})
		got := p.Lines()
		for _, r := range p.Resources {
			n := got[r.URN]
			if n < 1 || n > len(lines) || !bytes.Contains(lines[n-1], []byte(strconv.Quote(r.URN))) {
				t.Errorf("%s: line %d for %s does not name it", file, n, r.URN)
			}
		}
	}
}

func TestLinesFirstMention(t *testing.T) {
	doc := "{\"steps\": [\n{\"urn\": \"a\\u0062\"},\n{\"urn\": \"ab\"},\n{\"urn\" : \"c\\\"d\"}, {\"x\": \"\\\"urn\\\": \\\"e\\\"\"},\n{\"address\":\"e\"}]}"
	got := Lines([]byte(doc), 0)
	want := map[string]int{"ab": 2, `c"d`: 4, "e": 5}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Lines = %v, want %v", got, want)
	}
}

func TestValueFollowsTheFields(t *testing.T) {
	p := load(t, "preview_show_sames.json.txt")
	r := find(t, p, subURN)
	first := r.Value()
	if r.Value() != first {
		t.Error("an unchanged resource's value is built again")
	}
	get := func(v ast.Value, key string) *ast.Term { return v.(ast.Object).Get(ast.StringTerm(key)) }
	if got := get(first, "urn"); got == nil || got.Value.Compare(ast.String(subURN)) != 0 {
		t.Fatalf("urn = %v", got)
	}
	// Edits to the properties' copy do not reach the rules' input.
	r.Properties()["topic"] = "changed"
	if got := get(get(r.Value(), "properties").Value, "topic"); got.Value.Compare(ast.String(Unknown)) != 0 {
		t.Errorf("properties.topic = %v after editing a copy", got)
	}
	r.URN = "urn:pulumi:prod::eventpipe::gcp:pubsub/subscription:Subscription::renamed"
	r.Dependencies = []string{"a"}
	r.PropertyDependencies = map[string][]string{"topic": {"a"}}
	v := r.Value()
	if get(v, "urn").Value.Compare(ast.String(r.URN)) != 0 {
		t.Errorf("urn = %v after the field changed", get(v, "urn"))
	}
	if got := get(v, "dependencies").Value; got.Compare(ast.NewArray(ast.StringTerm("a"))) != 0 {
		t.Errorf("dependencies = %v", got)
	}
	if got := get(get(v, "propertyDependencies").Value, "topic"); got.Value.Compare(ast.NewArray(ast.StringTerm("a"))) != 0 {
		t.Errorf("propertyDependencies.topic = %v", got)
	}
}
