package eventpipe.alerts_test

import rego.v1

import data.eventpipe.fixtures_test as fx
import data.eventpipe.lib
import data.eventpipe.rules

# Tests of the alert coverage rules (EP101-EP104) on the healthy stack, whose alert
# policies (fx.dlq_alert, fx.backlog_alert) are shaped like the alerts component's output.

sub := fx.good_subscription

without_dlq_alert := fx.drop(fx.good_stack, fx.dlq_alert)

without_backlog_alert := fx.drop(fx.good_stack, fx.backlog_alert)

alert_rule_ids := {"EP101", "EP102", "EP103", "EP104"}

alert_verdicts(s) := {v | some v in fx.verdicts(s); substring(v, count(v) - 5, 5) in alert_rule_ids}

# EP101 stack_deny_subscription_without_dlq_alert

test_prod_subscription_without_dlq_alert_denied if {
	fx.messages(rules.stack_deny_subscription_without_dlq_alert) == {`EP101: Subscription 'orders-push' dead-letters, but no alert policy watches its dead letters in environment "prod"`} with data.eventpipe.model.resources as without_dlq_alert
	count(rules.stack_warn_subscription_without_dlq_alert) == 0 with data.eventpipe.model.resources as without_dlq_alert
}

test_dead_letter_count_on_source_counts_as_dlq_alert if {
	by_count := fx.alert_policy("by-count", [fx.threshold_on("dead_letter_message_count", "orders-push")])
	s := array.concat(without_dlq_alert, [by_count])
	not "deny:EP101" in alert_verdicts(s)
}

test_dlq_alert_on_other_subscription_does_not_count if {
	elsewhere := fx.alert_policy("elsewhere", [fx.threshold_on("num_undelivered_messages", "orders-push.dlq-sub-old")])
	count(rules.stack_deny_subscription_without_dlq_alert) == 1 with data.eventpipe.model.resources as array.concat(without_dlq_alert, [elsewhere])
}

test_wrong_metric_on_dlq_does_not_count if {
	wrong := fx.alert_policy("wrong", [fx.threshold_on("ack_message_count", "orders-push.dlq-sub")])
	count(rules.stack_deny_subscription_without_dlq_alert) == 1 with data.eventpipe.model.resources as array.concat(without_dlq_alert, [wrong])
}

test_disabled_dlq_alert_does_not_count if {
	off := fx.with_props(fx.dlq_alert, {"enabled": false})
	count(rules.stack_deny_subscription_without_dlq_alert) == 1 with data.eventpipe.model.resources as fx.swap(fx.good_stack, fx.dlq_alert, off)
}

test_promql_dlq_alert_counts if {
	pq := fx.alert_policy("pq", [fx.promql_on("num_undelivered_messages", "orders-push.dlq-sub")])
	count(fx.results(array.concat(without_dlq_alert, [pq]))) == 0
}

test_unknown_alert_conditions_no_verdict if {
	blind := fx.with_props(fx.dlq_alert, {"conditions": lib.unknown_value})
	count(alert_verdicts(fx.swap(fx.good_stack, fx.dlq_alert, blind))) == 0
}

test_unknown_dead_letter_topic_no_dlq_alert_verdict if {
	blind := fx.with_props(sub, {"deadLetterPolicy": {"deadLetterTopic": lib.unknown_value}})
	count(alert_verdicts(fx.swap(without_dlq_alert, sub, blind))) == 1 # EP103 for the DLQ subscription's backlog only
	not "deny:EP101" in alert_verdicts(fx.swap(without_dlq_alert, sub, blind))
}

test_opted_out_subscription_needs_no_dlq_alert if {
	opted := fx.with_props(fx.without_prop(sub, "deadLetterPolicy"), {"labels": {"eventpipe_dlq_opt_out": "true", "eventpipe_env": "prod"}})
	count(rules.stack_deny_subscription_without_dlq_alert) == 0 with data.eventpipe.model.resources as fx.swap(without_dlq_alert, sub, opted)
}

