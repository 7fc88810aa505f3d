package eventpipe.main_test

import rego.v1

# The entry every runtime evaluates, on whole documents.

sub_type := "gcp:pubsub/subscription:Subscription"

u(name) := sprintf("urn:pulumi:prod::eventpipe::%s::%s", [sub_type, name])

# A subscription without a dead-letter policy, created by a preview.
bare_step := {"op": "create", "urn": u("orders-push"), "newState": {"urn": u("orders-push"), "type": sub_type, "custom": true, "inputs": {
	"name": "orders-push", "topic": "projects/p/topics/orders", "labels": {"eventpipe_env": "dev"},
	"retryPolicy": {"minimumBackoff": "10s", "maximumBackoff": "600s"}, "expirationPolicy": {"ttl": ""},
}}}

stack_step := {"op": "same", "urn": "urn:pulumi:prod::eventpipe::pulumi:pulumi:Stack::eventpipe-prod", "newState": {"type": "pulumi:pulumi:Stack", "custom": false}}

test_absence_verdict_is_a_warning_on_a_preview_without_sames if {
	preview := {"steps": [stack_step, bare_step], "changeSummary": {"create": 1, "same": 9}}
	[f.id | some f in data.eventpipe.deny] == [] with input as preview
	found := [f | some f in data.eventpipe.warn; f.id == "EP001"] with input as preview
	count(found) == 1
	found[0].note == "the preview leaves out unchanged resources, so this verdict could be wrong: run `pulumi preview --json --show-sames` for a firm one"
	endswith(found[0].msg, concat("", ["(", found[0].note, ")"]))
}

test_absence_verdict_is_a_deny_on_a_complete_preview if {
	preview := {"steps": [stack_step, bare_step], "changeSummary": {"create": 1, "same": 1}}
	[f.id | some f in data.eventpipe.deny] == ["EP001"] with input as preview
}

test_results_carry_what_conftest_users_need if {
	preview := {"steps": [bare_step]}
	some f in data.eventpipe.deny with input as preview
	f == {
		"msg": "EP001: Subscription 'orders-push' has no dead-letter policy: poison messages are redelivered forever",
		"id": "EP001",
		"severity": "high",
		"fix": "Give the subscription a deadLetterPolicy with a deadLetterTopic (the eventpipe Subscription component always creates one).",
		"urn": u("orders-push"),
		"type": sub_type,
	}
}

test_summary if {
	data.eventpipe.summary == {"format": "pulumi-preview", "complete": true, "incomplete": "", "resources": 1, "problems": []} with input as {"steps": [stack_step, bare_step]}
	count(data.eventpipe.summary.problems) == 1 with input as {"kind": "ConfigMap"}
}
