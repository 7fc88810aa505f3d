package eventpipe.deadletter_test

import rego.v1

import data.eventpipe.fixtures_test as fx
import data.eventpipe.lib
import data.eventpipe.rules

# Cross-resource dead-letter rules: each test breaks the healthy stack once.

sub := fx.good_subscription

with_sub(patch) := fx.swap(fx.good_stack, sub, fx.with_props(sub, patch))

dead_letter_to(topic) := with_sub({"deadLetterPolicy": {"deadLetterTopic": topic, "maxDeliveryAttempts": 5}})

# EP001 stack_deny_missing_dead_letter_policy

test_missing_dead_letter_policy_deny if {
	s := fx.swap(fx.good_stack, sub, fx.without_prop(sub, "deadLetterPolicy"))
	fx.messages(rules.stack_deny_missing_dead_letter_policy) == {"EP001: Subscription 'orders-push' has no dead-letter policy: poison messages are redelivered forever"} with data.eventpipe.model.resources as s
	fx.verdicts(s) == {"deny:EP001"}
}

test_dlq_subscription_recognised_without_labels if {
	s := fx.swap(fx.good_stack, fx.dlq_subscription, fx.without_prop(fx.dlq_subscription, "labels"))
	count(fx.results(s)) == 0
}

test_dlq_subscription_recognised_through_property_dependencies if {
	# Both topics unknown at preview time: the DLQ subscription is found by its links.
	linked_sub := fx.with_links(fx.with_props(sub, {"deadLetterPolicy": {"deadLetterTopic": lib.unknown_value}}), {"deadLetterPolicy": [fx.dlq_topic.urn], "topic": [fx.source_topic.urn]})
	linked_dlq := fx.with_links(fx.with_props(fx.without_prop(fx.dlq_subscription, "labels"), {"topic": lib.unknown_value}), {"topic": [fx.dlq_topic.urn]})
	s := fx.swap(fx.swap(fx.good_stack, sub, linked_sub), fx.dlq_subscription, linked_dlq)
	lib.dlq_subscriptions == {fx.dlq_subscription.urn} with data.eventpipe.model.resources as s
	count(fx.results(s)) == 0
}

test_subscription_on_a_topic_nobody_dead_letters_to_is_not_a_dlq if {
	lone := fx.with_props(fx.without_prop(fx.without_prop(fx.dlq_subscription, "labels"), "retryPolicy"), {"topic": "orders"})
	s := fx.swap(fx.good_stack, fx.dlq_subscription, lone)
	not lib.maybe_dlq_subscriptions[lone.urn] with data.eventpipe.model.resources as s
}

test_maybe_dlq_subscription_without_policy_is_a_warning_naming_the_doubt if {
	# The source's dead-letter topic is one of two candidates, so the bare subscription on
	# one of them may be its DLQ subscription: the document cannot show whether it is, so
	# the finding is a warning (a result with a note), not a deny, and it names what the
	# document cannot resolve.
	other := {"type": lib.topic_type, "urn": fx.urn(lib.topic_type, "other"), "properties": {"name": "other", "project": "acme-prod"}}
	either := fx.with_links(fx.with_props(sub, {"deadLetterPolicy": {"deadLetterTopic": lib.unknown_value}}), {"deadLetterPolicy": [fx.dlq_topic.urn, other.urn], "topic": [fx.source_topic.urn]})
	bare := fx.without_prop(fx.without_prop(fx.without_prop(fx.dlq_subscription, "labels"), "retryPolicy"), "deadLetterPolicy")
	s := array.concat(fx.swap(fx.swap(fx.good_stack, sub, either), fx.dlq_subscription, bare), [other])
	lib.maybe_dlq_subscriptions[bare.urn] with data.eventpipe.model.resources as s
	not lib.dlq_subscriptions[bare.urn] with data.eventpipe.model.resources as s
	note := concat("", [
		"unless it is a dead-letter subscription, which the document cannot show: that rests on deadLetterPolicy of ",
		"Subscription 'orders-push' (a value known only after the update) (label it eventpipe_role=dlq if it is one)",
	])
	[f] := [f | some f in rules.stack_deny_missing_dead_letter_policy] with data.eventpipe.model.resources as s
	f.note == note
	f.msg == concat("", ["EP001: Subscription 'orders-push.dlq-sub' has no dead-letter policy: poison messages are redelivered forever (", note, ")"])
	count([d | some d in data.eventpipe.deny; d.id == "EP001"]) == 0 with data.eventpipe.model.resources as s
	count([w | some w in data.eventpipe.warn; w.id == "EP001"]) == 1 with data.eventpipe.model.resources as s

	# The retry policy rule keeps exempting it: whether it needs one is undecided.
	count(rules.deny_retry_policy) == 0 with data.eventpipe.model.resources as s
}

