package eventpipe

import rego.v1

# Tests of the alert coverage rules (EP101-EP104). The policies below are shaped like the
# alerts component's output: threshold filters and PromQL queries naming subscription_id.

alert_policy(name, conditions) := {
	"type": alert_policy_type,
	"urn": urn(alert_policy_type, name),
	"name": name,
	"properties": {"displayName": name, "combiner": "OR", "severity": "WARNING", "conditions": conditions},
}

threshold_on(metric, sub) := {"displayName": "c", "conditionThreshold": {
	"filter": sprintf(`metric.type="pubsub.googleapis.com/subscription/%s" AND resource.type="pubsub_subscription" AND resource.labels.subscription_id="%s"`, [metric, sub]),
	"comparison": "COMPARISON_GT",
	"duration": "300s",
}}

promql_on(metric, sub) := {"displayName": "c", "conditionPrometheusQueryLanguage": {"query": sprintf(`deriv(pubsub_googleapis_com:subscription_%s{monitored_resource="pubsub_subscription",subscription_id="%s"}[10m]) > 0`, [metric, sub])}}

dlq_alert := alert_policy("orders-orders-push-dlq-warning", [threshold_on("num_undelivered_messages", "orders-push.dlq-sub")])

backlog_alert := alert_policy("orders-orders-push-backlog-age-warning", [threshold_on("oldest_unacked_message_age", "orders-push")])

alerted_stack := array.concat(good_stack, [dlq_alert, backlog_alert])

alert_findings := ((stack_deny_subscription_without_dlq_alert | stack_warn_subscription_without_dlq_alert) | stack_deny_subscription_without_backlog_alert) | stack_warn_subscription_without_backlog_alert

test_alerted_stack_passes if {
	count(alert_findings) == 0 with input as stack_with(alerted_stack)
}

test_alerted_stack_passes_other_rules if {
	count(all_stack_findings) == 0 with input as stack_with(alerted_stack)
}

# EP101 stack_deny_subscription_without_dlq_alert

test_prod_subscription_without_dlq_alert_denied if {
	s := drop(alerted_stack, dlq_alert)
	stack_deny_subscription_without_dlq_alert == {sprintf("%s: Subscription 'orders-push' dead-letters, but no alert policy watches its dead letters in environment \"prod\"", [good_subscription.urn])} with input as stack_with(s)
	count(stack_warn_subscription_without_dlq_alert) == 0 with input as stack_with(s)
}

test_dead_letter_count_on_source_counts_as_dlq_alert if {
	by_count := alert_policy("by-count", [threshold_on("dead_letter_message_count", "orders-push")])
	s := array.concat(drop(alerted_stack, dlq_alert), [by_count])
	count(stack_deny_subscription_without_dlq_alert | stack_warn_subscription_without_dlq_alert) == 0 with input as stack_with(s)
}

test_dlq_alert_on_other_subscription_does_not_count if {
	elsewhere := alert_policy("elsewhere", [threshold_on("num_undelivered_messages", "orders-push.dlq-sub-old")])
	s := array.concat(drop(alerted_stack, dlq_alert), [elsewhere])
	count(stack_deny_subscription_without_dlq_alert) == 1 with input as stack_with(s)
}

test_wrong_metric_on_dlq_does_not_count if {
	wrong := alert_policy("wrong", [threshold_on("ack_message_count", "orders-push.dlq-sub")])
	s := array.concat(drop(alerted_stack, dlq_alert), [wrong])
	count(stack_deny_subscription_without_dlq_alert) == 1 with input as stack_with(s)
}

test_disabled_dlq_alert_does_not_count if {
	off := object.union(dlq_alert, {"properties": object.union(dlq_alert.properties, {"enabled": false})})
	s := replace(alerted_stack, dlq_alert, off)
	count(stack_deny_subscription_without_dlq_alert) == 1 with input as stack_with(s)
}

