package provider_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"testing"

	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi/pkg/v3/codegen/schema"
)

var update = flag.Bool("update", false, "rewrite schema.json from the provider's GetSchema")

// schemaFile is the reviewed copy of the schema the provider serves.
const schemaFile = "schema.json"

// servedSchema is the schema the provider returns from its gRPC GetSchema,
// indented as the committed copy is.
func servedSchema(t *testing.T) []byte {
	t.Helper()
	resp, err := newServer(t, nil).GetSchema(p.GetSchemaRequest{})
	if err != nil {
		t.Fatalf("GetSchema: %v", err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, []byte(resp.Schema), "", "  "); err != nil {
		t.Fatalf("GetSchema returned invalid JSON: %v", err)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

// TestServedSchemaMatchesReviewedCopy: the schema SDKs are generated from
// (inputs, outputs, types, descriptions, required fields) changes only
// with a reviewed schema.json (go test ./provider -run Schema -update).
func TestServedSchemaMatchesReviewedCopy(t *testing.T) {
	got := servedSchema(t)
	if *update {
		if err := os.WriteFile(schemaFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", schemaFile, len(got))
	}
	want, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatalf("read the reviewed schema (create it with -update): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the provider's schema differs from %s; review the change and run go test ./provider -run Schema -update:\n%s",
			schemaFile, firstDifference(want, got))
	}
}

// firstDifference shows the first line where want and got differ.
func firstDifference(want, got []byte) string {
	w, g := bytes.Split(want, []byte("\n")), bytes.Split(got, []byte("\n"))
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl []byte
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if !bytes.Equal(wl, gl) {
			return fmt.Sprintf("line %d:\n  reviewed: %s\n  served:   %s", i+1, wl, gl)
		}
	}
	return ""
}

// TestSchemaDescribesEveryComponentAndField: the schema binds (Pulumi's own
// checker accepts it), serves the five components under eventpipe:index,
// and every resource, type and property carries a description, so the
// generated SDKs document every argument.
func TestSchemaDescribesEveryComponentAndField(t *testing.T) {
	var spec schema.PackageSpec
	if err := json.Unmarshal(servedSchema(t), &spec); err != nil {
		t.Fatal(err)
	}
	if _, diags, err := schema.BindSpec(spec, nil, schema.ValidationOptions{}); err != nil || diags.HasErrors() {
		t.Fatalf("Pulumi's schema binder rejects the schema: %v %v", err, diags)
	}
	var tokens []string
	for tok, r := range spec.Resources {
		tokens = append(tokens, tok)
		if !r.IsComponent {
			t.Errorf("%s is not a component", tok)
		}
		if r.Description == "" {
			t.Errorf("%s has no description", tok)
		}
		describedProperties(t, tok+" output", r.Properties)
		describedProperties(t, tok+" input", r.InputProperties)
	}
	slices.Sort(tokens)
	want := []string{"eventpipe:index:Consumer", "eventpipe:index:FirestoreTTL", "eventpipe:index:Pipeline", "eventpipe:index:Project",
		"eventpipe:index:Subscription", "eventpipe:index:Topic"}
	if !slices.Equal(tokens, want) {
		t.Errorf("components = %v, want %v", tokens, want)
	}
	for tok, ty := range spec.Types {
		if ty.Description == "" {
			t.Errorf("type %s has no description", tok)
		}
		describedProperties(t, "type "+tok, ty.Properties)
	}
	required := spec.Resources["eventpipe:index:Pipeline"].RequiredInputs
	slices.Sort(required)
	if want := []string{"consumer", "project", "projectNumber", "subscriptions"}; !slices.Equal(required, want) {
		t.Errorf("Pipeline required inputs = %v, want %v", required, want)
	}
}

func describedProperties(t *testing.T, where string, props map[string]schema.PropertySpec) {
	t.Helper()
	for name, prop := range props {
		if prop.Description == "" {
			t.Errorf("%s %s has no description", where, name)
		}
	}
}
