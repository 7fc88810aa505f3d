package benchgen

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// The benchmark plan in the other formats: the same resources as a stack export and as a
// Terraform plan, so every format's reading is measured, and judged, on the same data.

// unknown is what pulumi preview prints for a value known only after apply.
const unknown = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

// GenerateExport returns Generate(n)'s resources as a `pulumi stack export` document.
func GenerateExport(n int) ([]byte, error) {
	steps, err := previewSteps(n)
	if err != nil {
		return nil, err
	}
	resources := []any{map[string]any{"urn": "urn:pulumi:bench::eventpipe::pulumi:pulumi:Stack::eventpipe-bench", "type": "pulumi:pulumi:Stack", "custom": false}}
	for _, st := range steps {
		st.NewState["id"] = "projects/bench/" + st.URN[strings.LastIndex(st.URN, "::")+2:]
		st.NewState["outputs"] = st.NewState["inputs"]
		resources = append(resources, st.NewState)
	}
	return json.MarshalIndent(map[string]any{"version": 3, "deployment": map[string]any{"manifest": map[string]any{"time": "2026-01-01T00:00:00Z"}, "resources": resources}}, "", "  ")
}

// GenerateTerraform returns Generate(n)'s resources as a `terraform show -json` plan
// creating them, the links between them as references in the configuration.
func GenerateTerraform(n int) ([]byte, error) {
	steps, err := previewSteps(n)
	if err != nil {
		return nil, err
	}
	addresses := map[string]string{}
	for _, st := range steps {
		typ, err := terraformType(st.NewState["type"].(string))
		if err != nil {
			return nil, err
		}
		addresses[st.URN] = typ + "." + tfName.ReplaceAllString(st.URN[strings.LastIndex(st.URN, "::")+2:], "_")
	}
	var changes, config []any
	for _, st := range steps {
		address := addresses[st.URN]
		typ, name, _ := strings.Cut(address, ".")
		after, unknowns := terraformValue(st.NewState["inputs"].(map[string]any), "")
		changes = append(changes, map[string]any{
			"address": address, "mode": "managed", "type": typ, "name": name,
			"provider_name": "registry.terraform.io/hashicorp/google",
			"change": map[string]any{"actions": []string{"create"}, "before": nil, "after": after, "after_unknown": unknowns,
				"before_sensitive": false, "after_sensitive": map[string]any{}},
		})
		exprs := map[string]any{}
		pd, _ := st.NewState["propertyDependencies"].(map[string][]string)
		for attr, urns := range pd {
			var refs []string
			for _, u := range urns {
				refs = append(refs, addresses[u]+".id", addresses[u])
			}
			if attr == "deadLetterPolicy" {
				exprs["dead_letter_policy"] = []any{map[string]any{"dead_letter_topic": map[string]any{"references": refs}}}
			} else {
				exprs[snake(attr)] = map[string]any{"references": refs}
			}
		}
		config = append(config, map[string]any{"address": address, "mode": "managed", "type": typ, "name": name, "expressions": exprs})
	}
	return json.MarshalIndent(map[string]any{
		"format_version": "1.2", "terraform_version": "1.9.8",
		"planned_values":   map[string]any{"root_module": map[string]any{}},
		"resource_changes": changes,
		"configuration":    map[string]any{"root_module": map[string]any{"resources": config}},
	}, "", "  ")
}

var tfName = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// terraformTypes maps the pulumi-gcp types Generate uses to the google provider's.
var terraformTypes = map[string]string{
	"gcp:pubsub/subscription:Subscription":             "google_pubsub_subscription",
	"gcp:pubsub/topic:Topic":                           "google_pubsub_topic",
	"gcp:pubsub/topicIAMMember:TopicIAMMember":         "google_pubsub_topic_iam_member",
	"gcp:projects/iAMMember:IAMMember":                 "google_project_iam_member",
	"gcp:cloudrunv2/serviceIamMember:ServiceIamMember": "google_cloud_run_v2_service_iam_member",
}

func terraformType(t string) (string, error) {
	if tf, ok := terraformTypes[t]; ok {
		return tf, nil
	}
	return "", fmt.Errorf("no terraform type for %s", t)
}

// singleBlocks are the nested blocks Terraform prints as a list of one object.
var singleBlocks = map[string]bool{
	"deadLetterPolicy": true, "retryPolicy": true, "expirationPolicy": true, "pushConfig": true, "pushConfig.oidcToken": true,
}

// terraformValue turns Pulumi inputs into Terraform's "after" and "after_unknown":
// snake_case attributes (label keys kept), single nested blocks as one-element lists,
// unknown values moved to after_unknown.
func terraformValue(v any, path string) (after, unknowns any) {
	switch t := v.(type) {
	case map[string]any:
		a, u := map[string]any{}, map[string]any{}
		for k, e := range t {
			key, child := snake(k), k
			if path == "labels" {
				key = k
			}
			if path != "" {
				child = path + "." + k
			}
			ea, eu := terraformValue(e, child)
			if eu == true {
				u[key] = true
				continue
			}
			a[key] = ea
			if eu != nil {
				u[key] = eu
			}
		}
		if singleBlocks[path] {
			return []any{a}, []any{u}
		}
		return a, u
	case string:
		if t == unknown {
			return nil, true
		}
	}
	return v, nil
}

// snake converts camelCase to snake_case.
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
