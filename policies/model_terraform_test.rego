package eventpipe.model_terraform_test

import rego.v1

import data.eventpipe.lib
import data.eventpipe.model

# The model of Terraform plans: types, values, actions and the references through modules.

plan(changes, root) := {
	"format_version": "1.2",
	"terraform_version": "1.9.8",
	"planned_values": {"root_module": {}},
	"resource_changes": changes,
	"configuration": {"root_module": root},
}

# change is a resource change planned by actions, after being its planned value.
change(module, type, name, key, actions, after, unknown) := object.union(
	{
		"address": concat("", [prefix(module), type, ".", name, key]),
		"mode": "managed",
		"type": type,
		"name": name,
		"change": {"actions": actions, "before": null, "after": after, "after_unknown": unknown, "before_sensitive": false, "after_sensitive": {}},
	},
	module_address(module),
)

prefix(module) := "" if module == ""

else := concat("", [module, "."])

module_address(module) := {} if module == ""

else := {"module_address": module}

# created is a resource change creating a resource; a subscription's topic and dead-letter
# topic are unknown until apply, as when they are other resources' ids.
created(module, "google_pubsub_subscription", name, key) := change(module, "google_pubsub_subscription", name, key, ["create"], {"name": concat("", [name, key]), "dead_letter_policy": [{"max_delivery_attempts": 5}]}, {
	"id": true, "topic": true,
	"dead_letter_policy": [{"dead_letter_topic": true}],
})

created(module, type, name, key) := change(module, type, name, key, ["create"], {"name": concat("", [name, key])}, {"id": true}) if type != "google_pubsub_subscription"

refs(rs) := {"references": rs}

resource_config(type, name, expressions) := {"address": concat(".", [type, name]), "mode": "managed", "type": type, "name": name, "expressions": expressions}

links_of(address, p) := links if {
	some r in model.resources with input as p
	r.urn == address
	links := r.propertyDependencies
}

possible_of(address, p) := links if {
	some r in model.resources with input as p
	r.urn == address
	links := r.possibleDependencies
}

# ---- types, values and actions -----------------------------------------------------------

test_google_types_become_pulumi_types if {
	p := plan([created("", "google_pubsub_topic_iam_policy", "p", ""), created("", "random_id", "r", "")], {})
	{[r.urn, r.type] | some r in model.resources} == {["google_pubsub_topic_iam_policy.p", "gcp:pubsub/topicIAMPolicy:TopicIAMPolicy"], ["random_id.r", "random_id"]} with input as p
}

test_values_take_pulumi_shape if {
	after := {
		"name": "orders-push",
		"labels": {"eventpipe_env": "prod", "team_name": "a"},
		"dead_letter_policy": [{"max_delivery_attempts": 5}],
		"retry_policy": [],
		"push_config": [{"push_endpoint": "https://x", "oidc_token": [{"service_account_email": "a@b"}]}],
		"expiration_policy": [{"ttl": ""}],
	}
	unknown := {"id": true, "dead_letter_policy": [{"dead_letter_topic": true}], "topic": true}
	p := plan([change("", "google_pubsub_subscription", "push", "", ["create"], after, unknown)], {})
	props := model.resources[0].properties with input as p
	props == {
		"name": "orders-push",
		"labels": {"eventpipe_env": "prod", "team_name": "a"},
		"deadLetterPolicy": {"maxDeliveryAttempts": 5, "deadLetterTopic": lib.unknown_value},
		"retryPolicy": null,
		"pushConfig": {"pushEndpoint": "https://x", "oidcToken": {"serviceAccountEmail": "a@b"}},
		"expirationPolicy": {"ttl": ""},
		"topic": lib.unknown_value,
	}
}

