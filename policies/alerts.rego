package eventpipe

import rego.v1

# Alert coverage rules (issue 6): every subscription that dead-letters has an alert policy
# watching its dead letters, and every subscription has a backlog alert. Mandatory
# (stack_deny_*) in the environments listed in data.config.<rule>.environments (default
# ["prod"]) or everywhere when data.config.<rule>.enforce is true; advisory (stack_warn_*)
# elsewhere. Rule ids EP101-EP104 are reserved for alert rules.
#
# An alert policy watches subscription S for metric M when one of its conditions (a
# threshold or absence filter, or a PromQL or MQL query) names both M and
# subscription_id="S" — the form the alerts component renders and Cloud Monitoring uses.

alert_policy_type := "gcp:monitoring/alertPolicy:AlertPolicy"

# alert_policies is every alert policy of the stack that is not disabled.
alert_policies := [p |
	some p in input.resources
	p.type == alert_policy_type
	prop(p, ["enabled"]) != false
]

# condition_paths are the places a condition names its metric and resource.
condition_paths := [
	["conditionThreshold", "filter"],
	["conditionThreshold", "denominatorFilter"],
	["conditionAbsent", "filter"],
	["conditionPrometheusQueryLanguage", "query"],
	["conditionMonitoringQueryLanguage", "query"],
]

# condition_text(c) joins a condition's filters and queries, with the spaces around "="
# removed so `subscription_id = "x"` and `subscription_id="x"` read the same.
condition_text(c) := text if {
	parts := [v |
		some path in condition_paths
		v := object.get(c, path, null)
		is_string(v)
	]
	text := strings.replace_n({"= ": "="}, strings.replace_n({" =": "="}, concat("\n", parts)))
}

# alert_condition_texts holds the text of every condition of every enabled policy.
alert_condition_texts := {t |
	some p in alert_policies
	conds := prop(p, ["conditions"])
	is_array(conds)
	some c in conds
	t := condition_text(c)
}

# unresolved_alert_policies holds when some policy's conditions are not visible in the
# plan: a missing alert is then no longer certain, so no verdict is given.
unresolved_alert_policies if {
	some p in alert_policies
	not is_array(prop(p, ["conditions"]))
}

unresolved_alert_policies if {
	some text in alert_condition_texts
	contains(text, unknown_value)
}

# watches(text, metric, sub) holds when a condition names Pub/Sub subscription metric
# metric (Cloud Monitoring or PromQL spelling) for subscription sub.
watches(text, metric, sub) if {
	contains(text, sprintf("subscription_id=%q", [sub]))
	pubsub_metric_named(text, metric)
}

pubsub_metric_named(text, metric) if contains(text, sprintf("pubsub.googleapis.com/subscription/%s", [metric]))

pubsub_metric_named(text, metric) if contains(text, sprintf("pubsub_googleapis_com:subscription_%s", [metric]))

# subscription_id(s) is the subscription's ID when the plan shows it.
subscription_id(s) := basename(name) if {
	name := prop(s, ["name"])
	known_string(name)
}

# dlq_alerted(s) holds when a policy watches the dead letters of s: its
# dead_letter_message_count, or the backlog of a subscription reading its dead-letter topic.
dlq_alerted(s) if {
	some text in alert_condition_texts
	watches(text, "dead_letter_message_count", subscription_id(s))
}

dlq_alerted(s) if {
	some t in dead_letter_topic_of(s)
	some u in readers[t]
	d := subscription_by_urn[u]
	some text in alert_condition_texts
	watches(text, "num_undelivered_messages", subscription_id(d))
}

# backlog_alerted(s) holds when a policy watches the backlog of s: its oldest unacked
# message age or its undelivered message count.
backlog_alerted(s) if {
	some text in alert_condition_texts
	some metric in ["oldest_unacked_message_age", "num_undelivered_messages"]
	watches(text, metric, subscription_id(s))
}

# missing_dlq_alert(s) holds for a subscription that dead-letters (to a topic the plan
# resolves) with no alert on its dead letters.
missing_dlq_alert(s) if {
	count(dead_letter_topic_of(s)) > 0
	not dlq_subscriptions[s.urn]
	subscription_id(s)
	not unresolved_alert_policies
	not dlq_alerted(s)
}

