package provider_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
	"gopkg.in/yaml.v3"
)

// TestYAMLExampleMatchesTheSchema: the README's Pulumi YAML example uses
// only component types the provider serves and input properties they
// take, at any depth of their object types, and sets every required one.
// (Pulumi YAML itself cannot run here.)
func TestYAMLExampleMatchesTheSchema(t *testing.T) {
	var spec schema.PackageSpec
	if err := json.Unmarshal(servedSchema(t), &spec); err != nil {
		t.Fatal(err)
	}
	var program struct {
		Resources map[string]struct {
			Type       string         `yaml:"type"`
			Properties map[string]any `yaml:"properties"`
		} `yaml:"resources"`
	}
	if err := yaml.Unmarshal([]byte(readmeExample(t, "yaml")), &program); err != nil {
		t.Fatalf("the README's YAML example: %v", err)
	}
	if len(program.Resources) == 0 {
		t.Fatal("the README's YAML example declares nothing")
	}
	for name, r := range program.Resources {
		res, ok := spec.Resources[r.Type]
		if !ok {
			t.Errorf("%s: type %s is not in the schema", name, r.Type)
			continue
		}
		for _, req := range res.RequiredInputs {
			if _, ok := r.Properties[req]; !ok {
				t.Errorf("%s: required input %s is not set", name, req)
			}
		}
		checkProperties(t, &spec, name, r.Properties, res.InputProperties)
	}
}

// checkProperties reports the keys of props the schema properties want do
// not have, descending into object types and maps of them.
func checkProperties(t *testing.T, spec *schema.PackageSpec, path string, props map[string]any, want map[string]schema.PropertySpec) {
	t.Helper()
	for key, value := range props {
		p, ok := want[key]
		if !ok {
			t.Errorf("%s.%s is not an input (have %v)", path, key, slices.Sorted(maps.Keys(want)))
			continue
		}
		nested, _ := value.(map[string]any)
		switch {
		case nested == nil:
		case p.Ref != "":
			checkObject(t, spec, path+"."+key, nested, p.Ref)
		case p.AdditionalProperties != nil && p.AdditionalProperties.Ref != "":
			for k, v := range nested {
				if m, ok := v.(map[string]any); ok {
					checkObject(t, spec, path+"."+key+"."+k, m, p.AdditionalProperties.Ref)
				}
			}
		}
	}
}

func checkObject(t *testing.T, spec *schema.PackageSpec, path string, props map[string]any, ref string) {
	t.Helper()
	ty, ok := spec.Types[ref[len("#/types/"):]]
	if !ok {
		t.Fatalf("%s: the schema has no type %s", path, ref)
	}
	checkProperties(t, spec, path, props, ty.Properties)
}
