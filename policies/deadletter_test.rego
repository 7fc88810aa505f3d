package eventpipe

import rego.v1

# Cross-resource dead-letter rules: each test mutates the healthy stack once.

stack_with(s) := {"resources": s}

# EP001 stack_deny_missing_dead_letter_policy

test_missing_dead_letter_policy_deny if {
	s := replace(good_stack, good_subscription, without_prop(good_subscription, "deadLetterPolicy"))
	msgs := stack_deny_missing_dead_letter_policy with input as stack_with(s)
	msgs == {sprintf("%s: Subscription 'orders-push' has no dead-letter policy: poison messages are redelivered forever", [good_subscription.urn])}
	all_stack_findings == msgs with input as stack_with(s)
}

test_dlq_subscription_recognised_without_labels if {
	unlabelled := without_prop(dlq_subscription_resource, "labels")
	s := replace(good_stack, dlq_subscription_resource, unlabelled)
	count(stack_deny_missing_dead_letter_policy) == 0 with input as stack_with(s)
}

test_opted_out_subscription_not_denied if {
	opted := with_props(without_prop(good_subscription, "deadLetterPolicy"), {"labels": {"eventpipe_dlq_opt_out": "true"}})
	count(stack_deny_missing_dead_letter_policy) == 0 with input as stack_with(replace(good_stack, good_subscription, opted))
}

test_unknown_dead_letter_policy_no_verdict if {
	s := replace(good_stack, good_subscription, with_props(good_subscription, {"deadLetterPolicy": unknown_value}))
	count(stack_deny_missing_dead_letter_policy) == 0 with input as stack_with(s)
}

# EP004 stack_deny_dead_letter_topic_is_source

test_dead_letter_to_source_topic_deny if {
	looped := with_props(good_subscription, {"deadLetterPolicy": {"deadLetterTopic": "projects/acme-prod/topics/orders", "maxDeliveryAttempts": 5}})
	s := replace(good_stack, good_subscription, looped)
	all_stack_findings == {sprintf("%s: Subscription 'orders-push' dead-letters into the topic it reads", [good_subscription.urn])} with input as stack_with(s)
}

test_dead_letter_loop_found_through_property_dependencies if {
	# Both topics unknown at preview time: the link is in propertyDependencies.
	looped := object.union(
		with_props(good_subscription, {"topic": unknown_value, "deadLetterPolicy": {"deadLetterTopic": unknown_value}}),
		{"propertyDependencies": {"topic": [source_topic.urn], "deadLetterPolicy": [source_topic.urn]}},
	)
	count(stack_deny_dead_letter_topic_is_source) == 1 with input as stack_with(replace(good_stack, good_subscription, looped))
}

test_unknown_topics_without_dependencies_no_verdict if {
	blind := with_props(good_subscription, {"topic": unknown_value, "deadLetterPolicy": {"deadLetterTopic": unknown_value}})
	count(all_stack_findings) == 0 with input as stack_with(replace(good_stack, good_subscription, blind))
}

test_distinct_dependencies_pass if {
	linked := object.union(
		with_props(good_subscription, {"topic": unknown_value, "deadLetterPolicy": {"deadLetterTopic": unknown_value}}),
		{"propertyDependencies": {"topic": [source_topic.urn], "deadLetterPolicy": [dlq_topic.urn]}},
	)
	count(all_stack_findings) == 0 with input as stack_with(replace(good_stack, good_subscription, linked))
}

# EP005 stack_deny_dead_letter_topic_unread

test_dead_letter_topic_unread_deny if {
	s := drop(good_stack, dlq_subscription_resource)
	all_stack_findings == {sprintf("%s: Subscription 'orders-push' dead-letters to %s, which no subscription reads: dead letters would be lost", [good_subscription.urn, dlq_topic.urn])} with input as stack_with(s)
}

test_dead_letter_topic_outside_plan_unread_deny if {
	external := with_props(good_subscription, {"deadLetterPolicy": {"deadLetterTopic": "projects/other/topics/elsewhere"}})
	msgs := stack_deny_dead_letter_topic_unread with input as stack_with(replace(good_stack, good_subscription, external))
	count(msgs) == 1
}