test_promql_dlq_alert_counts if {
	pq := alert_policy("pq", [promql_on("num_undelivered_messages", "orders-push.dlq-sub")])
	s := array.concat(drop(alerted_stack, dlq_alert), [pq])
	count(alert_findings) == 0 with input as stack_with(s)
}

test_unknown_alert_conditions_no_verdict if {
	blind := object.union(dlq_alert, {"properties": object.union(dlq_alert.properties, {"conditions": unknown_value})})
	s := array.concat(drop(alerted_stack, dlq_alert), [blind])
	count(alert_findings) == 0 with input as stack_with(s)
}

test_opted_out_subscription_needs_no_dlq_alert if {
	opted := with_props(without_prop(good_subscription, "deadLetterPolicy"), {"labels": {"eventpipe_dlq_opt_out": "true", "eventpipe_env": "prod"}})
	s := replace(drop(alerted_stack, dlq_alert), good_subscription, opted)
	count(stack_deny_subscription_without_dlq_alert) == 0 with input as stack_with(s)
}

# EP102 stack_warn_subscription_without_dlq_alert

test_dev_subscription_without_dlq_alert_warns if {
	dev := with_props(good_subscription, {"labels": {"eventpipe_role": "consumer", "eventpipe_env": "dev"}})
	s := replace(drop(alerted_stack, dlq_alert), good_subscription, dev)
	count(stack_deny_subscription_without_dlq_alert) == 0 with input as stack_with(s)
	stack_warn_subscription_without_dlq_alert == {sprintf("%s: Subscription 'orders-push' dead-letters, but no alert policy watches its dead letters", [good_subscription.urn])} with input as stack_with(s)
}

test_dlq_alert_strictness_configurable if {
	dev := with_props(good_subscription, {"labels": {"eventpipe_role": "consumer", "eventpipe_env": "dev"}})
	s := replace(drop(alerted_stack, dlq_alert), good_subscription, dev)
	count(stack_deny_subscription_without_dlq_alert) == 1 with input as stack_with(s) with data.config as {"stack_deny_subscription_without_dlq_alert": {"environments": ["dev", "prod"]}}
	count(stack_deny_subscription_without_dlq_alert) == 1 with input as stack_with(s) with data.config as {"stack_deny_subscription_without_dlq_alert": {"enforce": true}}
	count(stack_warn_subscription_without_dlq_alert) == 0 with input as stack_with(s) with data.config as {"stack_deny_subscription_without_dlq_alert": {"enforce": true}}
}

test_prod_relaxed_by_configuration if {
	s := drop(alerted_stack, dlq_alert)
	count(stack_deny_subscription_without_dlq_alert) == 0 with input as stack_with(s) with data.config as {"stack_deny_subscription_without_dlq_alert": {"environments": []}}
	count(stack_warn_subscription_without_dlq_alert) == 1 with input as stack_with(s) with data.config as {"stack_deny_subscription_without_dlq_alert": {"environments": []}}
}

# EP103 stack_deny_subscription_without_backlog_alert

test_prod_subscription_without_backlog_alert_denied if {
	s := drop(alerted_stack, backlog_alert)
	alert_findings == {sprintf("%s: Subscription 'orders-push' has no backlog alert in environment \"prod\"", [good_subscription.urn])} with input as stack_with(s)
}

test_dlq_subscription_backlog_covered_by_dlq_alert if {
	# The DLQ alert watches the DLQ subscription's undelivered messages: that is its backlog alert.
	count(stack_deny_subscription_without_backlog_alert) == 0 with input as stack_with(alerted_stack)
	s := drop(alerted_stack, dlq_alert)
	not stack_deny_subscription_without_backlog_alert[sprintf("%s: Subscription 'orders-push.dlq-sub' has no backlog alert in environment \"prod\"", [dlq_subscription_resource.urn])] with input as stack_with(s)
}

