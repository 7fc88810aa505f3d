package plan

import (
	"encoding/json"
	"fmt"
	"strings"
)

// terraformTypes maps google provider resource types onto the pulumi-gcp tokens the rules
// match, so one rule set covers Pulumi and Terraform estates.
var terraformTypes = map[string]string{
	"google_pubsub_subscription":              "gcp:pubsub/subscription:Subscription",
	"google_pubsub_topic":                     "gcp:pubsub/topic:Topic",
	"google_pubsub_topic_iam_member":          "gcp:pubsub/topicIAMMember:TopicIAMMember",
	"google_pubsub_topic_iam_binding":         "gcp:pubsub/topicIAMBinding:TopicIAMBinding",
	"google_pubsub_subscription_iam_member":   "gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember",
	"google_pubsub_subscription_iam_binding":  "gcp:pubsub/subscriptionIAMBinding:SubscriptionIAMBinding",
	"google_project_iam_member":               "gcp:projects/iAMMember:IAMMember",
	"google_project_iam_binding":              "gcp:projects/iAMBinding:IAMBinding",
	"google_cloud_run_v2_service":             "gcp:cloudrunv2/service:Service",
	"google_cloud_run_v2_service_iam_member":  "gcp:cloudrunv2/serviceIamMember:ServiceIamMember",
	"google_cloud_run_v2_service_iam_binding": "gcp:cloudrunv2/serviceIamBinding:ServiceIamBinding",
	"google_firestore_field":                  "gcp:firestore/field:Field",
}

// singleBlocks are the nested blocks (Terraform lists of at most one object) that
// pulumi-gcp exposes as plain objects, by dotted camelCase path.
var singleBlocks = map[string]bool{
	"deadLetterPolicy": true, "retryPolicy": true, "expirationPolicy": true, "pushConfig": true,
	"pushConfig.oidcToken": true, "pushConfig.noWrapper": true, "bigqueryConfig": true,
	"cloudStorageConfig": true, "template": true, "template.scaling": true, "template.vpcAccess": true,
	"ttlConfig": true, "indexConfig": true, "scaling": true, "condition": true,
	"messageStoragePolicy": true, "schemaSettings": true,
}

// renamed are Terraform attribute names that pulumi-gcp spells differently (plural lists).
var renamed = map[string]string{"env": "envs", "containers.env": "envs", "traffic": "traffics"}

type tfChange struct {
	Actions        []string `json:"actions"`
	After          any      `json:"after"`
	AfterUnknown   any      `json:"after_unknown"`
	AfterSensitive any      `json:"after_sensitive"`
}

type tfResourceChange struct {
	Address       string   `json:"address"`
	ModuleAddress string   `json:"module_address"`
	Mode          string   `json:"mode"`
	Type          string   `json:"type"`
	Index         any      `json:"index"`
	Change        tfChange `json:"change"`
}

type tfModuleConfig struct {
	Resources []struct {
		Address     string                     `json:"address"`
		Expressions map[string]json.RawMessage `json:"expressions"`
	} `json:"resources"`
	ModuleCalls map[string]struct {
		Module tfModuleConfig `json:"module"`
	} `json:"module_calls"`
}

type tfPlan struct {
	FormatVersion   string             `json:"format_version"`
	ResourceChanges []tfResourceChange `json:"resource_changes"`
	PlannedValues   json.RawMessage    `json:"planned_values"`
	Configuration   struct {
		RootModule tfModuleConfig `json:"root_module"`
	} `json:"configuration"`
}

func fromTerraform(doc *tfPlan) (*Plan, error) {
	if doc.ResourceChanges == nil {
		return nil, fmt.Errorf("terraform JSON without resource_changes: run `terraform show -json PLANFILE` on a saved plan, not on state: %w", ErrUnrecognised)
	}
	// instances maps a configuration address (no index) to its planned instances.
	instances := map[string][]tfResourceChange{}
	p := &Plan{Format: FormatTerraform, Complete: true}
	for i, rc := range doc.ResourceChanges {
		if rc.Address == "" || rc.Type == "" {
			return nil, fmt.Errorf("resource_changes[%d]: needs \"address\" and \"type\": %w", i, ErrUnrecognised)
		}
		if rc.Mode == "data" || isDeleteOnly(rc.Change.Actions) {
			continue
		}
		instances[configAddress(rc.Address)] = append(instances[configAddress(rc.Address)], rc)
	}
	refs := map[string]map[string][]string{}
	collectReferences(doc.Configuration.RootModule, "", refs)
	for _, rc := range doc.ResourceChanges {
		if rc.Mode == "data" || isDeleteOnly(rc.Change.Actions) {
			continue
		}
		props, _ := convert(rc.Change.After, rc.Change.AfterUnknown, rc.Change.AfterSensitive, "").(map[string]any)
		if props == nil {
			props = map[string]any{}
		}
		typ := rc.Type
		if t, ok := terraformTypes[typ]; ok {
			typ = t
		}
		r := Resource{URN: rc.Address, Type: typ, Name: rc.Address, Properties: props, Op: strings.Join(rc.Change.Actions, "+")}
		if id, ok := props["id"].(string); ok && id != Unknown {
			r.ID = id
		}
		delete(props, "id")
		for attr, targets := range refs[configAddress(rc.Address)] {
			for _, target := range targets {
				for _, inst := range resolveInstance(instances[target], rc.Index) {
					if r.PropertyDependencies == nil {
						r.PropertyDependencies = map[string][]string{}
					}
					r.PropertyDependencies[attr] = append(r.PropertyDependencies[attr], inst)
					r.Dependencies = append(r.Dependencies, inst)
				}
			}
		}
		p.Resources = append(p.Resources, r)
	}
	return p, nil
}