test_opted_out_subscription_not_denied if {
	opted := fx.with_props(fx.without_prop(sub, "deadLetterPolicy"), {"labels": {"eventpipe_dlq_opt_out": "true"}})
	count(rules.stack_deny_missing_dead_letter_policy) == 0 with data.eventpipe.model.resources as fx.swap(fx.good_stack, sub, opted)
}

test_unknown_dead_letter_policy_no_verdict if {
	count(fx.results(with_sub({"deadLetterPolicy": lib.unknown_value}))) == 0
}

# EP004 stack_deny_dead_letter_topic_is_source

test_dead_letter_to_source_topic_deny if {
	s := dead_letter_to("projects/acme-prod/topics/orders")
	fx.messages(rules.stack_deny_dead_letter_topic_is_source) == {"EP004: Subscription 'orders-push' dead-letters into the topic it reads"} with data.eventpipe.model.resources as s
	"deny:EP004" in fx.verdicts(s)
}

test_short_and_full_topic_names_are_one_topic if {
	# topic "orders" (in the subscription's project) and projects/acme-prod/topics/orders.
	s := fx.swap(dead_letter_to("projects/acme-prod/topics/orders"), sub, fx.with_props(sub, {"topic": "orders", "deadLetterPolicy": {"deadLetterTopic": "projects/acme-prod/topics/orders"}}))
	count(rules.stack_deny_dead_letter_topic_is_source) == 1 with data.eventpipe.model.resources as s
	outside := fx.with_props(sub, {"topic": "elsewhere", "deadLetterPolicy": {"deadLetterTopic": "projects/acme-prod/topics/elsewhere"}})
	count(rules.stack_deny_dead_letter_topic_is_source) == 1 with data.eventpipe.model.resources as [outside]
}

test_same_name_in_other_project_is_another_topic if {
	s := with_sub({"topic": "orders", "deadLetterPolicy": {"deadLetterTopic": "projects/other-project/topics/orders"}})
	count(rules.stack_deny_dead_letter_topic_is_source) == 0 with data.eventpipe.model.resources as s
}

test_dead_letter_loop_found_through_property_dependencies if {
	looped := fx.with_links(fx.with_props(sub, {"topic": lib.unknown_value, "deadLetterPolicy": {"deadLetterTopic": lib.unknown_value}}), {"topic": [fx.source_topic.urn], "deadLetterPolicy": [fx.source_topic.urn]})
	count(rules.stack_deny_dead_letter_topic_is_source) == 1 with data.eventpipe.model.resources as fx.swap(fx.good_stack, sub, looped)
}

test_unknown_topics_without_dependencies_no_verdict if {
	blind := fx.with_props(sub, {"topic": lib.unknown_value, "deadLetterPolicy": {"deadLetterTopic": lib.unknown_value}})
	count(fx.results(fx.swap(fx.good_stack, sub, blind))) == 0
}

# EP005 stack_deny_dead_letter_topic_unread

