package eventpipe.model

import rego.v1

# Terraform plans (`terraform show -json PLANFILE`, Terraform or OpenTofu): the google
# provider's resources become the pulumi-gcp resources they are (the same API objects), with
# their values in pulumi-gcp's shape, and the references of the configuration become
# propertyDependencies.

# terraform_types maps the google provider's resource types onto pulumi-gcp's type tokens,
# so one rule set covers Pulumi and Terraform estates. Other types keep their name.
terraform_types := {
	"google_pubsub_subscription": "gcp:pubsub/subscription:Subscription",
	"google_pubsub_topic": "gcp:pubsub/topic:Topic",
	"google_pubsub_topic_iam_member": "gcp:pubsub/topicIAMMember:TopicIAMMember",
	"google_pubsub_topic_iam_binding": "gcp:pubsub/topicIAMBinding:TopicIAMBinding",
	"google_pubsub_topic_iam_policy": "gcp:pubsub/topicIAMPolicy:TopicIAMPolicy",
	"google_pubsub_subscription_iam_member": "gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember",
	"google_pubsub_subscription_iam_binding": "gcp:pubsub/subscriptionIAMBinding:SubscriptionIAMBinding",
	"google_pubsub_subscription_iam_policy": "gcp:pubsub/subscriptionIAMPolicy:SubscriptionIAMPolicy",
	"google_project_iam_member": "gcp:projects/iAMMember:IAMMember",
	"google_project_iam_binding": "gcp:projects/iAMBinding:IAMBinding",
	"google_project_iam_policy": "gcp:projects/iAMPolicy:IAMPolicy",
	"google_cloud_run_v2_service": "gcp:cloudrunv2/service:Service",
	"google_cloud_run_v2_service_iam_member": "gcp:cloudrunv2/serviceIamMember:ServiceIamMember",
	"google_cloud_run_v2_service_iam_binding": "gcp:cloudrunv2/serviceIamBinding:ServiceIamBinding",
	"google_cloud_run_v2_service_iam_policy": "gcp:cloudrunv2/serviceIamPolicy:ServiceIamPolicy",
	"google_firestore_field": "gcp:firestore/field:Field",
	"google_monitoring_alert_policy": "gcp:monitoring/alertPolicy:AlertPolicy",
}

pulumi_type(t) := object.get(terraform_types, t, t)

# managed_actions are the planned actions after which a managed resource exists: every
# other action (delete, forget, create then forget, read, open...) is not a planned resource.
managed_actions := {["create"], ["update"], ["no-op"], ["delete", "create"], ["create", "delete"]}

# removal_actions maps the actions that delete or replace a resource in the cloud.
removal_actions := {["delete"]: "delete", ["delete", "create"]: "replace", ["create", "delete"]: "replace"}

# planned_changes are the resource changes of managed resources that exist after apply.
planned_changes := [rc |
	some rc in object.get(input, "resource_changes", [])
	object.get(rc, "mode", "managed") == "managed"
	managed_actions[rc.change.actions]
]

terraform_resources := [r |
	some rc in planned_changes
	links := object.get(terraform_links, rc.address, no_links)

	# Terraform before 0.15 writes no after_sensitive: nothing is marked sensitive.
	after := object.get(rc.change, "after", null)
	unknown := object.get(rc.change, "after_unknown", false)
	sensitive := object.get(rc.change, "after_sensitive", false)
	r := {
		"urn": rc.address,
		"type": pulumi_type(rc.type),
		"op": concat("+", rc.change.actions),
		"properties": terraform_properties(rc.type, after, unknown, sensitive),
		"dependencies": links.dependencies,
		"propertyDependencies": links.exact,
		"possibleDependencies": links.possible,
	}
]

no_links := {"exact": {}, "possible": {}, "dependencies": []}

terraform_removals := [removal |
	some rc in object.get(input, "resource_changes", [])
	object.get(rc, "mode", "managed") == "managed"
	action := removal_actions[rc.change.actions]
	stateful_types[pulumi_type(rc.type)]
	removal := {
		"urn": rc.address,
		"type": pulumi_type(rc.type),
		"action": action,
		"properties": terraform_properties(rc.type, object.get(rc.change, "before", null), false, object.get(rc.change, "before_sensitive", false)),
	}
]

# terraform_complete holds unless Terraform says the plan is partial: it stopped on an error
# (errored) or deferred changes to a later run (complete false).
terraform_complete if {
	object.get(input, "errored", false) != true
	object.get(input, "complete", true) != false
}

