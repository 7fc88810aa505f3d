package eventpipe.model

import rego.v1

# A resource's attribute refers to other resources through the configuration's expressions:
# directly, or through module variables and outputs, at any module depth, for each module
# instance (count/for_each) apart. The references form a graph: each attribute, variable,
# output and for_each expression of a module instance points at what its expression names,
# and graph.reachable follows it to its ends: planned resource instances (r:), constants
# (C: a literal, a root variable, a data source read while planning), what is outside the
# plan (X), and what the model cannot follow (U). A value the plan does not show the
# expression of (a local value, a dynamic block) can come only from what an expression in
# its module instance can name: its scope (S:), whose edges lead to the instance's
# resources, its variables (what its caller passes), its child modules' outputs (never
# what a child keeps to itself) and X. terraform_links turns the ends into links.

# linking_attributes are, by resource type, the attributes by which the rules link
# resources.
linking_attributes := {
	"google_pubsub_subscription": {"topic", "dead_letter_policy"},
	"google_pubsub_topic_iam_member": {"topic"},
	"google_pubsub_topic_iam_binding": {"topic"},
	"google_pubsub_topic_iam_policy": {"topic"},
	"google_pubsub_subscription_iam_member": {"subscription"},
	"google_pubsub_subscription_iam_binding": {"subscription"},
	"google_pubsub_subscription_iam_policy": {"subscription"},
}

# linking_properties are the linking attributes' names in the model (pulumi-gcp's).
linking_properties := {a: camel_case(a) | some attributes in linking_attributes; some a in attributes}

# linking_changes are the planned changes of resources with linking attributes.
linking_changes := [rc | some rc in planned_changes; linking_attributes[rc.type]]

# config_paths maps each planned module instance to its config path.
config_paths := {mi: config_path(mi) | some mi in planned_modules}

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
prefixed(mi, address) := address if mi == ""

else := concat(".", [mi, address])

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
} else := {"kind": "own_key", "form": "string"} if {
	e == "each.key"
} else := {"kind": "own_key", "form": "number"} if {
	e == "count.index"
} else := {"kind": "none"}

# reference_nodes is the set of graph nodes an expression's references lead to from module
# instance mi, written for owner (owner_context): the instance whose each.key, count.index
# and each.value the expression may name.
reference_nodes(refs, mi, owner) := union({
	resource_nodes(parsed, mi, index), module_nodes(parsed, mi, index),
	variable_nodes(parsed, mi), other_nodes(parsed, mi, owner),
}) if {
	parsed := [parsed_reference(e) | some e in refs]
	index := own_index(parsed, owner.key)
}

# resource_nodes: a keyed reference names its instance; the unkeyed entries beyond those
# that keyed references add name the whole resource (or an index the plan cannot show):
# every instance of it.
#
# A reference indexed by the owner's own key (index: own_index) names the instance of that
# key when the plan holds it and the expression names the resource unkeyed once (one
# traversal, the indexed one).
resource_nodes(parsed, mi, index) := {node |
	some resource in {p.resource | some p in parsed; p.kind == "resource"}
	keyed := [p.key | some p in parsed; p.kind == "resource"; p.resource == resource; p.key != ""]
	whole := count([p | some p in parsed; p.kind == "resource"; p.resource == resource; p.key == ""]) - count(keyed)
	some node in resource_targets(mi, resource, keyed, whole, index)
}

resource_targets(mi, resource, keyed, whole, index) := {instance_node(mi, resource, key) | some key in keyed} | {node |
	whole > 0
	some node in whole_targets(mi, resource, whole, index)
}

instance_node(mi, resource, key) := concat("", ["r:", address]) if {
	address := prefixed(mi, concat("", [resource, key]))
	planned_addresses[address]
} else := "X"

all_instances(mi, resource) := {concat("", ["r:", a]) | some a in addresses} if {
	addresses := instances[concat("|", [mi, resource])]
} else := {"X"}

# module_nodes: references to module outputs lead to the output of the named instance (or
# every instance, for an index the plan cannot show); a reference to a whole module
# instance, to all of its outputs.
#
# A reference to the call's instance of the owner's own key (module.topics[each.key].id:
# references "module.topics" and "each.key") names that instance's outputs, when the plan
# holds it and the expression names the call unkeyed once.
module_nodes(parsed, mi, index) := {node |
	some call in {p.call | some p in parsed; p.kind == "module"}
	refs := [p | some p in parsed; p.kind == "module"; p.call == call]
	some node in own_module_targets(mi, call, refs, index)
}

