// Package tfmodel builds, in Go, the rules' model of a Terraform plan (`terraform show -json
// PLANFILE`, Terraform or OpenTofu): exactly the values policies/model*.rego compute for
// one (data.eventpipe.model: resources, complete, removals, problems, project_numbers and
// the expressions named when a link cannot be decided). eventpipe check hands the rules
// this model instead of the plan, because the Rego model of a plan costs more than the
// rules themselves (docs/benchmarks.md); conftest and opa eval users keep the Rego model,
// and the parity tests hold both to the same values on every plan the real CLIs made and
// on generated ones.
package tfmodel

// Key is the input key under which the rules find a model built here
// (input.eventpipe_terraform_model in policies/model.rego).
const Key = "eventpipe_terraform_model"

// unknownValue and secretValue are what the model writes for a value known only after
// apply and for a sensitive one (model.rego's unknown_value and secret_value).
const (
	unknownValue = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
	secretValue  = "[secret]"
)

// IsPlan reports whether doc is what the Rego model reads as a Terraform plan (its format
// "terraform-plan"): not a preview (steps) or stack export (deployment), a string
// format_version, and resource_changes or planned_values.
func IsPlan(doc map[string]any) bool {
	if _, ok := doc["steps"].([]any); ok {
		return false
	}
	if _, ok := doc["deployment"].(map[string]any); ok {
		return false
	}
	if _, ok := doc["format_version"].(string); !ok {
		return false
	}
	_, changes := doc["resource_changes"]
	_, planned := doc["planned_values"]
	return changes || planned
}

// change is one entry of resource_changes, with the fields the model reads.
type change struct {
	raw map[string]any
	// body is raw["change"] (nil when it is not an object).
	body map[string]any
	// address, typ, name and moduleAddress are the entry's strings; ok says whether
	// address, type and name are all strings (the Rego model skips an entry without them).
	address, typ, name, moduleAddress string
	ok                                bool
	// actions is change.actions; actionsOK says whether it is an array of strings, and
	// actionsArray whether it is an array at all.
	actions                 []string
	actionsOK, actionsArray bool
}

// document is a Terraform plan being modelled.
type document struct {
	raw map[string]any
	// changes are resource_changes, in document order.
	changes []*change
	// planned are the changes of managed resources that exist after apply (planned_changes),
	// in document order.
	planned []*change
}

// managed reports whether actions are planned actions after which a managed resource
// exists (model_terraform.rego's managed_actions): every other action (delete, forget,
// read, ...) leaves no planned resource.
func managed(actions []string) bool {
	switch len(actions) {
	case 1:
		return actions[0] == "create" || actions[0] == "update" || actions[0] == "no-op"
	case 2:
		return actions[0] == "delete" && actions[1] == "create" || actions[0] == "create" && actions[1] == "delete"
	}
	return false
}

func newDocument(raw map[string]any) *document {
	d := &document{raw: raw}
	list, _ := raw["resource_changes"].([]any)
	for _, e := range list {
		m, _ := e.(map[string]any)
		c := &change{raw: m}
		c.body, _ = m["change"].(map[string]any)
		var okA, okT, okN bool
		c.address, okA = m["address"].(string)
		c.typ, okT = m["type"].(string)
		c.name, okN = m["name"].(string)
		c.ok = okA && okT && okN
		c.moduleAddress = stringOr(m, "module_address", "")
		if acts, ok := c.body["actions"].([]any); ok {
			c.actionsArray, c.actionsOK = true, true
			for _, a := range acts {
				s, ok := a.(string)
				if !ok {
					c.actionsOK = false
					break
				}
				c.actions = append(c.actions, s)
			}
		}
		d.changes = append(d.changes, c)
		if m != nil && stringOr(m, "mode", "managed") == "managed" && c.actionsOK && managed(c.actions) {
			d.planned = append(d.planned, c)
		}
	}
	return d
}

// stringOr is m[key] when it is a string, def when m has no key; "" (matching nothing)
// for a key of another type, as object.get(m, key, def) == "..." is false then.
func stringOr(m map[string]any, key, def string) string {
	v, ok := m[key]
	if !ok {
		return def
	}
	s, _ := v.(string)
	return s
}
