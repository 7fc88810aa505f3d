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
	links := object.get(terraform_links, rc.address, {})
	r := {
		"urn": rc.address,
		"type": pulumi_type(rc.type),
		"op": concat("+", rc.change.actions),
		"properties": terraform_properties(rc.change.after, rc.change.after_unknown, rc.change.after_sensitive),
		"dependencies": sort({a | some targets in links; some a in targets}),
		"propertyDependencies": links,
	}
]

terraform_removals := [removal |
	some rc in object.get(input, "resource_changes", [])
	object.get(rc, "mode", "managed") == "managed"
	action := removal_actions[rc.change.actions]
	stateful_types[pulumi_type(rc.type)]
	removal := {
		"urn": rc.address,
		"type": pulumi_type(rc.type),
		"action": action,
		"properties": terraform_properties(rc.change.before, false, object.get(rc.change, "before_sensitive", false)),
	}
]

# terraform_complete holds unless Terraform says the plan is partial: it stopped on an error
# (errored) or deferred changes to a later run (complete false).
terraform_complete if {
	object.get(input, "errored", false) != true
	object.get(input, "complete", true) != false
}

terraform_problems := [msg |
	some i, rc in object.get(input, "resource_changes", [])
	not valid_change(rc)
	msg := sprintf("resource_changes[%d]: a resource change needs \"address\", \"type\" and \"change\" with \"actions\" (is this terraform show -json output?)", [i])
]

valid_change(rc) if {
	is_string(rc.address)
	is_string(rc.type)
	is_array(rc.change.actions)
}

# ---- values ------------------------------------------------------------------------------
# terraform_properties converts a planned value to pulumi-gcp's shape: camelCase attribute
# names (the names of map attributes such as labels stay as they are), single nested blocks
# (lists of at most one object) as objects, empty ones absent, unknown values (after_unknown)
# as unknown_value and sensitive ones as secret_value. The id is not an input. Rego has no
# recursion, so the conversion is unrolled to max_value_depth nested objects and lists;
# anything deeper becomes unknown_value, on which no rule decides.

max_value_depth := 8

terraform_properties(after, unknown, sensitive) := object.remove(v, ["id"]) if {
	v := tf_value_0(after, unknown, sensitive, "")
	is_object(v)
} else := {}

# single_blocks are the nested blocks (paths of pulumi names) that pulumi-gcp exposes as
# one object rather than a list.
single_blocks := {
	"deadLetterPolicy", "retryPolicy", "expirationPolicy", "pushConfig", "pushConfig.oidcToken",
	"pushConfig.noWrapper", "bigqueryConfig", "cloudStorageConfig", "cloudStorageConfig.avroConfig",
	"messageStoragePolicy", "schemaSettings", "ingestionDataSourceSettings",
	"template", "template.scaling", "template.vpcAccess", "scaling", "containers.resources",
	"containers.livenessProbe", "containers.startupProbe", "envs.valueSource", "valueSource.secretKeyRef",
	"ttlConfig", "indexConfig", "condition", "binaryAuthorization",
	"conditions.conditionThreshold", "conditions.conditionAbsent", "conditions.conditionMatchedLog",
	"conditions.conditionMonitoringQueryLanguage", "conditions.conditionPrometheusQueryLanguage",
	"conditionThreshold.trigger", "conditionAbsent.trigger", "documentation", "alertStrategy",
	"alertStrategy.notificationRateLimit",
}

# map_attributes are the attributes whose keys are user data (label names), kept as they are.
map_attributes := {
	"labels", "effectiveLabels", "terraformLabels", "pulumiLabels", "annotations",
	"effectiveAnnotations", "attributes", "limits", "userLabels",
}

# renamed_attributes are the attributes pulumi-gcp names differently from Terraform, beyond
# camelCase: repeated blocks get plural names.
renamed_attributes := {"env": "envs", "traffic": "traffics"}

tf_name(path, key) := key if {
	map_attributes[last_segment(path, ".")]
} else := renamed_attributes[key] if {
	renamed_attributes[key]
} else := camel_case(key)

camel_case(s) := s if {
	not contains(s, "_")
} else := concat("", [parts[0], concat("", [capitalised(p) | some p in array.slice(parts, 1, count(parts))])]) if {
	parts := split(s, "_")
}

capitalised(p) := concat("", [upper(substring(p, 0, 1)), substring(p, 1, -1)])

tf_child(path, name) := name if path == "" else := concat(".", [path, name])

# tf_element_path is the path the elements of a repeated block are known by: its name.
tf_element_path(path) := last_segment(path, ".")