test_repeated_blocks_and_sensitive_values if {
	after := {"template": [{"containers": [{"image": "i", "env": [{"name": "A", "value": "x"}, {"name": "B", "value": "s"}]}]}]}
	sensitive := {"template": [{"containers": [{"env": [{}, {"value": true}]}]}]}
	rc := object.union(change("", "google_cloud_run_v2_service", "svc", "", ["create"], after, {}), {"change": {"actions": ["create"], "after": after, "after_unknown": {}, "after_sensitive": sensitive}})
	props := model.resources[0].properties with input as plan([rc], {})
	props.template.containers[0].envs == [{"name": "A", "value": "x"}, {"name": "B", "value": lib.secret_value}]
}

# Terraform before 0.15 writes no after_sensitive (and no before_sensitive): the change is
# judged, with nothing sensitive, never left out.
test_plans_without_sensitive_marks_are_judged if {
	after := {"name": "orders-worker", "topic": "projects/p/topics/orders"}
	rc := json.remove(change("", "google_pubsub_subscription", "s", "", ["create"], after, {}), ["change/after_sensitive", "change/before_sensitive"])
	resources := model.resources with input as plan([rc], {})
	count(resources) == 1
	resources[0].properties == {"name": "orders-worker", "topic": "projects/p/topics/orders"}
	deleted := object.union(rc, {"change": {"actions": ["delete"], "before": after, "after": null}})
	removals := model.removals with input as plan([deleted], {})
	removals[0].properties.name == "orders-worker"
}

test_values_deeper_than_the_model_reads_are_unknown if {
	deep := {"a": [{"b": [{"c": [{"d": [{"e": "x"}]}]}]}]}
	props := model.resources[0].properties with input as plan([change("", "google_pubsub_topic", "x", "", ["create"], deep, {})], {})
	json.marshal(props) != json.marshal(deep)
	contains(json.marshal(props), lib.unknown_value)
}

test_resources_of_types_no_rule_judges_have_no_properties if {
	props := model.resources[0].properties with input as plan([change("", "random_id", "x", "", ["create"], {"byte_length": 4}, {})], {})
	props == {}
}

test_only_resources_that_exist_after_apply_are_judged if {
	changes := [
		change("", "google_pubsub_topic", "created", "", ["create"], {}, {}),
		change("", "google_pubsub_topic", "updated", "", ["update"], {}, {}),
		change("", "google_pubsub_topic", "same", "", ["no-op"], {}, {}),
		change("", "google_pubsub_topic", "replaced", "", ["delete", "create"], {}, {}),
		change("", "google_pubsub_topic", "replaced_first", "", ["create", "delete"], {}, {}),
		change("", "google_pubsub_topic", "deleted", "", ["delete"], null, false),
		change("", "google_pubsub_topic", "forgotten", "", ["forget"], null, false),
		change("", "google_pubsub_topic", "created_forgotten", "", ["create", "forget"], {}, {}),
		change("", "google_pubsub_topic", "read", "", ["read"], {}, {}),
		object.union(change("", "google_pubsub_topic", "data", "", ["read"], {}, {}), {"mode": "data", "address": "data.google_pubsub_topic.data"}),
	]
	{r.urn | some r in model.resources} == {
		"google_pubsub_topic.created", "google_pubsub_topic.updated", "google_pubsub_topic.same",
		"google_pubsub_topic.replaced", "google_pubsub_topic.replaced_first",
	} with input as plan(changes, {})
}

test_terraform_removals if {
	changes := [
		change("", "google_pubsub_subscription", "replaced", "", ["delete", "create"], {}, {}),
		change("", "google_pubsub_subscription", "replaced_first", "", ["create", "delete"], {}, {}),
		change("", "google_pubsub_topic", "deleted", "", ["delete"], null, false),
		change("", "google_pubsub_subscription", "forgotten", "", ["forget"], null, false),
		change("", "google_cloud_run_v2_service", "svc", "", ["delete"], null, false),
	]
	{[r.urn, r.action] | some r in model.removals} == {
		["google_pubsub_subscription.replaced", "replace"], ["google_pubsub_subscription.replaced_first", "replace"],
		["google_pubsub_topic.deleted", "delete"],
	} with input as plan(changes, {})
}