test_dead_letter_topic_unread_deny if {
	s := fx.drop(fx.good_stack, fx.dlq_subscription)
	fx.messages(rules.stack_deny_dead_letter_topic_unread) == {sprintf("EP005: Subscription 'orders-push' dead-letters to %s, which no subscription reads: dead letters would be lost", [fx.dlq_topic.urn])} with data.eventpipe.model.resources as s
}

test_dead_letter_topic_outside_plan_no_verdict if {
	# Its subscriptions, if any, are outside the plan too: nothing the plan shows.
	s := dead_letter_to("projects/other/topics/elsewhere")
	count(rules.stack_deny_dead_letter_topic_unread) == 0 with data.eventpipe.model.resources as s
	count(rules.stack_deny_dead_letter_publisher_grant_missing) == 0 with data.eventpipe.model.resources as s
}

test_reader_the_plan_cannot_show_no_verdict if {
	blind := fx.with_props(fx.dlq_subscription, {"topic": lib.unknown_value})
	count(rules.stack_deny_dead_letter_topic_unread) == 0 with data.eventpipe.model.resources as fx.swap(fx.good_stack, fx.dlq_subscription, blind)
}

# EP006 stack_deny_dead_letter_publisher_grant_missing

test_publisher_grant_missing_deny if {
	s := fx.drop(fx.good_stack, fx.publisher_grant)
	fx.messages(rules.stack_deny_dead_letter_publisher_grant_missing) == {sprintf("EP006: Subscription 'orders-push' dead-letters to %s, but the Pub/Sub service agent has no roles/pubsub.publisher grant there%s", [fx.dlq_topic.urn, unshown_number])} with data.eventpipe.model.resources as s
	fx.verdicts(s) == {"deny:EP006"}
}

test_publisher_grant_to_wrong_member_deny if {
	s := fx.swap(fx.good_stack, fx.publisher_grant, fx.with_props(fx.publisher_grant, {"member": "user:someone@example.com"}))
	count(rules.stack_deny_dead_letter_publisher_grant_missing) == 1 with data.eventpipe.model.resources as s
}

test_project_wide_publisher_grant_pass if {
	project_grant := {"type": lib.project_iam_member_type, "urn": "urn:p", "properties": {"project": "acme-prod", "role": "roles/pubsub.publisher", "member": fx.agent}}
	s := array.concat(fx.drop(fx.good_stack, fx.publisher_grant), [project_grant])
	count(rules.stack_deny_dead_letter_publisher_grant_missing) == 0 with data.eventpipe.model.resources as s
}

test_unresolvable_publisher_grant_no_verdict if {
	s := fx.swap(fx.good_stack, fx.publisher_grant, fx.with_props(fx.publisher_grant, {"topic": lib.unknown_value}))
	count(rules.stack_deny_dead_letter_publisher_grant_missing) == 0 with data.eventpipe.model.resources as s
}

test_publisher_grant_binding_pass if {
	binding := {"type": lib.topic_iam_binding_type, "urn": "urn:b", "properties": {"topic": "orders-push.dlq", "role": "roles/pubsub.publisher", "members": ["user:x@example.com", fx.agent]}}
	s := array.concat(fx.drop(fx.good_stack, fx.publisher_grant), [binding])
	count(rules.stack_deny_dead_letter_publisher_grant_missing) == 0 with data.eventpipe.model.resources as s
}

test_publisher_grant_in_iam_member_project_slash_topic_form_pass if {
	s := fx.swap(fx.good_stack, fx.publisher_grant, fx.with_props(fx.publisher_grant, {"topic": "acme-prod/orders-push.dlq"}))
	count(rules.stack_deny_dead_letter_publisher_grant_missing) == 0 with data.eventpipe.model.resources as s
}

authoritative(data_json) := {
	"type": lib.topic_iam_policy_type, "urn": "urn:policy",
	"properties": {"topic": "projects/acme-prod/topics/orders-push.dlq", "policyData": data_json},
}

