package eventpipe.model_pulumi_test

import rego.v1

import data.eventpipe.lib
import data.eventpipe.model

# The model of Pulumi documents: previews (and the offline render) and stack exports.

sub_type := "gcp:pubsub/subscription:Subscription"

topic_type := "gcp:pubsub/topic:Topic"

u(t, name) := sprintf("urn:pulumi:prod::eventpipe::%s::%s", [t, name])

state(t, name, inputs) := {"urn": u(t, name), "type": t, "custom": true, "inputs": inputs}

step(op, t, name) := {"op": op, "urn": u(t, name), "newState": state(t, name, {"name": name})}

stack_step := {"op": "same", "urn": u("pulumi:pulumi:Stack", "eventpipe-prod"), "newState": {"urn": u("pulumi:pulumi:Stack", "eventpipe-prod"), "type": "pulumi:pulumi:Stack", "custom": false}}

urns(rs) := {r.urn | some r in rs}

test_preview_resources_are_the_managed_resources_it_leaves if {
	preview := {"steps": [
		stack_step,
		step("same", topic_type, "kept"),
		step("create", sub_type, "created"),
		step("update", sub_type, "updated"),
		{"op": "delete", "urn": u(sub_type, "deleted"), "oldState": state(sub_type, "deleted", {})},
		{"op": "discard", "urn": u(sub_type, "retained"), "oldState": state(sub_type, "retained", {})},
		{"op": "read", "urn": u(topic_type, "looked-up"), "newState": object.union(state(topic_type, "looked-up", {}), {"external": true})},
		{"op": "same", "urn": u("eventpipe:components:Pipeline", "p"), "newState": {"urn": u("eventpipe:components:Pipeline", "p"), "type": "eventpipe:components:Pipeline", "custom": false}},
	]}
	urns(model.resources) == {u(topic_type, "kept"), u(sub_type, "created"), u(sub_type, "updated")} with input as preview
	model.format == "pulumi-preview" with input as preview
	model.problems == [] with input as preview
}

test_replacement_counted_once if {
	preview := {"steps": [step("create-replacement", sub_type, "s"), step("replace", sub_type, "s"), {"op": "delete-replaced", "urn": u(sub_type, "s"), "oldState": state(sub_type, "s", {})}]}
	[r.op | some r in model.resources] == ["replace"] with input as preview
	alone := {"steps": [step("create-replacement", sub_type, "s")]}
	[r.op | some r in model.resources] == ["create-replacement"] with input as alone
}

test_resource_shape if {
	s := object.union(state(sub_type, "s", {"topic": "t"}), {"dependencies": ["d"], "propertyDependencies": {"topic": ["d"]}})
	model.resources == [{"urn": u(sub_type, "s"), "type": sub_type, "op": "create", "properties": {"topic": "t"}, "dependencies": ["d"], "propertyDependencies": {"topic": ["d"]}}] with input as {"steps": [{"op": "create", "urn": u(sub_type, "s"), "newState": s}]}
}

test_preview_without_show_sames_is_incomplete if {
	# Without --show-sames only the root stack's step is printed with op "same".
	preview := {"steps": [stack_step, step("create", sub_type, "new")], "changeSummary": {"create": 1, "same": 12}}
	model.complete == false with input as preview
}

test_incomplete_preview_says_what_to_run if {
	preview := {"steps": [stack_step, step("create", sub_type, "new")], "changeSummary": {"create": 1, "same": 12}}
	contains(model.incomplete, "pulumi preview --json --show-sames") with input as preview
	model.problems == [] with input as preview
	model.incomplete == "" with input as {"steps": [stack_step], "changeSummary": {"same": 1}}
}

# A preview of an unchanged stack printed without --show-sames shows only the root stack:
# nothing changed, so the change introduces no violation: it passes (no finding, no
# problem) in every runtime, saying nothing was judged and how to judge the whole stack.
test_unchanged_preview_without_show_sames_passes_saying_so if {
	preview := {"steps": [stack_step], "changeSummary": {"same": 130}}
	model.problems == [] with input as preview
	model.complete == false with input as preview
	startswith(model.incomplete, "nothing changed: ") with input as preview
	contains(model.incomplete, "`pulumi preview --json --show-sames`") with input as preview
	count(data.eventpipe.deny) == 0 with input as preview
	count(data.eventpipe.warn) == 0 with input as preview

	# A preview that deletes a subscription shows a removal to judge.
	removal := {"steps": [stack_step, {"op": "delete", "urn": u(sub_type, "gone"), "oldState": state(sub_type, "gone", {})}], "changeSummary": {"delete": 1, "same": 130}}
	model.problems == [] with input as removal
	not startswith(model.incomplete, "nothing changed") with input as removal
}

test_preview_with_show_sames_is_complete if {
	preview := {"steps": [stack_step, step("same", topic_type, "t"), step("create", sub_type, "new")], "changeSummary": {"create": 1, "same": 2}}
	model.complete == true with input as preview
	model.complete == true with input as {"steps": [step("create", sub_type, "new")], "changeSummary": {"create": 1}}
	model.complete == true with input as {"steps": [stack_step], "changeSummary": {"same": 1}}
}