test_empty_plan_is_a_plan if {
	empty := {"format_version": "1.2", "terraform_version": "1.9.8", "planned_values": {"root_module": {}}, "configuration": {"root_module": {}}, "applyable": false, "complete": true, "errored": false}
	model.format == "terraform-plan" with input as empty
	model.problems == [] with input as empty
	model.resources == [] with input as empty
	count(data.eventpipe.deny) + count(data.eventpipe.warn) == 0 with input as empty
}

test_errored_or_deferred_plan_is_incomplete if {
	model.complete == false with input as object.union(plan([], {}), {"errored": true})
	model.complete == false with input as object.union(plan([], {}), {"complete": false})
	model.complete == true with input as plan([], {})
}

test_malformed_change_is_a_problem if {
	count(model.problems) == 1 with input as plan([{"address": "x"}], {})
}

# ---- references ------------------------------------------------------------------------

sub := "google_pubsub_subscription"

topic := "google_pubsub_topic"

test_direct_references if {
	root := {"resources": [
		resource_config(topic, "orders", {}),
		resource_config(topic, "dlq", {}),
		resource_config(sub, "push", {
			"topic": refs(["google_pubsub_topic.orders.id", "google_pubsub_topic.orders"]),
			"dead_letter_policy": [{"dead_letter_topic": refs(["google_pubsub_topic.dlq.id", "google_pubsub_topic.dlq"]), "max_delivery_attempts": {"constant_value": 5}}],
		}),
	]}
	p := plan([created("", topic, "orders", ""), created("", topic, "dlq", ""), created("", sub, "push", "")], root)
	links_of("google_pubsub_subscription.push", p) == {"topic": ["google_pubsub_topic.orders"], "deadLetterPolicy": ["google_pubsub_topic.dlq"]}
}

test_references_through_module_outputs_and_variables if {
	# A DLQ topic from one module's output, passed into another module as a variable.
	root := {
		"resources": [resource_config(topic, "orders", {})],
		"module_calls": {
			"dlq": {"source": "./dlq", "expressions": {"name": {"constant_value": "orders-dlq"}}, "module": {
				"resources": [resource_config(topic, "this", {})],
				"outputs": {"topic_id": {"expression": refs(["google_pubsub_topic.this.id", "google_pubsub_topic.this"])}},
			}},
			"sub": {
				"source": "./sub",
				"expressions": {
					"topic": refs(["google_pubsub_topic.orders.id", "google_pubsub_topic.orders"]),
					"dlq_topic": refs(["module.dlq.topic_id", "module.dlq"]),
				},
				"module": {
					"resources": [resource_config(sub, "this", {"topic": refs(["var.topic"]), "dead_letter_policy": [{"dead_letter_topic": refs(["var.dlq_topic"])}]})],
					"variables": {"topic": {}, "dlq_topic": {}},
				},
			},
		},
	}
	p := plan([created("", topic, "orders", ""), created("module.dlq", topic, "this", ""), created("module.sub", sub, "this", "")], root)
	links_of("module.sub.google_pubsub_subscription.this", p) == {"topic": ["google_pubsub_topic.orders"], "deadLetterPolicy": ["module.dlq.google_pubsub_topic.this"]}
}

region_module := {"source": "./region", "for_each_expression": refs(["var.regions"]), "module": {"resources": [
	resource_config(topic, "source", {}),
	resource_config(topic, "dlq", {}),
	resource_config(sub, "s", {
		"topic": refs(["google_pubsub_topic.source.id", "google_pubsub_topic.source"]),
		"dead_letter_policy": [{"dead_letter_topic": refs(["google_pubsub_topic.dlq.id", "google_pubsub_topic.dlq"])}],
	}),
]}}

