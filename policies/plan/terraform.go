package plan

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// pulumiType maps a google provider resource type onto the pulumi-gcp token the rules
// match, so one rule set covers Pulumi and Terraform estates. Other types stay as they are.
func pulumiType(tf string) string {
	switch tf {
	case "google_pubsub_subscription":
		return "gcp:pubsub/subscription:Subscription"
	case "google_pubsub_topic":
		return "gcp:pubsub/topic:Topic"
	case "google_pubsub_topic_iam_member":
		return "gcp:pubsub/topicIAMMember:TopicIAMMember"
	case "google_pubsub_topic_iam_binding":
		return "gcp:pubsub/topicIAMBinding:TopicIAMBinding"
	case "google_pubsub_subscription_iam_member":
		return "gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember"
	case "google_pubsub_subscription_iam_binding":
		return "gcp:pubsub/subscriptionIAMBinding:SubscriptionIAMBinding"
	case "google_project_iam_member":
		return "gcp:projects/iAMMember:IAMMember"
	case "google_project_iam_binding":
		return "gcp:projects/iAMBinding:IAMBinding"
	case "google_cloud_run_v2_service":
		return "gcp:cloudrunv2/service:Service"
	case "google_cloud_run_v2_service_iam_member":
		return "gcp:cloudrunv2/serviceIamMember:ServiceIamMember"
	case "google_cloud_run_v2_service_iam_binding":
		return "gcp:cloudrunv2/serviceIamBinding:ServiceIamBinding"
	case "google_firestore_field":
		return "gcp:firestore/field:Field"
	}
	return tf
}

// singleBlock reports whether the nested block at a dotted camelCase path is a Terraform
// list of at most one object that pulumi-gcp exposes as a plain object.
func singleBlock(path string) bool {
	switch path {
	case "deadLetterPolicy", "retryPolicy", "expirationPolicy", "pushConfig", "pushConfig.oidcToken",
		"pushConfig.noWrapper", "bigqueryConfig", "cloudStorageConfig", "template", "template.scaling",
		"template.vpcAccess", "ttlConfig", "indexConfig", "scaling", "condition", "messageStoragePolicy",
		"schemaSettings":
		return true
	}
	return false
}

// mapAttribute reports whether the attribute at a dotted camelCase path is a map (of
// user-chosen keys, such as label names), whose keys pulumi-gcp keeps as they are.
func mapAttribute(path string) bool {
	switch lastSegment(path) {
	case "labels", "effectiveLabels", "terraformLabels", "pulumiLabels", "annotations", "effectiveAnnotations", "attributes", "limits":
		return true
	}
	return false
}

// pulumiName is the pulumi-gcp name of a Terraform attribute: camelCase, with the plural
// names pulumi-gcp gives repeated blocks.
func pulumiName(attr string) string {
	switch attr {
	case "env":
		return "envs"
	case "traffic":
		return "traffics"
	}
	return camel(attr)
}

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
	Resources   []tfConfigResource `json:"resources"`
	ModuleCalls map[string]struct {
		Module tfModuleConfig `json:"module"`
	} `json:"module_calls"`
}

// tfConfigResource is a resource of a module's configuration: its attributes'
// expressions, where the references to other resources are.
type tfConfigResource struct {
	Address     string                     `json:"address"`
	Expressions map[string]json.RawMessage `json:"expressions"`
}

type tfPlan struct {
	FormatVersion   string             `json:"format_version"`
	ResourceChanges []tfResourceChange `json:"resource_changes"`
	PlannedValues   json.RawMessage    `json:"planned_values"`
	Configuration   struct {
		RootModule tfModuleConfig `json:"root_module"`
	} `json:"configuration"`
}

func fromTerraform(doc *tfPlan) (*Plan, []map[string]any, error) {
	if doc.ResourceChanges == nil {
		return nil, nil, fmt.Errorf("terraform JSON without resource_changes: run `terraform show -json PLANFILE` on a saved plan, not on state: %w", ErrUnrecognised)
	}
	p := &Plan{Format: FormatTerraform, Complete: true}
	var (
		props []map[string]any
		kept  []*tfResourceChange
	)
	for i := range doc.ResourceChanges {
		rc := &doc.ResourceChanges[i]
		if err := checkChange(rc, i); err != nil {
			return nil, nil, err
		}
		if !planned(rc) {
			continue
		}
		r, rp := tfResource(rc)
		p.Resources = append(p.Resources, r)
		props = append(props, rp)
		kept = append(kept, rc)
	}
	linkTerraform(p.Resources, kept, collectReferences(doc.Configuration.RootModule))
	return p, props, nil
}

// checkChange rejects the i-th resource change if it lacks its address or type.
func checkChange(rc *tfResourceChange, i int) error {
	if rc.Address == "" || rc.Type == "" {
		return fmt.Errorf("resource_changes[%d]: needs \"address\" and \"type\": %w", i, ErrUnrecognised)
	}
	return nil
}

