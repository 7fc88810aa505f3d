package drift

import (
	"slices"
	"strconv"
	"strings"

	"github.com/eventpipe/eventpipe/audit/inventory"
	"github.com/eventpipe/eventpipe/audit/model"
)

// The non-authoritative IAM grant types a stack declares.
const (
	typeTopicMember        = "gcp:pubsub/topicIAMMember:TopicIAMMember"
	typeSubscriptionMember = "gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember"
	typeServiceMember      = "gcp:cloudrunv2/serviceIamMember:ServiceIamMember"
	typeProjectMember      = "gcp:projects/iAMMember:IAMMember"
)

// compareGrant looks for a declared grant in the live IAM policy of its resource.
func compareGrant(d Resource, in map[string]any, p *inventory.Project) *Difference {
	role, _ := in["role"].(string)
	member, _ := in["member"].(string)
	if role == "" || member == "" || unknownValue(role) || unknownValue(member) {
		return nil
	}
	var resource string
	switch d.Type {
	case typeTopicMember:
		resource = expand(p.ID, in["topic"], inventory.TopicName)
	case typeSubscriptionMember:
		resource = expand(p.ID, in["subscription"], inventory.SubscriptionName)
	case typeServiceMember:
		name, _ := in["name"].(string)
		location, _ := in["location"].(string)
		if strings.Contains(name, "/") {
			resource = name
		} else if name != "" && location != "" {
			resource = inventory.ServiceName(p.ID, location, name)
		}
	case typeProjectMember:
		resource = inventory.ProjectName(p.ID)
	}
	if resource == "" || unknownValue(resource) {
		return nil
	}
	policy, read := p.Policies[resource]
	if !read { // unread, or a resource the audit does not hold (a service it did not read)
		return nil
	}
	if hasBinding(policy, role, member) {
		return nil
	}
	return &Difference{URN: d.URN, Type: d.Type, Live: resource + " " + role + " " + member, Missing: true}
}

// expand makes a full resource name from an ID or full name.
func expand(project string, v any, full func(project, id string) string) string {
	s, _ := v.(string)
	if s == "" || strings.Contains(s, "/") {
		return s
	}
	return full(project, s)
}

// compareService compares the Cloud Run settings the audit reads. Only services a push
// subscription targets are read, so a service not in the model is not reported missing.
func compareService(d Resource, in map[string]any, p *inventory.Project, doc *model.Document) *Difference {
	name, _ := in["name"].(string)
	location, _ := in["location"].(string)
	if name == "" || location == "" || unknownValue(name) {
		return nil
	}
	full := inventory.ServiceName(p.ID, location, name)
	urn, ok := doc.URN(model.TypeService, full)
	if !ok {
		return nil
	}
	live, _ := doc.Resource(urn)
	fields := compareLeaves(flatten(serviceView(in)), flatten(serviceView(normalise(live.Inputs))), settings[model.TypeService], defaults[model.TypeService], p.ID)
	if len(fields) == 0 {
		return nil
	}
	return &Difference{URN: d.URN, Type: d.Type, Live: full, Fields: fields}
}

// serviceView keeps a service's compared settings, its containers keyed by name and their
// environment variables by variable name (so order does not count): ingress,
// invokerIamDisabled, template.serviceAccount, template.containers.NAME.image and
// template.containers.NAME.envs.VAR.
func serviceView(in map[string]any) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"ingress", "invokerIamDisabled"} {
		if v, ok := in[k]; ok {
			out[k] = v
		}
	}
	tmpl, _ := in["template"].(map[string]any)
	if tmpl == nil {
		return out
	}
	view := map[string]any{}
	if sa, ok := tmpl["serviceAccount"]; ok {
		view["serviceAccount"] = sa
	}
	containers := map[string]any{}
	list, _ := tmpl["containers"].([]any)
	for i, c := range list {
		cm, _ := c.(map[string]any)
		key, _ := cm["name"].(string)
		if key == "" {
			key = "#" + strconv.Itoa(i)
		}
		envs := map[string]any{}
		envList, _ := cm["envs"].([]any)
		for _, e := range envList {
			em, _ := e.(map[string]any)
			n, _ := em["name"].(string)
			if v, ok := em["value"]; ok && n != "" {
				envs[n] = v
			}
		}
		containers[key] = map[string]any{"image": cm["image"], "envs": envs}
	}
	view["containers"] = containers
	out["template"] = view
	return out
}

// compareAlertPolicy looks for a declared alert policy by display name and compares
// whether it is enabled.
func compareAlertPolicy(d Resource, in map[string]any, p *inventory.Project, doc *model.Document) *Difference {
	display, _ := in["displayName"].(string)
	if display == "" || unknownValue(display) || !p.AlertPoliciesRead {
		return nil
	}
	for _, ap := range p.AlertPolicies {
		if ap.GetDisplayName() != display {
			continue
		}
		urn, _ := doc.URN(model.TypeAlertPolicy, ap.GetName())
		live, _ := doc.Resource(urn)
		wantOn := in["enabled"] != false
		if isOn, _ := live.Inputs["enabled"].(bool); isOn != wantOn {
			return &Difference{URN: d.URN, Type: d.Type, Live: ap.GetName(), Fields: []Field{{Path: "enabled", Declared: wantOn, Live: isOn}}}
		}
		return nil
	}
	return &Difference{URN: d.URN, Type: d.Type, Live: "alert policy " + display, Missing: true}
}

// compareField looks for a declared Firestore TTL policy among the live ones of the
// databases the audit read.
func compareField(d Resource, in map[string]any, p *inventory.Project) *Difference {
	if _, ttl := in["ttlConfig"].(map[string]any); !ttl || !p.TTLFieldsRead {
		return nil
	}
	collection, _ := in["collection"].(string)
	field, _ := in["field"].(string)
	db, _ := in["database"].(string)
	if db == "" {
		db = "(default)"
	}
	if collection == "" || field == "" || unknownValue(collection) || unknownValue(field) {
		return nil
	}
	if !slices.Contains(inventory.FirestoreDatabases(p.Services), p.ID+"/"+db) {
		return nil // a database the audit did not read
	}
	name := "projects/" + p.ID + "/databases/" + db + "/collectionGroups/" + collection + "/fields/" + field
	for _, f := range p.TTLFields {
		if f.GetName() == name {
			return nil
		}
	}
	return &Difference{URN: d.URN, Type: d.Type, Live: name + " (TTL policy)", Missing: true}
}