test_authoritative_topic_policy_grant_pass if {
	policy := authoritative(json.marshal({"bindings": [{"role": "roles/pubsub.publisher", "members": [fx.agent]}]}))
	s := array.concat(fx.drop(fx.good_stack, fx.publisher_grant), [policy])
	count(fx.results(s)) == 0
}

test_authoritative_topic_policy_without_agent_deny if {
	policy := authoritative(json.marshal({"bindings": [{"role": "roles/pubsub.publisher", "members": ["user:x@example.com"]}]}))
	s := array.concat(fx.drop(fx.good_stack, fx.publisher_grant), [policy])
	fx.verdicts(s) == {"deny:EP006"}
}

test_authoritative_policy_the_plan_cannot_show_no_verdict if {
	s := array.concat(fx.drop(fx.good_stack, fx.publisher_grant), [authoritative(lib.unknown_value)])
	count(fx.results(s)) == 0
}

# The project's own IAM policy (an audit reads it as gcp:projects/iAMPolicy with
# policyData) grants on every topic and subscription of that project, and of no other.
project_policy(project, role) := {
	"type": lib.project_iam_policy_type, "urn": sprintf("urn:project-policy:%s", [project]),
	"properties": {"project": project, "policyData": json.marshal({"bindings": [{"role": role, "members": [fx.agent]}]})},
}

test_project_policy_publisher_grant_covers_its_project if {
	s := array.concat(fx.drop(fx.good_stack, fx.publisher_grant), [project_policy("acme-prod", "roles/pubsub.publisher")])
	count(fx.results(s)) == 0
}

test_project_policy_publisher_grant_on_another_project_deny if {
	s := array.concat(fx.drop(fx.good_stack, fx.publisher_grant), [project_policy("acme-dev", "roles/pubsub.publisher")])
	fx.verdicts(s) == {"deny:EP006"}
}

test_project_policy_subscriber_grant_covers_its_project_only if {
	mine := array.concat(fx.drop(fx.good_stack, fx.subscriber_grant), [project_policy("acme-prod", "roles/pubsub.subscriber")])
	count(fx.results(mine)) == 0
	theirs := array.concat(fx.drop(fx.good_stack, fx.subscriber_grant), [project_policy("acme-dev", "roles/pubsub.subscriber")])
	fx.verdicts(theirs) == {"deny:EP007"}
}

test_unreadable_project_policy_withholds_only_its_project if {
	unread := object.union(project_policy("acme-dev", ""), {"properties": {"project": "acme-dev", "policyData": lib.unknown_value}})
	fx.verdicts(array.concat(fx.drop(fx.good_stack, fx.publisher_grant), [unread])) == {"deny:EP006"}
	same := object.union(unread, {"properties": {"project": "acme-prod", "policyData": lib.unknown_value}})
	count(fx.results(array.concat(fx.drop(fx.good_stack, fx.publisher_grant), [same]))) == 0
}

# EP007 stack_deny_dead_letter_subscriber_grant_missing

test_subscriber_grant_missing_deny if {
	s := fx.drop(fx.good_stack, fx.subscriber_grant)
	fx.messages(rules.stack_deny_dead_letter_subscriber_grant_missing) == {concat("", ["EP007: Subscription 'orders-push' dead-letters, but the Pub/Sub service agent has no roles/pubsub.subscriber grant on it", unshown_number])} with data.eventpipe.model.resources as s
	fx.verdicts(s) == {"deny:EP007"}
}

test_subscriber_grant_through_dependencies_pass if {
	linked := fx.with_links(fx.with_props(fx.subscriber_grant, {"subscription": lib.unknown_value}), {"subscription": [sub.urn]})
	count(rules.stack_deny_dead_letter_subscriber_grant_missing) == 0 with data.eventpipe.model.resources as fx.swap(fx.good_stack, fx.subscriber_grant, linked)
}