test_dlq_subscription_without_any_alert if {
	# Without the DLQ alert the DLQ subscription has no backlog alert either; it has no
	# eventpipe_env label, so the environment comes from the check configuration.
	s := drop(alerted_stack, dlq_alert)
	msgs := stack_deny_subscription_without_backlog_alert with input as stack_with(s) with data.config as {"environment": "prod"}
	msgs == {sprintf("%s: Subscription 'orders-push.dlq-sub' has no backlog alert in environment \"prod\"", [dlq_subscription_resource.urn])}
}

test_promql_backlog_alert_counts if {
	growth := alert_policy("growth", [promql_on("num_undelivered_messages", "orders-push")])
	s := array.concat(drop(alerted_stack, backlog_alert), [growth])
	count(stack_deny_subscription_without_backlog_alert) == 0 with input as stack_with(s)
}

test_spaced_filter_counts if {
	spaced := alert_policy("spaced", [{"displayName": "c", "conditionThreshold": {"filter": `metric.type = "pubsub.googleapis.com/subscription/oldest_unacked_message_age" AND resource.labels.subscription_id = "orders-push"`}}])
	s := array.concat(drop(alerted_stack, backlog_alert), [spaced])
	count(stack_deny_subscription_without_backlog_alert) == 0 with input as stack_with(s)
}

test_unknown_subscription_name_no_verdict if {
	blind := with_props(good_subscription, {"name": unknown_value})
	s := replace(drop(drop(alerted_stack, backlog_alert), dlq_alert), good_subscription, blind)
	not stack_deny_subscription_without_backlog_alert[sprintf("%s: Subscription 'orders-push' has no backlog alert in environment \"prod\"", [good_subscription.urn])] with input as stack_with(s)
}

# EP104 stack_warn_subscription_without_backlog_alert

test_staging_subscription_without_backlog_alert_warns if {
	staging := with_props(good_subscription, {"labels": {"eventpipe_role": "consumer", "eventpipe_env": "staging"}})
	s := replace(drop(alerted_stack, backlog_alert), good_subscription, staging)
	count(stack_deny_subscription_without_backlog_alert) == 0 with input as stack_with(s)
	stack_warn_subscription_without_backlog_alert == {sprintf("%s: Subscription 'orders-push' has no backlog alert", [good_subscription.urn])} with input as stack_with(s)
}

# The condition index (watched) finds every subscription a condition names, and only those.

test_one_condition_watching_two_subscriptions_counts_for_both if {
	both := alert_policy("both", [{"displayName": "c", "conditionThreshold": {"filter": `metric.type="pubsub.googleapis.com/subscription/oldest_unacked_message_age" AND (resource.labels.subscription_id="other" OR resource.labels.subscription_id="orders-push")`}}])
	s := array.concat(drop(alerted_stack, backlog_alert), [both])
	count(stack_deny_subscription_without_backlog_alert) == 0 with input as stack_with(s)
}

test_longer_subscription_id_does_not_count if {
	longer := alert_policy("longer", [threshold_on("oldest_unacked_message_age", "orders-push-2")])
	s := array.concat(drop(alerted_stack, backlog_alert), [longer])
	count(stack_deny_subscription_without_backlog_alert) == 1 with input as stack_with(s)
}

test_subscription_id_outside_pubsub_characters_still_matched if {
	# An ID with a quote is not one the index can find; such IDs are searched for in every
	# condition, by their quoted form.
	odd := with_props(good_subscription, {"name": `orders"push`})
	watching := alert_policy("odd", [{"displayName": "c", "conditionThreshold": {"filter": `metric.type="pubsub.googleapis.com/subscription/oldest_unacked_message_age" AND resource.labels.subscription_id="orders\"push"`}}])
	s := array.concat(replace(drop(alerted_stack, backlog_alert), good_subscription, odd), [watching])
	count(stack_deny_subscription_without_backlog_alert) == 0 with input as stack_with(s)
	count(stack_deny_subscription_without_backlog_alert) == 1 with input as stack_with(replace(drop(alerted_stack, backlog_alert), good_subscription, odd))
}