test_for_each_module_instances_resolve_within_their_instance if {
	changes := [m |
		some region in [`["eu"]`, `["us"]`]
		some m in [created(concat("", ["module.region", region]), topic, "source", ""), created(concat("", ["module.region", region]), topic, "dlq", ""), created(concat("", ["module.region", region]), sub, "s", "")]
	]
	p := plan(changes, {"module_calls": {"region": region_module}})
	links_of(`module.region["eu"].google_pubsub_subscription.s`, p) == {"topic": [`module.region["eu"].google_pubsub_topic.source`], "deadLetterPolicy": [`module.region["eu"].google_pubsub_topic.dlq`]}
	links_of(`module.region["us"].google_pubsub_subscription.s`, p) == {"topic": [`module.region["us"].google_pubsub_topic.source`], "deadLetterPolicy": [`module.region["us"].google_pubsub_topic.dlq`]}
}

test_nested_modules if {
	# root -> module.pipeline -> module.queue; the DLQ topic comes out of the inner module
	# through two outputs and into a sibling through a variable.
	inner := {"resources": [resource_config(topic, "t", {})], "outputs": {"id": {"expression": refs(["google_pubsub_topic.t.id", "google_pubsub_topic.t"])}}}
	pipeline := {
		"module_calls": {
			"queue": {"source": "./queue", "module": inner},
			"reader": {"source": "./reader", "expressions": {"dlq": refs(["module.queue.id", "module.queue"])}, "module": {
				"resources": [resource_config(sub, "dlq_reader", {"topic": refs(["var.dlq"])})],
				"variables": {"dlq": {}},
			}},
		},
		"outputs": {"dlq_id": {"expression": refs(["module.queue.id", "module.queue"])}},
	}
	root := {
		"resources": [resource_config(topic, "orders", {}), resource_config(sub, "push", {
			"topic": refs(["google_pubsub_topic.orders.id", "google_pubsub_topic.orders"]),
			"dead_letter_policy": [{"dead_letter_topic": refs(["module.pipeline.dlq_id", "module.pipeline"])}],
		})],
		"module_calls": {"pipeline": {"source": "./pipeline", "module": pipeline}},
	}
	changes := [
		created("", topic, "orders", ""), created("", sub, "push", ""),
		created("module.pipeline.module.queue", topic, "t", ""), created("module.pipeline.module.reader", sub, "dlq_reader", ""),
	]
	p := plan(changes, root)
	links_of("google_pubsub_subscription.push", p).deadLetterPolicy == ["module.pipeline.module.queue.google_pubsub_topic.t"]
	links_of("module.pipeline.module.reader.google_pubsub_subscription.dlq_reader", p).topic == ["module.pipeline.module.queue.google_pubsub_topic.t"]

	# The DLQ subscription two modules down is recognised by structure.
	dlqs := lib.dlq_subscriptions with input as p
	dlqs == {"module.pipeline.module.reader.google_pubsub_subscription.dlq_reader"}
}

keyed_topics := {"resources": [
	object.union(resource_config(topic, "t", {}), {"for_each_expression": refs(["var.topics"])}),
	object.union(
		resource_config(sub, "s", {
			"topic": refs(["google_pubsub_topic.t[\"orders\"].id", "google_pubsub_topic.t[\"orders\"]", "google_pubsub_topic.t"]),
			"dead_letter_policy": [{"dead_letter_topic": refs(["google_pubsub_topic.t[\"dead-letters\"].id", "google_pubsub_topic.t[\"dead-letters\"]", "google_pubsub_topic.t"])}],
		}),
		{"for_each_expression": refs(["var.subscriptions"])},
	),
]}

keyed_changes := [
	created("", topic, "t", `["orders"]`), created("", topic, "t", `["dead-letters"]`),
	created("", sub, "s", `["orders"]`),
]

test_literal_keys_name_their_instance if {
	# The subscription keyed "orders" dead-letters to t["dead-letters"], not to t["orders"].
	links_of(`google_pubsub_subscription.s["orders"]`, plan(keyed_changes, keyed_topics)) == {
		"topic": [`google_pubsub_topic.t["orders"]`],
		"deadLetterPolicy": [`google_pubsub_topic.t["dead-letters"]`],
	}
}