test_preview_removals if {
	preview := {"steps": [
		step("create-replacement", sub_type, "replaced"),
		step("replace", sub_type, "replaced"),
		{"op": "delete-replaced", "urn": u(sub_type, "replaced"), "oldState": state(sub_type, "replaced", {"filter": "old"})},
		{"op": "delete", "urn": u(topic_type, "gone"), "oldState": state(topic_type, "gone", {})},
		{"op": "delete", "urn": u("gcp:cloudrunv2/service:Service", "svc"), "oldState": state("gcp:cloudrunv2/service:Service", "svc", {})},
		{"op": "discard", "urn": u(sub_type, "retained"), "oldState": state(sub_type, "retained", {})},
	]}
	removals := {[r.urn, r.action] | some r in model.removals} with input as preview
	removals == {[u(sub_type, "replaced"), "replace"], [u(topic_type, "gone"), "delete"]}
}

test_malformed_steps_are_problems if {
	model.problems == [`steps[1]: a preview step needs "op", "urn" and a new state with a "type" (is this pulumi preview --json output?)`] with input as {"steps": [step("create", sub_type, "ok"), {"kind": "x"}]}
	count(model.problems) == 1 with input as {"steps": [{"op": "create", "urn": "u", "newState": {"inputs": {}}}]}
}

test_export_resources if {
	secret := {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "ciphertext": "v1:abc"}
	export := {"version": 3, "deployment": {"resources": [
		{"urn": u("pulumi:pulumi:Stack", "eventpipe-prod"), "type": "pulumi:pulumi:Stack", "custom": false},
		object.union(state(sub_type, "s", {"pushConfig": {"oidcToken": secret}, "name": "s"}), {"id": "projects/p/subscriptions/s"}),
		object.union(state(sub_type, "pending", {}), {"delete": true}),
		object.union(state(topic_type, "read", {}), {"external": true}),
	]}}
	model.format == "pulumi-stack-export" with input as export
	[r.properties | some r in model.resources] == [{"pushConfig": {"oidcToken": "[secret]"}, "name": "s"}] with input as export
	model.complete == true with input as export
	model.removals == [] with input as export
}

test_analyzer_documents_without_custom_are_resources if {
	# eventpipe's Pulumi analyzer builds stack exports from AnalyzeStack requests: no custom, id or outputs.
	doc := {"version": 3, "deployment": {"resources": [{"urn": u(sub_type, "s"), "type": sub_type, "inputs": {"name": "s"}, "parent": u("eventpipe:components:Subscription", "s"), "propertyDependencies": {"topic": [u(topic_type, "t")]}}]}}
	urns(model.resources) == {u(sub_type, "s")} with input as doc
	model.resources[0].propertyDependencies == {"topic": [u(topic_type, "t")]} with input as doc
}

# An audit's stack export names, for a link it could not read, the topics it may be
# (possibleDependencies, as a Terraform plan's): only their readers may be DLQ subscriptions.
test_export_possible_dependencies if {
	unread := object.union(state(sub_type, "unread", {"name": "unread", "topic": model.unknown_value, "deadLetterPolicy": model.unknown_value}), {"possibleDependencies": {"topic": [u(topic_type, "own")], "deadLetterPolicy": [u(topic_type, "own")]}})
	reads_own := object.union(state(sub_type, "reads-own", {"name": "reads-own", "topic": "own"}), {"propertyDependencies": {"topic": [u(topic_type, "own")]}})
	reads_other := object.union(state(sub_type, "reads-other", {"name": "reads-other", "topic": "other"}), {"propertyDependencies": {"topic": [u(topic_type, "other")]}})
	export := {"version": 3, "deployment": {"resources": [state(topic_type, "own", {"name": "own"}), state(topic_type, "other", {"name": "other"}), unread, reads_own, reads_other]}}
	[r.possibleDependencies | some r in model.resources; r.urn == u(sub_type, "unread")] == [unread.possibleDependencies] with input as export
	lib.uncertain_dlq_subscriptions == {u(sub_type, "reads-own"), u(sub_type, "unread")} with input as export
}

test_export_problems if {
	model.problems == [`a stack export has a "version" (3); this document has none: produce one with pulumi stack export`] with input as {"deployment": {"resources": []}}
	model.problems == [`deployment.resources[0]: a resource state needs "urn" and "type"`] with input as {"version": 3, "deployment": {"resources": [{"inputs": {}}]}}
}

# project_numbers: an audit's stack export carries the numbers it read under
# eventpipeAudit.projectNumbers; a plain stack export shows none, and a malformed entry is
# not a number.
test_export_project_numbers_from_audit if {
	export := {"version": 3, "deployment": {"resources": []}}
	model.project_numbers == {} with input as export
	audited := object.union(export, {"eventpipeAudit": {"projectNumbers": {"acme-prod": "111", "acme-dlq": "222", "acme-odd": 3, "acme-none": ""}}})
	model.project_numbers == {"acme-prod": "111", "acme-dlq": "222"} with input as audited
}