# EP102 stack_warn_subscription_without_dlq_alert

dev_sub := fx.with_props(sub, {"labels": {"eventpipe_role": "consumer", "eventpipe_env": "dev"}})

test_dev_subscription_without_dlq_alert_warns if {
	s := fx.swap(without_dlq_alert, sub, dev_sub)
	count(rules.stack_deny_subscription_without_dlq_alert) == 0 with data.eventpipe.model.resources as s
	fx.messages(rules.stack_warn_subscription_without_dlq_alert) == {"EP102: Subscription 'orders-push' dead-letters, but no alert policy watches its dead letters"} with data.eventpipe.model.resources as s
}

test_dlq_alert_strictness_configurable if {
	s := fx.swap(without_dlq_alert, sub, dev_sub)
	count(rules.stack_deny_subscription_without_dlq_alert) == 1 with data.eventpipe.model.resources as s with data.config as {"stack_deny_subscription_without_dlq_alert": {"environments": ["dev", "prod"]}}
	count(rules.stack_deny_subscription_without_dlq_alert) == 1 with data.eventpipe.model.resources as s with data.config as {"stack_deny_subscription_without_dlq_alert": {"enforce": true}}
	count(rules.stack_warn_subscription_without_dlq_alert) == 0 with data.eventpipe.model.resources as s with data.config as {"stack_deny_subscription_without_dlq_alert": {"enforce": true}}
}

test_prod_relaxed_by_configuration if {
	cfg := {"stack_deny_subscription_without_dlq_alert": {"environments": []}}
	count(rules.stack_deny_subscription_without_dlq_alert) == 0 with data.eventpipe.model.resources as without_dlq_alert with data.config as cfg
	count(rules.stack_warn_subscription_without_dlq_alert) == 1 with data.eventpipe.model.resources as without_dlq_alert with data.config as cfg
}

# EP103 stack_deny_subscription_without_backlog_alert

test_prod_subscription_without_backlog_alert_denied if {
	fx.messages(rules.stack_deny_subscription_without_backlog_alert) == {`EP103: Subscription 'orders-push' has no backlog alert in environment "prod"`} with data.eventpipe.model.resources as without_backlog_alert
	alert_verdicts(without_backlog_alert) == {"deny:EP103"}
}

test_dlq_subscription_backlog_covered_by_dlq_alert if {
	# The DLQ alert watches the DLQ subscription's undelivered messages: that is its
	# backlog alert. Without it the DLQ subscription has no backlog alert either; it has no
	# eventpipe_env label, so the environment comes from the check configuration.
	fx.messages(rules.stack_deny_subscription_without_backlog_alert) == {`EP103: Subscription 'orders-push.dlq-sub' has no backlog alert in environment "prod"`} with data.eventpipe.model.resources as without_dlq_alert with data.config as {"environment": "prod"}
}

test_promql_backlog_alert_counts if {
	growth := fx.alert_policy("growth", [fx.promql_on("num_undelivered_messages", "orders-push")])
	count(alert_verdicts(array.concat(without_backlog_alert, [growth]))) == 0
}

test_spaced_filter_counts if {
	spaced := fx.alert_policy("spaced", [{"displayName": "c", "conditionThreshold": {"filter": `metric.type = "pubsub.googleapis.com/subscription/oldest_unacked_message_age" AND resource.labels.subscription_id = "orders-push"`}}])
	count(alert_verdicts(array.concat(without_backlog_alert, [spaced]))) == 0
}

test_unknown_subscription_name_no_verdict if {
	blind := fx.with_props(sub, {"name": lib.unknown_value})
	count(rules.stack_deny_subscription_without_backlog_alert) == 0 with data.eventpipe.model.resources as fx.swap(without_backlog_alert, sub, blind)
}

test_full_subscription_name_is_its_id if {
	full := fx.with_props(sub, {"name": "projects/acme-prod/subscriptions/orders-push"})
	count(alert_verdicts(fx.swap(fx.good_stack, sub, full))) == 0
}

