package tfprovider

import (
	"cmp"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"

	"google.golang.org/api/cloudresourcemanager/v1"
)

// Projects: the google_project data source (the project number modules build the Pub/Sub
// service agent's address from), the google_iam_policy data source (the policy_data of
// authoritative IAM policies), project IAM and, in google-beta, service identities; as
// terraform-provider-google(-beta) v7.45.0 declares them (google/services/resourcemanager:
// data_source_google_project.go over resource_google_project.go,
// data_source_google_iam_policy.go, iam_project.go; google-beta's
// resource_project_service_identity.go).

// projectData is the google_project data source: every field of the google_project
// resource, computed, except project_id, which is optional.
func projectData() *resourceType {
	return &resourceType{
		name: "google_project",
		fields: []field{
			str("project_id", optional),
			str("deletion_policy", computed),
			boolean("auto_create_network", computed),
			str("name", computed),
			str("org_id", computed),
			str("folder_id", computed),
			str("number", computed),
			str("billing_account", computed),
			strMap("labels", computed),
			strMap("terraform_labels", computed),
			strMap("effective_labels", computed),
			strMap("tags", computed),
		},
		read: func(v object, p *providerConfig) error {
			project, err := dataProject(v, "project_id", p)
			if err != nil {
				return err
			}
			v["id"] = "projects/" + project
			v["project_id"] = project
			v["name"] = project
			v["number"] = projectNumber(project)
			v["org_id"] = "123456789012"
			v["folder_id"] = ""
			v["billing_account"] = ""
			v["labels"], v["terraform_labels"], v["effective_labels"] = object{}, object{}, object{}
			return nil
		},
	}
}

// dataProject is the project a data source reads from: its field, or the provider's
// default project, as the real data sources resolve it (tpgresource.GetProject).
func dataProject(v object, field string, p *providerConfig) (string, error) {
	if project := text(v, field); project != "" {
		return project, nil
	}
	if p.project == "" {
		return "", fmt.Errorf("no project value set. `%s` must be set at the resource level, or a default `project` value must be specified on the provider", field)
	}
	return p.project, nil
}

// iamPolicyData is the google_iam_policy data source, which renders its bindings into
// policy_data locally, without calling an API.
func iamPolicyData() *resourceType {
	return &resourceType{
		name: "google_iam_policy",
		fields: []field{
			set("binding", optional,
				str("role", required),
				strSet("members", required),
				list("condition", optional, 1,
					str("expression", required),
					str("title", required),
					str("description", optional),
				),
			),
			str("policy_data", computed),
			set("audit_config", optional,
				str("service", required),
				set("audit_log_configs", required,
					str("log_type", required),
					strSet("exempted_members", optional),
				),
			),
		},
		read: readIAMPolicy,
	}
}

// readIAMPolicy renders policy_data as the real data source does: bindings of the same
// role and condition merged, sorted by role (unconditional first, then by condition),
// members sorted, marshalled as a Resource Manager policy; the id is the policy's hash.
func readIAMPolicy(v object, _ *providerConfig) error {
	merged := map[string]*cloudresourcemanager.Binding{}
	var policy cloudresourcemanager.Policy
	for _, b := range items(v["binding"]) {
		role := text(b, "role")
		key := role
		var cond *cloudresourcemanager.Expr
		if cs := items(b["condition"]); len(cs) == 1 {
			cond = &cloudresourcemanager.Expr{Expression: text(cs[0], "expression"), Title: text(cs[0], "title"), Description: text(cs[0], "description")}
			key += fmt.Sprintf("-[%s]-[%s]-[%s]-[]", cond.Expression, cond.Title, cond.Description)
		}
		if merged[key] == nil {
			merged[key] = &cloudresourcemanager.Binding{Role: role, Condition: cond}
			policy.Bindings = append(policy.Bindings, merged[key])
		}
		merged[key].Members = append(merged[key].Members, stringItems(b["members"])...)
	}
	slices.SortStableFunc(policy.Bindings, compareBindings)
	for _, b := range policy.Bindings {
		slices.Sort(b.Members)
	}
	for _, ac := range items(v["audit_config"]) {
		c := &cloudresourcemanager.AuditConfig{Service: text(ac, "service")}
		for _, lc := range items(ac["audit_log_configs"]) {
			c.AuditLogConfigs = append(c.AuditLogConfigs, &cloudresourcemanager.AuditLogConfig{LogType: text(lc, "log_type"), ExemptedMembers: stringItems(lc["exempted_members"])})
		}
		policy.AuditConfigs = append(policy.AuditConfigs, c)
	}
	data, err := json.Marshal(&policy)
	if err != nil {
		return fmt.Errorf("rendering policy_data: %w", err)
	}
	v["policy_data"] = string(data)
	v["id"] = fmt.Sprint(hashcode(string(data)))
	return nil
}

func compareBindings(a, b *cloudresourcemanager.Binding) int {
	if c := cmp.Compare(a.Role, b.Role); c != 0 {
		return c
	}
	switch {
	case a.Condition == nil && b.Condition == nil:
		return 0
	case a.Condition == nil:
		return -1
	case b.Condition == nil:
		return 1
	}
	return cmp.Or(cmp.Compare(a.Condition.Expression, b.Condition.Expression),
		cmp.Compare(a.Condition.Title, b.Condition.Title),
		cmp.Compare(a.Condition.Description, b.Condition.Description))
}

// hashcode is the SDK's string hash the real data source takes its id from.
func hashcode(s string) int {
	v := int(crc32.ChecksumIEEE([]byte(s)))
	if v < 0 {
		return -v
	}
	return v
}

// items are the objects of a list or set value.
func items(v any) []object {
	var out []object
	list, _ := v.([]any)
	for _, e := range list {
		if o, ok := e.(object); ok {
			out = append(out, o)
		}
	}
	return out
}

// stringItems are the strings of a list or set value.
func stringItems(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func projectIAM() []*resourceType {
	return iamResources("google_project",
		[]field{str("project", required|forceNew)},
		func(v object, _ *providerConfig) string { return text(v, "project") }, false)
}

// projectServiceIdentity is google-beta's google_project_service_identity: the service
// agent of a Google service in a project, known only once created.
func projectServiceIdentity() *resourceType {
	return &resourceType{
		name: "google_project_service_identity",
		fields: []field{
			str("service", required|forceNew),
			str("project", optional|computed|forceNew),
			str("email", computed),
			str("member", computed),
		},
		timeouts: []string{"create", "read", "delete"},
		project:  true,
		id: func(v object) string {
			return fmt.Sprintf("projects/%s/services/%s", text(v, "project"), text(v, "service"))
		},
		created: func(v object, _ *providerConfig) {
			agent := strings.TrimSuffix(text(v, "service"), ".googleapis.com")
			email := fmt.Sprintf("service-%s@gcp-sa-%s.iam.gserviceaccount.com", projectNumber(text(v, "project")), agent)
			setUnknown(v, "email", email)
			setUnknown(v, "member", "serviceAccount:"+email)
		},
	}
}