# missing_backlog_alert(s) holds for a subscription no policy watches for backlog.
missing_backlog_alert(s) if {
	subscription_id(s)
	not unresolved_alert_policies
	not backlog_alerted(s)
}

# strict_alerts(rule, s) holds when rule is mandatory for the environment of s.
strict_alerts(rule, _) if setting(rule, "enforce", false) == true

strict_alerts(rule, s) if environment(s) in setting(rule, "environments", ["prod"])

# METADATA
# title: Dead-lettering subscription without a DLQ alert (strict environment)
# description: >-
#   Dead letters are messages the consumer never applied. Without an alert policy on the
#   DLQ subscription's num_undelivered_messages or the source's dead_letter_message_count
#   they wait unseen until the DLQ's retention drops them. Mandatory in the environments of
#   data.config.stack_deny_subscription_without_dlq_alert.environments (default ["prod"]),
#   or everywhere when its enforce is true.
# custom:
#   id: EP101
#   severity: high
#   needs_complete_stack: true
#   fix: Keep the pipeline's alerts enabled (the eventpipe Pipeline component creates dlq-warning and dlq-critical policies), or add an alert policy on the DLQ subscription's pubsub.googleapis.com/subscription/num_undelivered_messages.
stack_deny_subscription_without_dlq_alert contains msg if {
	some s in subscriptions
	strict_alerts("stack_deny_subscription_without_dlq_alert", s)
	missing_dlq_alert(s)
	msg := finding(s, sprintf("%s dead-letters, but no alert policy watches its dead letters in environment %q", [display(s), environment(s)]))
}

# METADATA
# title: Dead-lettering subscription without a DLQ alert
# description: >-
#   The same finding as EP101, advisory in environments where it is not mandatory.
# custom:
#   id: EP102
#   severity: medium
#   needs_complete_stack: true
#   fix: Keep the pipeline's alerts enabled, or add an alert policy on the DLQ subscription's pubsub.googleapis.com/subscription/num_undelivered_messages.
stack_warn_subscription_without_dlq_alert contains msg if {
	some s in subscriptions
	not strict_alerts("stack_deny_subscription_without_dlq_alert", s)
	missing_dlq_alert(s)
	msg := finding(s, sprintf("%s dead-letters, but no alert policy watches its dead letters", [display(s)]))
}

# METADATA
# title: Subscription without a backlog alert (strict environment)
# description: >-
#   A stuck or slow consumer shows first as a growing backlog. Without an alert on the
#   subscription's oldest_unacked_message_age or num_undelivered_messages, messages age
#   silently until retention drops them. Mandatory in the environments of
#   data.config.stack_deny_subscription_without_backlog_alert.environments (default
#   ["prod"]), or everywhere when its enforce is true.
# custom:
#   id: EP103
#   severity: high
#   needs_complete_stack: true
#   fix: Keep the pipeline's alerts enabled (the eventpipe Pipeline component creates backlog-age and backlog-growth policies), or add an alert policy on the subscription's pubsub.googleapis.com/subscription/oldest_unacked_message_age.
stack_deny_subscription_without_backlog_alert contains msg if {
	some s in subscriptions
	strict_alerts("stack_deny_subscription_without_backlog_alert", s)
	missing_backlog_alert(s)
	msg := finding(s, sprintf("%s has no backlog alert in environment %q", [display(s), environment(s)]))
}

# METADATA
# title: Subscription without a backlog alert
# description: >-
#   The same finding as EP103, advisory in environments where it is not mandatory.
# custom:
#   id: EP104
#   severity: medium
#   needs_complete_stack: true
#   fix: Keep the pipeline's alerts enabled, or add an alert policy on the subscription's pubsub.googleapis.com/subscription/oldest_unacked_message_age.
stack_warn_subscription_without_backlog_alert contains msg if {
	some s in subscriptions
	not strict_alerts("stack_deny_subscription_without_backlog_alert", s)
	missing_backlog_alert(s)
	msg := finding(s, sprintf("%s has no backlog alert", [display(s)]))
}