func isDeleteOnly(actions []string) bool {
	return len(actions) == 1 && actions[0] == "delete"
}

// configAddress strips instance keys: module.a["x"].google_pubsub_topic.t[0] -> module.a.google_pubsub_topic.t.
func configAddress(addr string) string {
	var b strings.Builder
	depth := 0
	for _, r := range addr {
		switch {
		case r == '[':
			depth++
		case r == ']':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// resolveInstance picks the instance a reference means: the only one, or the one with the
// referencing resource's own index (for_each/count pairs). Anything else stays unresolved.
func resolveInstance(insts []tfResourceChange, index any) []string {
	if len(insts) == 1 {
		return []string{insts[0].Address}
	}
	for _, in := range insts {
		if index != nil && fmt.Sprint(in.Index) == fmt.Sprint(index) {
			return []string{in.Address}
		}
	}
	return nil
}

// collectReferences records, for every configured resource, which resources each
// top-level attribute's expression refers to (Terraform's propertyDependencies).
func collectReferences(m tfModuleConfig, prefix string, out map[string]map[string][]string) {
	for _, res := range m.Resources {
		byAttr := map[string][]string{}
		for attr, raw := range res.Expressions {
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				continue
			}
			seen := map[string]bool{}
			walkReferences(v, func(ref string) {
				target := referencedResource(ref, prefix)
				if target != "" && !seen[target] {
					seen[target] = true
					byAttr[camel(attr)] = append(byAttr[camel(attr)], target)
				}
			})
		}
		out[prefix+res.Address] = byAttr
	}
	for name, call := range m.ModuleCalls {
		collectReferences(call.Module, prefix+"module."+name+".", out)
	}
}

func walkReferences(v any, fn func(string)) {
	switch t := v.(type) {
	case map[string]any:
		if refs, ok := t["references"].([]any); ok {
			for _, r := range refs {
				if s, ok := r.(string); ok {
					fn(s)
				}
			}
		}
		for k, e := range t {
			if k != "references" {
				walkReferences(e, fn)
			}
		}
	case []any:
		for _, e := range t {
			walkReferences(e, fn)
		}
	}
}

// referencedResource turns "google_pubsub_topic.dlq.id" into "google_pubsub_topic.dlq";
// variables, locals and data sources give "".
func referencedResource(ref, prefix string) string {
	parts := strings.Split(configAddress(ref), ".")
	if len(parts) < 2 || !strings.HasPrefix(parts[0], "google_") {
		return ""
	}
	return prefix + parts[0] + "." + parts[1]
}

// convert turns a Terraform value into pulumi-gcp's shape: camelCase keys, single nested
// blocks as objects, empty blocks as absent, unknown values as Unknown, sensitive as Secret.
func convert(v, unknown, sensitive any, path string) any {
	if b, ok := unknown.(bool); ok && b {
		return Unknown
	}
	if b, ok := sensitive.(bool); ok && b {
		return Secret
	}
	switch t := v.(type) {
	case map[string]any:
		um, _ := unknown.(map[string]any)
		sm, _ := sensitive.(map[string]any)
		out := make(map[string]any, len(t))
		keys := map[string]bool{}
		for k := range t {
			keys[k] = true
		}
		for k := range um { // attributes unknown at plan time are absent from "after"
			keys[k] = true
		}
		for k := range keys {
			name := camel(k)
			if r, ok := renamed[k]; ok {
				name = r
			}
			child := name
			if path != "" {
				child = path + "." + name
			}
			out[name] = convert(t[k], um[k], sm[k], child)
		}
		return out
	case []any:
		ul, _ := unknown.([]any)
		sl, _ := sensitive.([]any)
		elemPath := path
		if !singleBlocks[path] {
			elemPath = lastSegment(path)
		}
		list := make([]any, len(t))
		for i, e := range t {
			list[i] = convert(e, at(ul, i), at(sl, i), elemPath)
		}
		if singleBlocks[path] {
			if len(list) == 0 {
				return nil
			}
			return list[0]
		}
		return list
	default:
		return v
	}
}

func at(l []any, i int) any {
	if i < len(l) {
		return l[i]
	}
	return nil
}

func lastSegment(path string) string {
	if i := strings.LastIndex(path, "."); i >= 0 {
		return path[i+1:]
	}
	return path
}

// camel converts snake_case to camelCase.
func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}