test_subscriber_grant_with_wrong_role_deny if {
	s := fx.swap(fx.good_stack, fx.subscriber_grant, fx.with_props(fx.subscriber_grant, {"role": "roles/pubsub.viewer"}))
	count(rules.stack_deny_dead_letter_subscriber_grant_missing) == 1 with data.eventpipe.model.resources as s
}

test_authoritative_subscription_policy_grant_pass if {
	policy := {"type": lib.subscription_iam_policy_type, "urn": "urn:policy", "properties": {
		"subscription": "projects/acme-prod/subscriptions/orders-push",
		"policyData": json.marshal({"bindings": [{"role": "roles/pubsub.subscriber", "members": [fx.agent]}]}),
	}}
	count(fx.results(array.concat(fx.drop(fx.good_stack, fx.subscriber_grant), [policy]))) == 0
}

# EP013 stack_warn_dlq_retention_short

test_dlq_retention_default_pass if {
	s := fx.swap(fx.good_stack, fx.dlq_subscription, fx.without_prop(fx.dlq_subscription, "messageRetentionDuration"))
	count(fx.results(s)) == 0
}

test_dlq_retention_short_warns if {
	s := fx.swap(fx.good_stack, fx.dlq_subscription, fx.with_props(fx.dlq_subscription, {"messageRetentionDuration": "86400s"}))
	fx.messages(rules.stack_warn_dlq_retention_short) == {"EP013: Subscription 'orders-push.dlq-sub' keeps dead letters for 1d; messageRetentionDuration must be at least 7d for triage"} with data.eventpipe.model.resources as s
	fx.verdicts(s) == {"warn:EP013"}
}

test_dlq_retention_of_structural_dlq_warns if {
	bare := fx.with_props(fx.without_prop(fx.dlq_subscription, "labels"), {"messageRetentionDuration": "86400s"})
	fx.verdicts(fx.swap(fx.good_stack, fx.dlq_subscription, bare)) == {"warn:EP013"}
}

test_source_retention_short_not_flagged if {
	count(fx.results(with_sub({"messageRetentionDuration": "600s"}))) == 0
}

unshown_number := "; the document does not show the number of the subscription's project acme-prod, so a grant to any project's Pub/Sub agent would have been accepted"

# EP006 and EP007 name the agent of the subscription's project: a table built over
# {same project, cross project} x {grants to the subscription's project's agent, to the
# dead-letter topic's project's agent, to both} x {the subscription project's number
# shown, not shown}. Where the number is shown only that agent counts; where it is not,
# any agent does (and a finding would say so).

project_numbers := {"acme-prod": "111111", "acme-dlq": "222222"}

agent_of(project) := sprintf("serviceAccount:service-%s@gcp-sa-pubsub.iam.gserviceaccount.com", [project_numbers[project]])

agent_table := [[placement, grantee, shown] |
	some placement in ["same project", "cross project"]
	some grantee in ["subscription's agent", "dead-letter project's agent", "both"]
	some shown in [true, false]
]

# numbers_shown(shown) are the project numbers the document shows: when the subscription
# project's is not, the dead-letter project's still is (it must not stand in for it).
numbers_shown(true) := project_numbers

numbers_shown(false) := {"acme-dlq": "222222"}

dlq_project("same project") := "acme-prod"

dlq_project("cross project") := "acme-dlq"

granted("subscription's agent", _) := {agent_of("acme-prod")}

granted("dead-letter project's agent", dlq) := {agent_of(dlq)}

granted("both", dlq) := {agent_of("acme-prod"), agent_of(dlq)}