test_each_key_names_the_instance_of_its_own_key if {
	# google_pubsub_topic.t[each.key] (references "google_pubsub_topic.t" and "each.key"):
	# the instance of the subscription's own key, a certain link.
	config := {"resources": [
		object.union(resource_config(topic, "t", {}), {"for_each_expression": refs(["var.topics"])}),
		object.union(resource_config(sub, "s", {"topic": refs(["google_pubsub_topic.t", "each.key"])}), {"for_each_expression": refs(["var.subscriptions"])}),
	]}
	p := plan(keyed_changes, config)
	links_of(`google_pubsub_subscription.s["orders"]`, p).topic == [`google_pubsub_topic.t["orders"]`]
	l := lib.links["google_pubsub_subscription.s[\"orders\"]"].topic with input as p
	l == {"targets": {`google_pubsub_topic.t["orders"]`}, "exact": true}
}

test_own_key_without_its_instance_is_one_of_the_instances if {
	# The subscription's key names no instance of t: the index is something else, any
	# instance of t, and not a certain link.
	changes := [
		created("", topic, "t", `["orders"]`), created("", topic, "t", `["dead-letters"]`),
		created("", sub, "s", `["payments"]`),
	]
	config := {"resources": [
		object.union(resource_config(topic, "t", {}), {"for_each_expression": refs(["var.topics"])}),
		object.union(resource_config(sub, "s", {"topic": refs(["google_pubsub_topic.t", "each.key"])}), {"for_each_expression": refs(["var.subscriptions"])}),
	]}
	p := plan(changes, config)
	not links_of(`google_pubsub_subscription.s["payments"]`, p).topic
	possible_of(`google_pubsub_subscription.s["payments"]`, p).topic == [`google_pubsub_topic.t["dead-letters"]`, `google_pubsub_topic.t["orders"]`]
}

test_count_index_names_the_instance_of_its_own_index if {
	changes := [created("", topic, "t", "[0]"), created("", topic, "t", "[1]"), created("", sub, "s", "[1]")]
	config := {"resources": [
		object.union(resource_config(topic, "t", {}), {"count_expression": {"constant_value": 2}}),
		object.union(resource_config(sub, "s", {"topic": refs(["google_pubsub_topic.t", "count.index"])}), {"count_expression": {"constant_value": 2}}),
	]}
	links_of("google_pubsub_subscription.s[1]", plan(changes, config)).topic == ["google_pubsub_topic.t[1]"]
}

test_each_key_is_no_count_index if {
	# each.key of a count instance does not exist: the key form decides.
	changes := [created("", topic, "t", "[0]"), created("", topic, "t", "[1]"), created("", sub, "s", "[1]")]
	config := {"resources": [
		object.union(resource_config(topic, "t", {}), {"count_expression": {"constant_value": 2}}),
		object.union(resource_config(sub, "s", {"topic": refs(["google_pubsub_topic.t", "each.key"])}), {"count_expression": {"constant_value": 2}}),
	]}
	not links_of("google_pubsub_subscription.s[1]", plan(changes, config)).topic
}

test_each_value_of_a_resource_for_each_is_the_instance_of_its_key if {
	# for_each = google_pubsub_topic.t, topic = each.value.id.
	config := {"resources": [
		object.union(resource_config(topic, "t", {}), {"for_each_expression": refs(["var.topics"])}),
		object.union(resource_config(sub, "s", {"topic": refs(["each.value.id", "each.value"])}), {"for_each_expression": refs(["google_pubsub_topic.t"])}),
	]}
	links_of(`google_pubsub_subscription.s["orders"]`, plan(keyed_changes, config)).topic == [`google_pubsub_topic.t["orders"]`]
}