# EP104 stack_warn_subscription_without_backlog_alert

test_staging_subscription_without_backlog_alert_warns if {
	staging := fx.with_props(sub, {"labels": {"eventpipe_role": "consumer", "eventpipe_env": "staging"}})
	s := fx.swap(without_backlog_alert, sub, staging)
	count(rules.stack_deny_subscription_without_backlog_alert) == 0 with data.eventpipe.model.resources as s
	fx.messages(rules.stack_warn_subscription_without_backlog_alert) == {"EP104: Subscription 'orders-push' has no backlog alert"} with data.eventpipe.model.resources as s
}

# The condition index (watched) finds every subscription a condition names, and only those.

test_one_condition_watching_two_subscriptions_counts_for_both if {
	both := fx.alert_policy("both", [{"displayName": "c", "conditionThreshold": {"filter": `metric.type="pubsub.googleapis.com/subscription/oldest_unacked_message_age" AND (resource.labels.subscription_id="other" OR resource.labels.subscription_id="orders-push")`}}])
	count(alert_verdicts(array.concat(without_backlog_alert, [both]))) == 0
}

test_longer_subscription_id_does_not_count if {
	longer := fx.alert_policy("longer", [fx.threshold_on("oldest_unacked_message_age", "orders-push-2")])
	count(rules.stack_deny_subscription_without_backlog_alert) == 1 with data.eventpipe.model.resources as array.concat(without_backlog_alert, [longer])
}

test_subscription_id_outside_pubsub_characters_still_matched if {
	# An ID with a quote is not one the index can find; such IDs are searched for in every
	# condition, by their quoted form.
	odd := fx.with_props(sub, {"name": `orders"push`})
	watching := fx.alert_policy("odd", [{"displayName": "c", "conditionThreshold": {"filter": `metric.type="pubsub.googleapis.com/subscription/oldest_unacked_message_age" AND resource.labels.subscription_id="orders\"push"`}}])
	s := fx.swap(without_backlog_alert, sub, odd)
	count(rules.stack_deny_subscription_without_backlog_alert) == 0 with data.eventpipe.model.resources as array.concat(s, [watching])
	count(rules.stack_deny_subscription_without_backlog_alert) == 1 with data.eventpipe.model.resources as s
}

# An alert policy watches the subscriptions of its own project (or of the project its
# condition names as project_id), never a like-named subscription of another project.

in_project(policy, project) := fx.with_props(policy, {"project": project})

test_alert_in_another_project_does_not_count if {
	s := fx.swap(fx.good_stack, fx.backlog_alert, in_project(fx.backlog_alert, "acme-dev"))
	alert_verdicts(s) == {"deny:EP103"}
	count(alert_verdicts(fx.swap(fx.good_stack, fx.backlog_alert, in_project(fx.backlog_alert, "acme-prod")))) == 0
}

test_alert_naming_the_project_counts_from_a_scoping_project if {
	central := fx.alert_policy("central", [{"displayName": "c", "conditionThreshold": {"filter": concat("", [
		`metric.type="pubsub.googleapis.com/subscription/oldest_unacked_message_age" AND `,
		`resource.labels.project_id="acme-prod" AND resource.labels.subscription_id="orders-push"`,
	])}}])
	s := array.concat(fx.drop(fx.good_stack, fx.backlog_alert), [in_project(central, "acme-monitoring")])
	count(alert_verdicts(s)) == 0
}

test_unresolved_alert_policy_withholds_only_its_project if {
	blind := in_project(fx.with_props(fx.dlq_alert, {"conditions": lib.unknown_value}), "acme-dev")
	without := fx.drop(fx.good_stack, fx.backlog_alert)
	alert_verdicts(array.concat(without, [blind])) == {"deny:EP103"}
	same := in_project(blind, "acme-prod")
	count(alert_verdicts(array.concat(without, [same]))) == 0
}