module_targets(mi, call, refs) := {"U"} if {
	# The call's instances plan no resource, and it has count or for_each: which instances
	# there are, and so what they output, the plan does not show.
	count(object.get(child_modules, concat("|", [mi, call]), [])) == 0
	some p in refs
	p.key == ""
} else := ((keyed_outputs | plain_outputs) | whole_instances) | whole_module if {
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
variable_node(mi, name) := "C" if mi == ""

else := concat("", ["v:", mi, "|", name])

other_nodes(parsed, mi, owner) := {node |
	some p in parsed
	p.kind in {"unknown", "constant", "each"}
	node := other_node(p.kind, mi, owner)
}

# A local value (the plan does not show locals' expressions) is made of what its module
# instance can see: its scope.
other_node("unknown", mi, _) := scope_node(mi)

other_node("constant", _, _) := "C"

# each.value is the owner's instance of the for_each resource or module call it iterates
# when the plan shows it (each_value), else what its for_each expression names.
other_node("each", _, owner) := owner.each_value if {
	owner.each_value != ""
} else := owner.each if {
	owner.each != ""
} else := "U"

scope_node(mi) := concat("", ["S:", mi])

# expression_nodes are the nodes an expression leads to, or C for an expression without
# references (a constant).
expression_nodes(expr, mi, owner) := reference_expression_nodes(expression_references(expr), mi, owner)

reference_expression_nodes(refs, mi, owner) := nodes if {
	nodes := reference_nodes(refs, mi, owner)
	count(nodes) > 0
} else := {"C"}

# each_node_of is the node of the for_each expression of a resource or module call config
# in module instance mi, or "" when it has none.
each_node_of(mi, owner, config) := concat("", ["f:", mi, "|", owner]) if {
	config.for_each_expression
} else := ""

# ---- the graph ---------------------------------------------------------------------------

# linking_references are the references of each linking attribute of each planned
# resource instance whose configuration shows the attribute's expression:
# [rc, attribute, its module instance, resource address without key, config, references].
linking_references := [[rc, attribute, mi, resource, config, refs] |
	some rc in linking_changes
	mi := object.get(rc, "module_address", "")
	resource := concat(".", [rc.type, rc.name])
	config := config_resources[concat("", [config_paths[mi], resource])]
	some attribute in linking_attributes[rc.type]
	not shown_unset(rc.change, attribute)
	expr := linking_expression(config.expressions, attribute)
	refs := expression_references(expr)
]

# attribute_edges: each linking attribute of each planned resource instance whose
# expression is not a direct reference (direct_links).
attribute_edges := {node: nodes |
	some [rc, attribute, mi, resource, config, refs] in linking_references
	not direct_targets(refs, mi)
	node := concat("", ["a:", rc.address, "|", attribute])
	key := instance_key(rc.address, prefixed(mi, resource))
	nodes := reference_expression_nodes(refs, mi, owner_context(each_node_of(mi, resource, config), key, each_value_node(mi, config, key)))
}

# linking_expression is the expression a linking attribute's value comes from: the
# dead-letter policy's dead_letter_topic (its block is a list of one, or an object).
linking_expression(expressions, "dead_letter_policy") := expressions.dead_letter_policy[0].dead_letter_topic

linking_expression(expressions, "dead_letter_policy") := expressions.dead_letter_policy.dead_letter_topic

linking_expression(expressions, attribute) := expressions[attribute] if attribute != "dead_letter_policy"

# each_edges: the for_each expressions of planned resources and module calls.
each_edges := object.union(resource_each_edges, module_each_edges)

resource_each_edges := {node: nodes |
	some rc in linking_changes
	mi := object.get(rc, "module_address", "")
	resource := concat(".", [rc.type, rc.name])
	config := config_resources[concat("", [config_paths[mi], resource])]
	config.for_each_expression
	node := each_node_of(mi, resource, config)
	nodes := expression_nodes(config.for_each_expression, mi, no_owner)
}

module_each_edges := {node: nodes |
	some mi in planned_modules
	mi != ""
	call := module_calls[config_paths[mi]]
	call.for_each_expression
	parent := parent_module(mi)
	node := each_node_of(parent, concat("", ["module.", module_segments(mi)[count(module_segments(mi)) - 1][1]]), call)
	nodes := expression_nodes(call.for_each_expression, parent, no_owner)
}

# variable_edges: a module instance's variable is what its call passes, in the caller's
# module instance; the default (a constant) when the call passes nothing.
variable_edges := {node: nodes |
	some mi in planned_modules
	mi != ""
	call := module_calls[config_paths[mi]]
	parent := parent_module(mi)
	owner := concat("", ["module.", module_segments(mi)[count(module_segments(mi)) - 1][1]])
	some name in (object.keys(object.get(call, "expressions", {})) | object.keys(object.get(object.get(call, "module", {}), "variables", {})))
	node := concat("", ["v:", mi, "|", name])
	key := module_segments(mi)[count(module_segments(mi)) - 1][2]
	nodes := variable_value_nodes(call, name, parent, owner_context(each_node_of(parent, owner, call), key, each_value_node(parent, call, key)))
}

variable_value_nodes(call, name, parent, owner) := expression_nodes(call.expressions[name], parent, owner) if {
	call.expressions[name]
} else := {"C"}

# output_edges: a module instance's output is its expression, in that instance.
output_edges := {node: nodes |
	some mi in planned_modules
	mi != ""
	some name, output in object.get(module_configs[config_paths[mi]], "outputs", {})
	node := output_node(mi, name)
	nodes := expression_nodes(object.get(output, "expression", {}), mi, no_owner)
}

# reference_graph holds every node: resource instances (the ends), the constant and unknown
# ends, and each node an expression names that the plan does not describe (an output of a
# module instance without resources, say), which leads to the unknown end.
reference_graph := object.union_n([expression_edges, instance_nodes, scope_edges, {"C": set(), "U": set(), "X": set()}, undescribed_nodes])

expression_edges := object.union_n([attribute_edges, each_edges, variable_edges, output_edges])

instance_nodes := {concat("", ["r:", rc.address]): set() | some rc in planned_changes}

undescribed_nodes := {node: {"U"} |
	some nodes in expression_edges
	some node in nodes
	not expression_edges[node]
	not instance_nodes[node]
	not scope_edges[node]
	not node in {"C", "U", "X"}
}

# scope_edges: a value whose expression the plan does not show (a local value, a dynamic
# block) can come only from what an expression in its module instance can name: its
# resources, its variables (so what its caller passes), its child modules' outputs, and
# what is outside the plan (X: a data source read at apply, say). A child's outputs, not
# its scope: what a child module does not output, no expression of its caller can name.
scope_edges := {scope_node(mi): nodes |
	some mi in planned_modules
	nodes := ((object.get(scope_resources, mi, set()) | {"X"}) | object.get(scope_variables, mi, set())) | object.get(scope_outputs, mi, set())
}

# scope_resources, scope_variables and scope_outputs group a scope's edges by module
# instance, each group built once (OPA indexes the inner comprehensions).
scope_resources := {mi: {p[1] | some p in module_resource_pairs; p[0] == mi} | some mi in planned_modules}

module_resource_pairs := [[object.get(rc, "module_address", ""), concat("", ["r:", rc.address])] | some rc in planned_changes]

scope_variables := {mi: {p[1] | some p in module_variable_pairs; p[0] == mi} | some mi in planned_modules}

module_variable_pairs := [[mi, node] |
	some node, _ in variable_edges
	mi := substring(node, 2, indexof(node, "|") - 2)
]

scope_outputs := {mi: {p[1] | some p in module_output_pairs; p[0] == mi} | some mi in planned_modules}

module_output_pairs := [[parent_module(child), node] |
	some child in planned_modules
	child != ""
	some node in all_outputs(child)
]

# terraform_links maps each planned instance's address to its links: {"exact":
# propertyDependencies, "possible": the instances a linking attribute may name,
# "dependencies": the instances exact names, sorted}. A linking
# attribute whose every path ends at one planned instance names it (exact); several
# instances, or paths leaving the plan, make it one of those (possible). A path through a
# constant, a root variable or a data source read while planning leaves the attribute to
# its planned value (resolved by name) when that value is known; when the value is unknown
# the instances at the other paths' ends are only possible (a constant may be a prefix
# that makes another name of one of them); several instances with the value known leave
# it to the value too. A path the model cannot follow
# leaves the attribute to its value (unknown: it may name anything). An attribute without an
# expression in the configuration (a dynamic block) whose value is unknown may name what its
# module instance sees (its scope).
terraform_links := {rc.address: links |
	some rc in linking_changes
	found := [[attribute, exact, targets] |
		some attribute in linking_attributes[rc.type]
		[exact, targets] := attribute_link(rc, attribute)
	]
	count(found) > 0
	links := {
		"exact": {linking_properties[f[0]]: f[2] | some f in found; f[1]},
		"possible": {linking_properties[f[0]]: f[2] | some f in found; not f[1]},
		"dependencies": sort({a | some f in found; f[1]; some a in f[2]}),
	}
}

# reached_from(start) is every node reachable from start. An attribute whose expression
# names only ends (planned instances, constants, what is outside the plan) reaches them
# without the whole graph: in a configuration without modules, locals or dynamic blocks
# the graph is never built.
reached_from(start) := {start} | nodes if {
	nodes := attribute_edges[start]
	every n in nodes {
		graph_end(n)
	}
} else := graph.reachable(reference_graph, {start})

graph_end(n) if instance_nodes[n]

graph_end(n) if n in {"C", "U", "X"}

# decided_by_references holds unless the references leave several candidates while the
# plan shows the value: a known value names one resource (resolved by name), whatever
# several instances the expression could have picked it from (t[each.key].name).
decided_by_references(true, _, _)

decided_by_references(false, rc, attribute) if attribute_unknown(rc, attribute)

# link_start is the graph node a linking attribute's value comes from.
link_start(rc, attribute) := node if {
	node := concat("", ["a:", rc.address, "|", attribute])
	attribute_edges[node]
} else := scope_node(object.get(rc, "module_address", "")) if {
	attribute_unknown(rc, attribute)
}

attribute_unknown(rc, attribute) if rc.change.after_unknown[attribute] == true

attribute_unknown(rc, "dead_letter_policy") if rc.change.after_unknown.dead_letter_policy[_].dead_letter_topic == true

# constant_value holds when a path through a constant leaves the attribute to its value:
# the value is known.
constant_value(reached, rc, attribute) if {
	reached.C
	not attribute_unknown(rc, attribute)
}

exactly_one(reached, targets) if {
	not reached.X
	not reached.C
	count(targets) == 1
} else := false