# terraform_problems names each malformed resource change; the common case, every change
# well formed, is confirmed in one pass without a call per change.
terraform_problems := [] if {
	changes := object.get(input, "resource_changes", [])
	count([1 | some rc in changes; is_string(rc.address); is_string(rc.type); is_array(rc.change.actions)]) == count(changes)
} else := [msg |
	some i, rc in object.get(input, "resource_changes", [])
	not valid_change(rc)
	msg := sprintf(`resource_changes[%d]: a resource change needs "address", "type" and "change" with "actions" (%s)`, [i, "is this terraform show -json output?"])
]

valid_change(rc) if {
	is_string(rc.address)
	is_string(rc.type)
	is_array(rc.change.actions)
}

# terraform_project_numbers maps the project_id of each google_project data source read
# while planning (prior_state holds them, at any module depth) to its number.
terraform_project_numbers := {id: n |
	some id in {v.project_id | some v in project_data_values}
	read := {v.number | some v in project_data_values; v.project_id == id}
	count(read) == 1
	some n in read
}

project_data_values := [r.values |
	some m in prior_state_modules
	some r in object.get(m, "resources", [])
	r.mode == "data"
	r.type == "google_project"
	is_string(r.values.project_id)
	is_string(r.values.number)
	r.values.number != ""
]

# prior_state_modules are prior_state's modules, down to max_module_depth (level by
# level: walking the whole state would visit every value of every resource).
prior_state_modules := array.concat(
	array.concat(array.concat(prior_level_0, prior_level_1), array.concat(prior_level_2, prior_level_3)),
	array.concat(array.concat(prior_level_4, prior_level_5), array.concat(prior_level_6, prior_level_7)),
)

prior_level_0 := [object.get(input, ["prior_state", "values", "root_module"], {})]

prior_level_1 := child_level(prior_level_0)

prior_level_2 := child_level(prior_level_1)

prior_level_3 := child_level(prior_level_2)

prior_level_4 := child_level(prior_level_3)

prior_level_5 := child_level(prior_level_4)

prior_level_6 := child_level(prior_level_5)

prior_level_7 := child_level(prior_level_6)

child_level(modules) := [c | some m in modules; some c in object.get(m, "child_modules", [])]

# ---- naming what cannot be resolved ------------------------------------------------------

# terraform_link_expression(address, property) describes, for a finding that cannot be
# decided, the expression a linking property of a planned instance comes from: the
# references the configuration writes in it, or the dynamic block whose content the
# configuration does not show.
terraform_link_expression(address, property) := text if {
	rc := linking_change_by_address[address]
	some attribute in linking_attributes[rc.type]
	camel_case(attribute) == property
	text := attribute_expression_text(rc, attribute)
}

linking_change_by_address := {rc.address: rc | some rc in linking_changes}

attribute_expression_text(rc, attribute) := text if {
	config := config_resources[concat("", [config_paths[object.get(rc, "module_address", "")], rc.type, ".", rc.name])]
	expr := linking_expression(config.expressions, attribute)
	refs := {r | some r in expression_references(expr)}
	count(refs) > 0
	longest := sort({r | some r in refs; not extended(r, refs)})
	text := sprintf("%s = %s", [linked_value_path(attribute), concat(", ", longest)])
} else := sprintf(`dynamic "%s" block, whose content the plan does not show`, [attribute]) if {
	attribute == "dead_letter_policy"
} else := sprintf("%s, which the plan does not show", [attribute])

# extended(r, refs) holds when refs holds a longer traversal of r (Terraform lists each
# shorter step of a reference beside it).
extended(r, refs) if {
	some other in refs
	other != r
	startswith(other, r)
	substring(other, count(r), 1) in {".", "["}
}

linked_value_path("dead_letter_policy") := "dead_letter_policy.dead_letter_topic"

linked_value_path(attribute) := attribute if attribute != "dead_letter_policy"

# ---- module instances ---------------------------------------------------------------------

# planned_modules are the module instances of the planned resources and their ancestors,
# and the instances of the calls without count or for_each below them.
planned_modules := union({resource_modules, single_1, single_2, single_3, single_4, single_5, single_6, single_7})

resource_modules := {""} | {prefix |
	some address in {rc.module_address | some rc in planned_changes}
	segments := module_segments(address)
	some i in numbers.range(1, count(segments))
	prefix := concat(".", [s[0] | some s in array.slice(segments, 0, i)])
}

# single_children(instances) are the instances of the module calls without count or
# for_each in the given module instances: such a call has its one instance whether or not
# it plans a resource (a module that only passes a value through its outputs).
single_children(instances) := {prefixed(mi, concat("", ["module.", name])) |
	some mi in instances
	some name, call in object.get(object.get(module_configs, config_path(mi), {}), "module_calls", {})
	not call.count_expression
	not call.for_each_expression
}

single_1 := single_children(resource_modules)

single_2 := single_children(single_1)

single_3 := single_children(single_2)

single_4 := single_children(single_3)

single_5 := single_children(single_4)

single_6 := single_children(single_5)

single_7 := single_children(single_6)
