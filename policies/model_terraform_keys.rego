package eventpipe.model

import rego.v1

# Instance keys: an expression written for one instance of a resource or module call with
# count or for_each names its own key through each.key, count.index and each.value.
# Terraform's reference lists stop at the indexed resource when the index is not a
# constant (google_pubsub_topic.dlq[each.key].id lists "google_pubsub_topic.dlq" and
# "each.key"), but the plan names each instance's key in its address: the references
# lead to the instance of that key (model_terraform_references.rego's reference_nodes),
# as Terraform planned it.

# owner_context(each_node, key, each_value) describes who writes an expression: each_node
# is the node of its for_each expression (each.value when nothing better is known), key
# the instance key the plan gave it (["a"] or [0], "" when it has none) and each_value
# the node of its each.value at that key when the plan shows it ("" otherwise).
owner_context(each_node, key, each_value) := {"each": each_node, "key": key, "each_value": each_value}

no_owner := {"each": "", "key": "", "each_value": ""}

# own_index is the instance key an expression's unkeyed reference is indexed by: the
# owner's own key when the expression names each.key (a string key) or count.index (a
# number), as Terraform writes google_pubsub_topic.dlq[each.key] (references
# "google_pubsub_topic.dlq" and "each.key": the index is not a constant, so the reference
# stops at the resource). "" when it names neither or the owner has no key.
own_index(parsed, key) := key if {
	key != ""
	some p in parsed
	p.kind == "own_key"
	key_form(key) == p.form
} else := ""

key_form(key) := "number" if regex.match(`^\[[0-9]+\]$`, key)

else := "string"

# instance_key is the instance key at the end of an address (["a"] or [0]) after prefix,
# the address without it.
instance_key(address, prefix) := substring(address, count(prefix), -1)

whole_targets(mi, resource, whole, index) := {node} if {
	node := own_instance(mi, resource, whole, index)
}

whole_targets(mi, resource, whole, index) := all_instances(mi, resource) if {
	not own_instance(mi, resource, whole, index)
}

own_instance(mi, resource, whole, index) := node if {
	whole == 1
	index != ""
	node := instance_node(mi, resource, index)
	node != "X"
}

own_module_targets(mi, call, refs, index) := all_outputs(child) if {
	index != ""
	count(refs) == 1
	p := refs[0]
	p.key == ""
	p.output == ""
	child := prefixed(mi, concat("", ["module.", call, index]))
	some c in object.get(child_modules, concat("|", [mi, call]), [])
	c == child
} else := module_targets(mi, call, refs)

# each_value_node is the node of each.value at instance key of a resource or module call
# config in module instance mi whose for_each expression names one resource (for_each =
# google_pubsub_topic.dlq) or one module call, unkeyed and nothing else: that resource's
# or call's instance of the same key (a module instance: its outputs' node set is not one
# node, so each.value of a module call is left to the for_each expression). "" otherwise.
each_value_node(mi, config, key) := node if {
	key != ""
	parsed := {parsed_reference(e) | some e in expression_references(config.for_each_expression)}
	count(parsed) == 1
	some p in parsed
	p.kind == "resource"
	p.key == ""
	node := instance_node(mi, p.resource, key)
	node != "X"
} else := ""

# shown_unset holds when the plan shows a linking attribute without a value (null, "", or
# a dead_letter_policy block list that is empty): it links nothing, whatever the
# configuration writes (a literal block whose condition left it out, say).
shown_unset(change, attribute) if {
	object.get(change, ["after", attribute], null) in {null, "", []}
	not object.get(change, ["after_unknown", attribute], false) == true
}