// planned reports whether a resource change leaves a managed resource in place.
func planned(rc *tfResourceChange) bool {
	return rc.Mode != "data" && !isDeleteOnly(rc.Change.Actions)
}

// tfResource returns the resource a change plans (without its links, see linkTerraform)
// and its properties in pulumi-gcp's shape.
func tfResource(rc *tfResourceChange) (Resource, map[string]any) {
	props, _ := convert(rc.Change.After, rc.Change.AfterUnknown, rc.Change.AfterSensitive, "").(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	r := Resource{URN: rc.Address, Type: pulumiType(rc.Type), Name: rc.Address, Op: strings.Join(rc.Change.Actions, "+")}
	if id, ok := props["id"].(string); ok && id != Unknown {
		r.ID = id
	}
	delete(props, "id")
	return r, props
}

// linkTerraform sets the dependencies of the resources rs, planned by the changes kept
// (rs[i] by kept[i]), from the references of the configuration (see collectReferences):
// Terraform's propertyDependencies, in attribute order.
func linkTerraform(rs []Resource, kept []*tfResourceChange, refs map[string]map[string][]string) {
	// instances maps a configuration address (no index) to its planned instances.
	instances := map[string][]*tfResourceChange{}
	for _, rc := range kept {
		instances[configAddress(rc.Address)] = append(instances[configAddress(rc.Address)], rc)
	}
	for i, rc := range kept {
		r := &rs[i]
		byAttr := refs[configAddress(rc.Address)]
		for _, attr := range slices.Sorted(maps.Keys(byAttr)) {
			for _, target := range byAttr[attr] {
				for _, inst := range resolveInstance(instances[target], rc.Index) {
					if r.PropertyDependencies == nil {
						r.PropertyDependencies = map[string][]string{}
					}
					r.PropertyDependencies[attr] = append(r.PropertyDependencies[attr], inst)
					r.Dependencies = append(r.Dependencies, inst)
				}
			}
		}
	}
}

func isDeleteOnly(actions []string) bool {
	return len(actions) == 1 && actions[0] == "delete"
}

// configAddress strips instance keys: module.a["x"].google_pubsub_topic.t[0] -> module.a.google_pubsub_topic.t.
func configAddress(addr string) string {
	if !strings.Contains(addr, "[") {
		return addr
	}
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
func resolveInstance(insts []*tfResourceChange, index any) []string {
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

// collectReferences returns, for every configured resource (by configuration address),
// which resources each top-level attribute's expression refers to (Terraform's
// propertyDependencies). The resources are examined on every processor at once.
func collectReferences(root tfModuleConfig) map[string]map[string][]string {
	type configured struct {
		prefix string
		res    *tfConfigResource
	}
	var all []configured
	var walk func(m *tfModuleConfig, prefix string)
	walk = func(m *tfModuleConfig, prefix string) {
		for i := range m.Resources {
			all = append(all, configured{prefix, &m.Resources[i]})
		}
		for _, name := range slices.Sorted(maps.Keys(m.ModuleCalls)) {
			call := m.ModuleCalls[name]
			walk(&call.Module, prefix+"module."+name+".")
		}
	}
	walk(&root, "")
	byAttrs := make([]map[string][]string, len(all))
	eachShard(len(all), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			byAttrs[i] = references(all[i].res, all[i].prefix)
		}
	})
	out := make(map[string]map[string][]string, len(all))
	for i, c := range all {
		out[c.prefix+c.res.Address] = byAttrs[i]
	}
	return out
}

// references maps each attribute of a configured resource in module prefix to the
// resources its expression refers to.
func references(res *tfConfigResource, prefix string) map[string][]string {
	byAttr := map[string][]string{}
	for _, attr := range slices.Sorted(maps.Keys(res.Expressions)) {
		var v any
		if err := json.Unmarshal(res.Expressions[attr], &v); err != nil {
			continue
		}
		addReferences(byAttr, attr, prefix, func(fn func(string)) { walkReferences(v, fn) })
	}
	return byAttr
}

// addReferences records in byAttr the resources that attribute attr's expression, in
// module prefix, refers to: walk calls its argument with each reference.
func addReferences(byAttr map[string][]string, attr, prefix string, walk func(func(string))) {
	seen := map[string]bool{}
	walk(func(ref string) {
		target := referencedResource(ref, prefix)
		if target != "" && !seen[target] {
			seen[target] = true
			byAttr[camel(attr)] = append(byAttr[camel(attr)], target)
		}
	})
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
			name := pulumiName(k)
			if mapAttribute(path) {
				name = k
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
		if !singleBlock(path) {
			elemPath = lastSegment(path)
		}
		list := make([]any, len(t))
		for i, e := range t {
			list[i] = convert(e, at(ul, i), at(sl, i), elemPath)
		}
		if singleBlock(path) {
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
	if !strings.Contains(s, "_") {
		return s
	}
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}