test_count_instances if {
	config := {"resources": [
		object.union(resource_config(topic, "t", {}), {"count_expression": {"constant_value": 2}}),
		resource_config(sub, "s", {"topic": refs(["google_pubsub_topic.t[1].id", "google_pubsub_topic.t[1]", "google_pubsub_topic.t"])}),
	]}
	p := plan([created("", topic, "t", "[0]"), created("", topic, "t", "[1]"), created("", sub, "s", "")], config)
	links_of("google_pubsub_subscription.s", p) == {"topic": ["google_pubsub_topic.t[1]"]}
}

test_references_the_plan_cannot_follow if {
	# A local value (the plan does not show locals): what the module instance sees.
	config := {"resources": [resource_config(topic, "t", {}), resource_config(sub, "s", {"topic": refs(["local.topic_id"])})]}
	p := plan([created("", topic, "t", ""), created("", sub, "s", "")], config)
	not links_of("google_pubsub_subscription.s", p).topic
	possible_of("google_pubsub_subscription.s", p).topic == ["google_pubsub_subscription.s", "google_pubsub_topic.t"]

	# A constant beside a reference, the value unknown: only possibly that instance.
	mixed := {"resources": [resource_config(topic, "t", {}), resource_config(sub, "s", {"topic": refs(["var.prefix", "google_pubsub_topic.t.name", "google_pubsub_topic.t"])})]}
	possible_of("google_pubsub_subscription.s", plan([created("", topic, "t", ""), created("", sub, "s", "")], mixed)).topic == ["google_pubsub_topic.t"]

	# A known value beside a constant: the value decides.
	known := change("", sub, "s", "", ["create"], {"topic": "projects/p/topics/t"}, {})
	not links_of("google_pubsub_subscription.s", plan([created("", topic, "t", ""), known], mixed)).topic
	not possible_of("google_pubsub_subscription.s", plan([created("", topic, "t", ""), known], mixed)).topic
}

test_dynamic_block_with_unknown_value_names_what_its_module_sees if {
	# A dynamic dead_letter_policy is absent from the configuration: its unknown topic is
	# one of the module instance's resources or what its caller passes in.
	module := {"source": "./m", "expressions": {"dlq": refs(["google_pubsub_topic.dlq.id", "google_pubsub_topic.dlq"])}, "module": {
		"resources": [resource_config(topic, "source", {}), resource_config(sub, "s", {"topic": refs(["google_pubsub_topic.source.id", "google_pubsub_topic.source"])})],
		"variables": {"dlq": {}},
	}}
	root := {"resources": [resource_config(topic, "dlq", {}), resource_config(topic, "other", {})], "module_calls": {"m": module}}
	p := plan([created("", topic, "dlq", ""), created("", topic, "other", ""), created("module.m", topic, "source", ""), created("module.m", sub, "s", "")], root)
	possible_of("module.m.google_pubsub_subscription.s", p).deadLetterPolicy == ["google_pubsub_topic.dlq", "module.m.google_pubsub_subscription.s", "module.m.google_pubsub_topic.source"]
}

test_root_local_fallback_reaches_child_outputs_not_child_scopes if {
	# Module a's dynamic dead-letter block takes an input from a root local: that local can
	# name the root's resources and its child modules' outputs, never what a sibling module
	# keeps to itself (b's topic and subscription: b outputs nothing).
	a := {"source": "./a", "expressions": {"agent": refs(["local.agent"])}, "module": {
		"resources": [resource_config(topic, "source", {}), resource_config(sub, "s", {"topic": refs(["google_pubsub_topic.source.id", "google_pubsub_topic.source"])})],
		"variables": {"agent": {}},
	}}
	b := {"source": "./b", "module": {"resources": [resource_config(topic, "inner", {}), resource_config(sub, "hidden", {"topic": refs(["google_pubsub_topic.inner.id", "google_pubsub_topic.inner"])})]}}
	c := {"source": "./c", "module": {
		"resources": [resource_config(topic, "shared", {})],
		"outputs": {"id": {"expression": refs(["google_pubsub_topic.shared.id", "google_pubsub_topic.shared"])}},
	}}
	root := {"resources": [resource_config(topic, "dlq", {})], "module_calls": {"a": a, "b": b, "c": c}}
	p := plan(
		[
			created("", topic, "dlq", ""), created("module.a", topic, "source", ""), created("module.a", sub, "s", ""),
			created("module.b", topic, "inner", ""), created("module.b", sub, "hidden", ""), created("module.c", topic, "shared", ""),
		],
		root,
	)
	possible_of("module.a.google_pubsub_subscription.s", p).deadLetterPolicy == [
		"google_pubsub_topic.dlq", "module.a.google_pubsub_subscription.s", "module.a.google_pubsub_topic.source",
		"module.c.google_pubsub_topic.shared",
	]
}

