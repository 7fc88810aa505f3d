package plan

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/eventpipe/eventpipe/policies/internal/benchgen"
)

// The benchmark plan in the other formats: the same resources as a stack export and as a
// Terraform plan, so every format's parsing is measured and compared on the same data.

// generated returns benchgen's preview of n resources in the given format.
func generated(t testing.TB, format Format, n int) []byte {
	t.Helper()
	data, err := benchgen.Generate(n)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Steps []struct {
			URN      string         `json:"urn"`
			NewState map[string]any `json:"newState"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	var out any
	switch format {
	case FormatPreview:
		return data
	case FormatExport:
		resources := []any{map[string]any{"urn": "urn:pulumi:bench::eventpipe::pulumi:pulumi:Stack::eventpipe-bench", "type": "pulumi:pulumi:Stack", "custom": false}}
		for _, st := range doc.Steps {
			st.NewState["id"] = "projects/bench/" + nameFromURN(st.URN)
			st.NewState["outputs"] = st.NewState["inputs"]
			resources = append(resources, st.NewState)
		}
		out = map[string]any{"version": 3, "deployment": map[string]any{"manifest": map[string]any{"time": "2026-01-01T00:00:00Z"}, "resources": resources}}
	case FormatTerraform:
		addresses := map[string]string{}
		for _, st := range doc.Steps {
			addresses[st.URN] = tfTypeOf(t, st.NewState["type"].(string)) + "." + tfName.ReplaceAllString(nameFromURN(st.URN), "_")
		}
		var changes, config []any
		for _, st := range doc.Steps {
			after, unknown := terraformValue(st.NewState["inputs"].(map[string]any), "")
			changes = append(changes, map[string]any{
				"address": addresses[st.URN], "mode": "managed", "type": tfTypeOf(t, st.NewState["type"].(string)),
				"name": strings.SplitN(addresses[st.URN], ".", 2)[1], "provider_name": "registry.terraform.io/hashicorp/google",
				"change": map[string]any{"actions": []string{"create"}, "before": nil, "after": after, "after_unknown": unknown,
					"before_sensitive": false, "after_sensitive": map[string]any{}},
			})
			exprs := map[string]any{}
			pd, _ := st.NewState["propertyDependencies"].(map[string]any)
			for attr, urns := range pd {
				var refs []string
				for _, u := range urns.([]any) {
					refs = append(refs, addresses[u.(string)]+".id", addresses[u.(string)])
				}
				exprs[snake(attr)] = map[string]any{"references": refs}
			}
			config = append(config, map[string]any{"address": addresses[st.URN], "expressions": exprs})
		}
		out = map[string]any{"format_version": "1.2", "terraform_version": "1.9.8", "planned_values": map[string]any{"root_module": map[string]any{}},
			"resource_changes": changes, "configuration": map[string]any{"root_module": map[string]any{"resources": config}}}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var tfName = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// tfTypeOf is the google provider type pulumiType maps onto typ.
func tfTypeOf(t testing.TB, typ string) string {
	for _, tf := range []string{"google_pubsub_subscription", "google_pubsub_topic", "google_pubsub_topic_iam_member", "google_project_iam_member", "google_cloud_run_v2_service_iam_member"} {
		if pulumiType(tf) == typ {
			return tf
		}
	}
	t.Fatalf("no terraform type for %s", typ)
	return ""
}

// terraformValue turns Pulumi inputs into Terraform's "after" and "after_unknown":
// snake_case attributes, single nested blocks as one-element lists, unknowns moved.
func terraformValue(v any, path string) (after, unknown any) {
	switch t := v.(type) {
	case map[string]any:
		a, u := map[string]any{}, map[string]any{}
		for k, e := range t {
			child := k
			if path != "" {
				child = path + "." + k
			}
			ea, eu := terraformValue(e, child)
			if eu == true {
				u[snake(k)] = true
				continue
			}
			a[snake(k)] = ea
			if eu != nil {
				u[snake(k)] = eu
			}
		}
		if singleBlock(path) {
			return []any{a}, []any{u}
		}
		return a, u
	case string:
		if t == Unknown {
			return nil, true
		}
	}
	return v, nil
}

// snake converts camelCase to snake_case (camel's inverse for these names).
func snake(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsUpper(r) {
			b.WriteByte('_')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

func TestFastPathMatchesGeneralPathOnEveryFormat(t *testing.T) {
	for _, format := range []Format{FormatPreview, FormatExport, FormatTerraform} {
		indented := generated(t, format, 1000)
		var compact bytes.Buffer // as terraform show -json prints it
		if err := json.Compact(&compact, indented); err != nil {
			t.Fatal(err)
		}
		for layout, doc := range map[string][]byte{"indented": indented, "compact": compact.Bytes()} {
			t.Run(string(format)+"/"+layout, func(t *testing.T) {
				fast, ok, general, err := parseBoth(t, string(doc))
				if !ok {
					t.Fatal("the fast path gave up on a well-formed document")
				}
				if err != nil {
					t.Fatal(err)
				}
				if len(fast.Resources) != 1000 || fast.Format != format {
					t.Fatalf("%s with %d resources, want %s with 1000", fast.Format, len(fast.Resources), format)
				}
				sameResult(t, fast, general)
				links := 0
				for _, r := range fast.Resources {
					links += len(r.PropertyDependencies)
				}
				if links == 0 {
					t.Error("no resource has property dependencies: the links were lost")
				}
			})
		}
	}
}