# agent_stack is the healthy stack with its dead-letter topic (and DLQ subscription) in
# the placement's project and its two grants made, one member resource each, to grantee.
agent_stack(placement, grantee) := array.concat(fx.drop(fx.drop(fx.drop(fx.drop(fx.drop(fx.good_stack, fx.publisher_grant), fx.subscriber_grant), fx.dlq_topic), fx.dlq_subscription), sub), array.concat(
	[
		fx.with_props(fx.dlq_topic, {"project": dlq}),
		fx.with_props(fx.dlq_subscription, {"project": dlq, "topic": topic}),
		fx.with_props(sub, {"deadLetterPolicy": {"deadLetterTopic": topic, "maxDeliveryAttempts": 5}}),
	],
	[g |
		some member in granted(grantee, dlq)
		some g in [
			object.union(fx.with_props(fx.publisher_grant, {"topic": topic, "member": member}), {"urn": concat("-", [fx.publisher_grant.urn, member])}),
			object.union(fx.with_props(fx.subscriber_grant, {"member": member}), {"urn": concat("-", [fx.subscriber_grant.urn, member])}),
		]
	],
)) if {
	dlq := dlq_project(placement)
	topic := sprintf("projects/%s/topics/orders-push.dlq", [dlq])
}

# agent_verdict is what a correct check says: only a cross-project dead-letter topic whose
# grants go to the dead-letter project's agent alone, with the subscription project's
# number shown, is denied, on both grants.
agent_verdict("cross project", "dead-letter project's agent", true) := {"EP006", "EP007"}

agent_verdict(placement, grantee, shown) := set() if {
	not [placement, grantee, shown] == ["cross project", "dead-letter project's agent", true]
}

# grant_rule_ids are the ids EP006 and EP007 report (the stack is healthy otherwise).
grant_rule_ids := fx.ids(rules.stack_deny_dead_letter_publisher_grant_missing) | fx.ids(rules.stack_deny_dead_letter_subscriber_grant_missing)

test_dead_letter_grants_name_the_subscription_projects_agent if {
	count(agent_table) == 12
	every c in agent_table {
		got := grant_rule_ids with data.eventpipe.model.resources as agent_stack(c[0], c[1])
			with data.eventpipe.model.project_numbers as numbers_shown(c[2])
		got == agent_verdict(c[0], c[1], c[2])
	}
}

test_cross_project_grant_to_the_wrong_agent_names_the_right_one if {
	s := agent_stack("cross project", "dead-letter project's agent")
	fx.messages(rules.stack_deny_dead_letter_subscriber_grant_missing) == {concat("", [
		"EP007: Subscription 'orders-push' dead-letters, but the Pub/Sub service agent has no roles/pubsub.subscriber grant on it; ",
		"Pub/Sub dead-letters as the service agent of the subscription's project acme-prod, ",
		"serviceAccount:service-111111@gcp-sa-pubsub.iam.gserviceaccount.com, and grants to other projects' agents do not count",
	])} with data.eventpipe.model.resources as s with data.eventpipe.model.project_numbers as project_numbers
}

# wide_stack(member) is the cross-project stack with its publisher grant made project-wide
# on the dead-letter project, to member.
wide_stack(member) := array.concat(
	fx.drop(agent_stack("cross project", "subscription's agent"), object.union(fx.publisher_grant, {"urn": concat("-", [fx.publisher_grant.urn, agent_of("acme-prod")])})),
	[{"type": lib.project_iam_member_type, "urn": "urn:p", "properties": {"project": "acme-dlq", "role": "roles/pubsub.publisher", "member": member}}],
)

test_project_wide_grant_counts_only_for_the_subscription_projects_agent if {
	count(rules.stack_deny_dead_letter_publisher_grant_missing) == 0 with data.eventpipe.model.resources as wide_stack(agent_of("acme-prod")) with data.eventpipe.model.project_numbers as project_numbers
	count(rules.stack_deny_dead_letter_publisher_grant_missing) == 1 with data.eventpipe.model.resources as wide_stack(agent_of("acme-dlq")) with data.eventpipe.model.project_numbers as project_numbers
}