tf_keys(v, unknown) := object.keys(v) | {k | is_object(unknown); some k, x in unknown; x == true}

tf_at(x, k) := x[k] if {
	is_object(x)
} else := x[k] if {
	is_array(x)
	k < count(x)
} else := null

# tf_leaf holds when a value is converted without looking inside: unknown, sensitive or a
# scalar. tf_leaf_value is what it becomes.
tf_leaf(v, unknown, sensitive) if unknown == true

tf_leaf(v, unknown, sensitive) if sensitive == true

tf_leaf(v, unknown, sensitive) if {
	not is_object(v)
	not is_array(v)
}

tf_leaf_value(v, unknown, sensitive) := unknown_value if {
	unknown == true
} else := secret_value if {
	sensitive == true
} else := v

# Each tf_value_N converts one level and hands the next to tf_value_N+1.

tf_value_0(v, u, s, p) := tf_leaf_value(v, u, s) if {
	tf_leaf(v, u, s)
} else := {n: tf_value_1(tf_at(v, k), tf_at(u, k), tf_at(s, k), tf_child(p, n)) | some k in tf_keys(v, u); n := tf_name(p, k)} if {
	is_object(v)
} else := tf_value_1(tf_at(v, 0), tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_1(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_1(v, u, s, p) := tf_leaf_value(v, u, s) if {
	tf_leaf(v, u, s)
} else := {n: tf_value_2(tf_at(v, k), tf_at(u, k), tf_at(s, k), tf_child(p, n)) | some k in tf_keys(v, u); n := tf_name(p, k)} if {
	is_object(v)
} else := tf_value_2(tf_at(v, 0), tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_2(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_2(v, u, s, p) := tf_leaf_value(v, u, s) if {
	tf_leaf(v, u, s)
} else := {n: tf_value_3(tf_at(v, k), tf_at(u, k), tf_at(s, k), tf_child(p, n)) | some k in tf_keys(v, u); n := tf_name(p, k)} if {
	is_object(v)
} else := tf_value_3(tf_at(v, 0), tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_3(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_3(v, u, s, p) := tf_leaf_value(v, u, s) if {
	tf_leaf(v, u, s)
} else := {n: tf_value_4(tf_at(v, k), tf_at(u, k), tf_at(s, k), tf_child(p, n)) | some k in tf_keys(v, u); n := tf_name(p, k)} if {
	is_object(v)
} else := tf_value_4(tf_at(v, 0), tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_4(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_4(v, u, s, p) := tf_leaf_value(v, u, s) if {
	tf_leaf(v, u, s)
} else := {n: tf_value_5(tf_at(v, k), tf_at(u, k), tf_at(s, k), tf_child(p, n)) | some k in tf_keys(v, u); n := tf_name(p, k)} if {
	is_object(v)
} else := tf_value_5(tf_at(v, 0), tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_5(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_5(v, u, s, p) := tf_leaf_value(v, u, s) if {
	tf_leaf(v, u, s)
} else := {n: tf_value_6(tf_at(v, k), tf_at(u, k), tf_at(s, k), tf_child(p, n)) | some k in tf_keys(v, u); n := tf_name(p, k)} if {
	is_object(v)
} else := tf_value_6(tf_at(v, 0), tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_6(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_6(v, u, s, p) := tf_leaf_value(v, u, s) if {
	tf_leaf(v, u, s)
} else := {n: tf_value_7(tf_at(v, k), tf_at(u, k), tf_at(s, k), tf_child(p, n)) | some k in tf_keys(v, u); n := tf_name(p, k)} if {
	is_object(v)
} else := tf_value_7(tf_at(v, 0), tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_7(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

# tf_value_7 is the last level (max_value_depth): containers below it are not shown.
tf_value_7(v, u, s, p) := tf_leaf_value(v, u, s) if {
	tf_leaf(v, u, s)
} else := unknown_value

# ---- references --------------------------------------------------------------------------
# A resource's attribute refers to other resources through the configuration's expressions:
# directly, or through module variables and outputs, at any module depth, for each module
# instance (count/for_each) apart. The references form a graph: each attribute, variable,
# output and for_each expression of a module instance points at what its expression names,
# and graph.reachable follows it to the resource instances at its ends. An attribute gets
# propertyDependencies only when every path ends at a planned resource instance: a path
# through a local value (the plan does not show locals), a resource outside the plan, a
# reference this model cannot read, a constant or a root variable leaves the attribute to
# its planned value, which the rules resolve by name when it is known. Several instances at
# the ends (a for_each resource indexed by a key the plan cannot show) are kept as the one
# of them it may be, never as a certain link.

# linking_attributes are the attributes by which the rules link resources.
linking_attributes := {"topic", "dead_letter_policy", "subscription"}

# max_module_depth is how deep module calls are followed; references through deeper
# modules are unknown.
max_module_depth := 8

root_config := object.get(object.get(input, "configuration", {}), "root_module", {})

# module_level(configs) maps the config path ("module.a.module.b.") of each module called
# by the modules in configs to its configuration.
module_level(configs) := {concat("", [path, "module.", name, "."]): object.get(call, "module", {}) |
	some path, config in configs
	some name, call in object.get(config, "module_calls", {})
}

module_configs := object.union_n([configs_0, configs_1, configs_2, configs_3, configs_4, configs_5, configs_6, configs_7])

configs_0 := {"": root_config}

configs_1 := module_level(configs_0)

configs_2 := module_level(configs_1)

configs_3 := module_level(configs_2)

configs_4 := module_level(configs_3)

configs_5 := module_level(configs_4)

configs_6 := module_level(configs_5)

configs_7 := module_level(configs_6)

# module_calls maps each module's config path to the call that instantiates it.
module_calls := {concat("", [path, "module.", name, "."]): call |
	some path, config in module_configs
	some name, call in object.get(config, "module_calls", {})
}

# config_resources maps config path + resource address to the resource's configuration.
config_resources := {concat("", [path, r.address]): r |
	some path, config in module_configs
	some r in object.get(config, "resources", [])
}

# instance_key_pattern matches an instance key as addresses print it: ["key"] or [0].
instance_key_pattern := `\[(?:"(?:[^"\\]|\\.)*"|[0-9]+)\]`

module_segment_pattern := concat("", [`module\.([A-Za-z0-9_-]+)(`, instance_key_pattern, `)?`])

# module_segments splits a module instance address into [segment, name, key] triples.
module_segments(mi) := regex.find_all_string_submatch_n(module_segment_pattern, mi, -1)

# config_path is the config path of a module instance: its module names without keys.
config_path(mi) := concat("", [concat("", ["module.", s[1], "."]) | some s in module_segments(mi)])

# planned_modules are the module instances of the planned resources and their ancestors.
planned_modules := {prefix |
	some rc in planned_changes
	segments := module_segments(object.get(rc, "module_address", ""))
	some i in numbers.range(0, count(segments))
	prefix := concat(".", [s[0] | some s in array.slice(segments, 0, i)])
}

# instances maps module instance + "|" + resource address (without key) to its planned
# instances' addresses.
instances := {group: addresses |
	some group in {g | some g in instance_groups}
	addresses := [a | some a, g in instance_groups; g == group]
}

instance_groups := {rc.address: concat("|", [object.get(rc, "module_address", ""), concat(".", [rc.type, rc.name])]) | some rc in planned_changes}

# child_modules maps module instance + "|" + call name to the instances of that call.
child_modules := {group: children |
	some group in {g | some g in child_groups}
	children := [c | some c, g in child_groups; g == group]
}

child_groups := {mi: concat("|", [parent_module(mi), segments[count(segments) - 1][1]]) |
	some mi in planned_modules
	mi != ""
	segments := module_segments(mi)
}

parent_module(mi) := concat(".", [s[0] | some s in array.slice(segments, 0, count(segments) - 1)]) if {
	segments := module_segments(mi)
}

# prefixed joins a module instance and an address within it.
prefixed(mi, address) := address if mi == "" else := concat(".", [mi, address])

# expression_references lists every reference in an expression, nested blocks included.
expression_references(expr) := [r |
	walk(expr, [path, refs])
	count(path) > 0
	path[count(path) - 1] == "references"
	is_array(refs)
	some r in refs
]

# reserved_words start references that do not name a resource.
reserved_words := {"var", "local", "module", "data", "each", "count", "path", "terraform", "self", "ephemeral", "resource"}

name_pattern := `[A-Za-z_][A-Za-z0-9_-]*`

resource_reference_pattern := concat("", [`^(`, name_pattern, `)\.(`, name_pattern, `)(`, instance_key_pattern, `)?$`])

module_reference_pattern := concat("", [`^module\.(`, name_pattern, `)(`, instance_key_pattern, `)?(?:\.(`, name_pattern, `))?$`])

variable_reference_pattern := concat("", [`^var\.(`, name_pattern, `)$`])

# parsed_reference describes one entry of an expression's references. Terraform lists, for
# each reference, the whole traversal, each shorter step of it, the referenced object
# (the subject) and, for an instance, the resource or module call without its key: only
# the subjects (and those extra entries, counted away) are read here.
parsed_reference(e) := {"kind": "resource", "resource": concat(".", [m[1], m[2]]), "key": m[3]} if {
	m := regex.find_all_string_submatch_n(resource_reference_pattern, e, 1)[0]
	not reserved_words[m[1]]
} else := {"kind": "module", "call": m[1], "key": m[2], "output": m[3]} if {
	m := regex.find_all_string_submatch_n(module_reference_pattern, e, 1)[0]
} else := {"kind": "variable", "name": m[1]} if {
	m := regex.find_all_string_submatch_n(variable_reference_pattern, e, 1)[0]
} else := {"kind": "unknown"} if {
	some prefix in {"local.", "ephemeral.", "resource."}
	startswith(e, prefix)
} else := {"kind": "constant"} if {
	startswith(e, "data.")
} else := {"kind": "each"} if {
	e == "each.value"
} else := {"kind": "none"}

# reference_nodes is the set of graph nodes an expression's references lead to from module
# instance mi; each_node is the node of the for_each expression each.value stands for.
reference_nodes(refs, mi, each_node) := ((resource_nodes(parsed, mi) | module_nodes(parsed, mi)) | variable_nodes(parsed, mi)) | other_nodes(parsed, each_node) if {
	parsed := [parsed_reference(e) | some e in refs]
}

# resource_nodes: a keyed reference names its instance; the unkeyed entries beyond those
# that keyed references add name the whole resource (or an index the plan cannot show):
# every instance of it.
resource_nodes(parsed, mi) := {node |
	some resource in {p.resource | some p in parsed; p.kind == "resource"}
	keyed := [p.key | some p in parsed; p.kind == "resource"; p.resource == resource; p.key != ""]
	whole := count([p | some p in parsed; p.kind == "resource"; p.resource == resource; p.key == ""]) - count(keyed)
	some node in resource_targets(mi, resource, keyed, whole)
}

resource_targets(mi, resource, keyed, whole) := {instance_node(mi, resource, key) | some key in keyed} | {node |
	whole > 0
	some node in all_instances(mi, resource)
}

instance_node(mi, resource, key) := concat("", ["r:", address]) if {
	address := prefixed(mi, concat("", [resource, key]))
	some a in object.get(instances, concat("|", [mi, resource]), [])
	a == address
} else := "U"

all_instances(mi, resource) := {concat("", ["r:", a]) | some a in addresses} if {
	addresses := instances[concat("|", [mi, resource])]
} else := {"U"}

# module_nodes: references to module outputs lead to the output of the named instance (or
# every instance, for an index the plan cannot show); a reference to a whole module
# instance, to all of its outputs.
module_nodes(parsed, mi) := {node |
	some call in {p.call | some p in parsed; p.kind == "module"}
	refs := [p | some p in parsed; p.kind == "module"; p.call == call]
	some node in module_targets(mi, call, refs)
}

module_targets(mi, call, refs) := ((keyed_outputs | plain_outputs) | whole_instances) | whole_module if {
	children := object.get(child_modules, concat("|", [mi, call]), [])
	outputs := [p | some p in refs; p.output != ""]
	keyed_outputs := {output_node(prefixed(mi, concat("", ["module.", call, p.key])), p.output) | some p in outputs; p.key != ""}
	plain_outputs := {output_node(child, p.output) | some p in outputs; p.key == ""; some child in children}
	instance_refs := {key: n |
		some key in {p.key | some p in refs; p.key != ""; p.output == ""}
		n := count([p | some p in refs; p.key == key; p.output == ""]) - count([p | some p in outputs; p.key == key])
		n > 0
	}
	whole_instances := {node |
		some key, _ in instance_refs
		some node in all_outputs(prefixed(mi, concat("", ["module.", call, key])))
	}
	plain := count([p | some p in refs; p.key == ""; p.output == ""]) - count([p | some p in outputs; p.key == ""])
	whole_module := {node |
		plain - sum([n | some n in instance_refs]) > 0
		some child in children
		some node in all_outputs(child)
	}
}

output_node(child, output) := concat("", ["o:", child, "|", output])

all_outputs(child) := {output_node(child, name) | some name, _ in object.get(module_configs[config_path(child)], "outputs", {})}

variable_nodes(parsed, mi) := {variable_node(mi, p.name) | some p in parsed; p.kind == "variable"}

# variable_node: a root variable's value is in the plan (a constant to the graph).
variable_node(mi, name) := "C" if mi == "" else := concat("", ["v:", mi, "|", name])

other_nodes(parsed, each_node) := {node |
	some p in parsed
	p.kind in {"unknown", "constant", "each"}
	node := other_node(p.kind, each_node)
}

other_node("unknown", _) := "U"

other_node("constant", _) := "C"

other_node("each", each_node) := each_node if each_node != "" else := "U"

# expression_nodes are the nodes an expression leads to, or C for an expression without
# references (a constant).
expression_nodes(expr, mi, each_node) := nodes if {
	nodes := reference_nodes(expression_references(expr), mi, each_node)
	count(nodes) > 0
} else := {"C"}

# each_node_of is the node of the for_each expression of a resource or module call config
# in module instance mi, or "" when it has none.
each_node_of(mi, owner, config) := concat("", ["f:", mi, "|", owner]) if {
	config.for_each_expression
} else := ""

# ---- the graph ---------------------------------------------------------------------------

# attribute_edges: each linking attribute of each planned resource instance.
attribute_edges := {node: nodes |
	some rc in planned_changes
	mi := object.get(rc, "module_address", "")
	resource := concat(".", [rc.type, rc.name])
	config := config_resources[concat("", [config_path(mi), resource])]
	some attribute, expr in object.get(config, "expressions", {})
	linking_attributes[attribute]
	node := concat("", ["a:", rc.address, "|", attribute])
	nodes := expression_nodes(expr, mi, each_node_of(mi, resource, config))
}

# each_edges: the for_each expressions of planned resources and module calls.
each_edges := object.union(resource_each_edges, module_each_edges)

resource_each_edges := {node: nodes |
	some rc in planned_changes
	mi := object.get(rc, "module_address", "")
	resource := concat(".", [rc.type, rc.name])
	config := config_resources[concat("", [config_path(mi), resource])]
	config.for_each_expression
	node := each_node_of(mi, resource, config)
	nodes := expression_nodes(config.for_each_expression, mi, "")
}

module_each_edges := {node: nodes |
	some mi in planned_modules
	mi != ""
	call := module_calls[config_path(mi)]
	call.for_each_expression
	parent := parent_module(mi)
	node := each_node_of(parent, concat("", ["module.", module_segments(mi)[count(module_segments(mi)) - 1][1]]), call)
	nodes := expression_nodes(call.for_each_expression, parent, "")
}

# variable_edges: a module instance's variable is what its call passes, in the caller's
# module instance; the default (a constant) when the call passes nothing.
variable_edges := {node: nodes |
	some mi in planned_modules
	mi != ""
	call := module_calls[config_path(mi)]
	parent := parent_module(mi)
	owner := concat("", ["module.", module_segments(mi)[count(module_segments(mi)) - 1][1]])
	some name in object.keys(object.get(call, "expressions", {})) | object.keys(object.get(object.get(call, "module", {}), "variables", {}))
	node := concat("", ["v:", mi, "|", name])
	nodes := variable_value_nodes(call, name, parent, each_node_of(parent, owner, call))
}

variable_value_nodes(call, name, parent, each_node) := expression_nodes(call.expressions[name], parent, each_node) if {
	call.expressions[name]
} else := {"C"}

# output_edges: a module instance's output is its expression, in that instance.
output_edges := {node: nodes |
	some mi in planned_modules
	mi != ""
	some name, output in object.get(module_configs[config_path(mi)], "outputs", {})
	node := output_node(mi, name)
	nodes := expression_nodes(object.get(output, "expression", {}), mi, "")
}

# reference_graph holds every node: resource instances (the ends), the constant and unknown
# ends, and each node an expression names that the plan does not describe (an output of a
# module instance without resources, say), which leads to the unknown end.
reference_graph := object.union_n([expression_edges, instance_nodes, {"C": set(), "U": set()}, undescribed_nodes])

expression_edges := object.union_n([attribute_edges, each_edges, variable_edges, output_edges])

instance_nodes := {concat("", ["r:", rc.address]): set() | some rc in planned_changes}

undescribed_nodes := {node: {"U"} |
	some nodes in expression_edges
	some node in nodes
	not expression_edges[node]
	not instance_nodes[node]
	not node in {"C", "U"}
}

# terraform_links maps each planned instance's address to its propertyDependencies: for each
# linking attribute whose every path ends at planned instances, those instances.
terraform_links := {address: links |
	some rc in planned_changes
	address := rc.address
	links := {camel_case(attribute): targets |
		some attribute in linking_attributes
		node := concat("", ["a:", address, "|", attribute])
		reference_graph[node]
		reached := graph.reachable(reference_graph, {node})
		not reached.U
		not reached.C
		targets := sort([substring(n, 2, -1) | some n in reached; startswith(n, "r:")])
		count(targets) > 0
	}
	count(links) > 0
}