# EP006 stack_deny_dead_letter_publisher_grant_missing

test_publisher_grant_missing_deny if {
	s := drop(good_stack, publisher_grant)
	all_stack_findings == {sprintf("%s: Subscription 'orders-push' dead-letters to %s, but the Pub/Sub service agent has no roles/pubsub.publisher grant there", [good_subscription.urn, dlq_topic.urn])} with input as stack_with(s)
}

test_publisher_grant_to_wrong_member_deny if {
	s := replace(good_stack, publisher_grant, with_props(publisher_grant, {"member": "user:someone@example.com"}))
	count(stack_deny_dead_letter_publisher_grant_missing) == 1 with input as stack_with(s)
}

test_project_wide_publisher_grant_pass if {
	project_grant_resource := {"type": project_iam_member_type, "urn": "urn:p", "name": "p", "properties": {"project": "acme-prod", "role": "roles/pubsub.publisher", "member": agent}}
	s := array.concat(drop(good_stack, publisher_grant), [project_grant_resource])
	count(stack_deny_dead_letter_publisher_grant_missing) == 0 with input as stack_with(s)
}

test_unresolvable_publisher_grant_no_verdict if {
	s := replace(good_stack, publisher_grant, with_props(publisher_grant, {"topic": unknown_value}))
	count(stack_deny_dead_letter_publisher_grant_missing) == 0 with input as stack_with(s)
}

test_publisher_grant_binding_pass if {
	binding := {"type": topic_iam_binding_type, "urn": "urn:b", "name": "b", "properties": {"topic": "orders-push.dlq", "role": "roles/pubsub.publisher", "members": ["user:x@example.com", agent]}}
	s := array.concat(drop(good_stack, publisher_grant), [binding])
	count(stack_deny_dead_letter_publisher_grant_missing) == 0 with input as stack_with(s)
}

# EP007 stack_deny_dead_letter_subscriber_grant_missing

test_subscriber_grant_missing_deny if {
	s := drop(good_stack, subscriber_grant)
	all_stack_findings == {sprintf("%s: Subscription 'orders-push' dead-letters, but the Pub/Sub service agent has no roles/pubsub.subscriber grant on it", [good_subscription.urn])} with input as stack_with(s)
}

test_subscriber_grant_through_dependencies_pass if {
	linked := object.union(with_props(subscriber_grant, {"subscription": unknown_value}), {"propertyDependencies": {"subscription": [good_subscription.urn]}})
	count(stack_deny_dead_letter_subscriber_grant_missing) == 0 with input as stack_with(replace(good_stack, subscriber_grant, linked))
}

test_subscriber_grant_with_wrong_role_deny if {
	s := replace(good_stack, subscriber_grant, with_props(subscriber_grant, {"role": "roles/pubsub.viewer"}))
	count(stack_deny_dead_letter_subscriber_grant_missing) == 1 with input as stack_with(s)
}

# EP013 stack_warn_dlq_retention_short

test_dlq_retention_default_pass if {
	s := replace(good_stack, dlq_subscription_resource, without_prop(dlq_subscription_resource, "messageRetentionDuration"))
	count(stack_warn_dlq_retention_short) == 0 with input as stack_with(s)
}

test_dlq_retention_short_warns if {
	s := replace(good_stack, dlq_subscription_resource, with_props(dlq_subscription_resource, {"messageRetentionDuration": "86400s"}))
	all_stack_findings == {sprintf("%s: Subscription 'orders-push.dlq-sub' keeps dead letters for 1 days; keep them at least 7 days for triage", [dlq_subscription_resource.urn])} with input as stack_with(s)
}

test_source_retention_short_not_flagged if {
	s := replace(good_stack, good_subscription, with_props(good_subscription, {"messageRetentionDuration": "600s"}))
	count(stack_warn_dlq_retention_short) == 0 with input as stack_with(s)
}