test_each_value_follows_the_for_each_expression if {
	config := {"resources": [
		resource_config(topic, "t", {}),
		object.union(resource_config(sub, "s", {"topic": refs(["each.value.id", "each.value"])}), {"for_each_expression": refs(["google_pubsub_topic.t"])}),
	]}
	p := plan([created("", topic, "t", ""), created("", sub, "s", `["a"]`)], config)
	links_of(`google_pubsub_subscription.s["a"]`, p) == {"topic": ["google_pubsub_topic.t"]}
}

# project_numbers: the google_project data sources of prior_state, at any depth; a project
# read with two numbers (impossible in one plan) shows none.
project_data(project, number) := {"address": "data.google_project.p", "mode": "data", "type": "google_project", "name": "p", "values": {"project_id": project, "number": number}}

test_project_numbers_from_data_sources if {
	doc := object.union(plan([], {}), {"prior_state": {"values": {"root_module": {
		"resources": [project_data("acme-prod", "111"), {"address": "google_project.x", "mode": "managed", "type": "google_project", "name": "x", "values": {"project_id": "acme-new", "number": "333"}}],
		"child_modules": [{"address": "module.a", "child_modules": [{"address": "module.a.module.b", "resources": [project_data("acme-dlq", "222"), project_data("acme-odd", "1"), project_data("acme-odd", "2")]}]}],
	}}}})
	model.project_numbers == {"acme-prod": "111", "acme-dlq": "222"} with input as doc
}

# A refresh-only plan (terraform plan -refresh-only) plans no change while its state holds
# managed resources: nothing to judge, so no verdict (EP900) naming terraform plan. A
# normal plan of the same state lists each resource (no-op when unchanged) and is judged.
test_refresh_only_plan_is_refused_naming_terraform_plan if {
	held := {"address": "google_pubsub_subscription.s", "mode": "managed", "type": sub, "name": "s", "values": {"name": "s", "topic": "projects/p/topics/t"}}
	refresh := {
		"format_version": "1.2",
		"planned_values": {"root_module": {}},
		"resource_drift": [],
		"prior_state": {"values": {"root_module": {"resources": [held]}}},
	}
	problems := model.problems with input as refresh
	count(problems) == 1
	some msg in problems
	contains(msg, "refresh-only")
	contains(msg, "`terraform plan -out=PLANFILE`")
	denies := data.eventpipe.deny with input as refresh
	{f.id | some f in denies} == {"EP900"}

	# The same state in a normal plan: a no-op change, judged.
	normal := object.union(refresh, {"resource_changes": [{
		"address": "google_pubsub_subscription.s", "mode": "managed", "type": sub, "name": "s",
		"change": {"actions": ["no-op"], "before": held.values, "after": held.values, "after_unknown": {}},
	}]})
	model.problems == [] with input as normal

	# A data source in the state is no managed resource: an empty plan still passes.
	data_only := json.patch(refresh, [{"op": "replace", "path": "/prior_state/values/root_module/resources/0/mode", "value": "data"}])
	model.problems == [] with input as data_only
}
