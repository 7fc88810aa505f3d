package eventpipe.rules

import rego.v1

import data.eventpipe.lib

# Alert coverage rules: every subscription that dead-letters has an alert policy
# watching its dead letters, and every subscription has a backlog alert. Mandatory
# (stack_deny_*) in the environments listed in config.<rule>.environments (default
# ["prod"]) or everywhere when config.<rule>.enforce is true; advisory (stack_warn_*)
# elsewhere. Rule ids EP101-EP104 are reserved for alert rules.
#
# An alert policy watches subscription S for metric M when one of its conditions (a
# threshold or absence filter, or a PromQL or MQL query) names both M and
# subscription_id="S" — the form the alerts component renders and Cloud Monitoring uses.

# alert_policies is every alert policy of the stack that is not disabled.
alert_policies := [p |
	some p in lib.resources_of(lib.alert_policy_type)
	lib.prop(p, ["enabled"]) != false
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
# removed and the label key unquoted, so `subscription_id = "x"`, `"subscription_id" = "x"`
# and `subscription_id="x"` read the same.
condition_text(c) := text if {
	parts := [v |
		some path in condition_paths
		v := object.get(c, path, null)
		is_string(v)
	]
	text := strings.replace_n({"= ": "="}, strings.replace_n({" =": "="}, strings.replace_n(quoted_labels, concat("\n", parts))))
}

quoted_labels := {`"subscription_id"`: "subscription_id"}

# alert_conditions holds [project, text] for every condition of every enabled policy: the
# project it watches and its text. The project is the one the condition names
# (project_id="P"), else the policy's own, else "" when the document cannot show it: an
# alert policy in one project watches that project's subscriptions, not another's.
alert_conditions := {[project, t] |
	some p in alert_policies
	conds := lib.prop(p, ["conditions"])
	is_array(conds)
	some c in conds
	t := condition_text(c)
	project := condition_project(p, t)
}

alert_condition_texts := {c[1] | some c in alert_conditions}

condition_project(p, text) := substring(part, 0, indexof(part, `"`)) if {
	parts := split(text, `project_id="`)
	count(parts) > 1
	part := parts[1]
	indexof(part, `"`) > 0
} else := lib.project_of(p)

# unresolved_alert_policies are the policies whose conditions the document cannot show: a
# missing alert of a subscription of their project is then no longer certain, so no
# verdict is given on it.
unresolved_alert_policies := [p |
	some p in alert_policies
	unresolved_policy(p)
]

unresolved_policy(p) if not is_array(lib.prop(p, ["conditions"]))

unresolved_policy(p) if {
	some c in lib.prop(p, ["conditions"])
	contains(condition_text(c), lib.unknown_value)
}

# alerts_unresolved(s) holds when a policy of subscription s's project (or of a project the
# document cannot show) is unresolved.
alerts_unresolved(s) if {
	some p in unresolved_alert_policies
	not lib.apart(p, s)
}

# watches(text, metric, sub) holds when a condition names Pub/Sub subscription metric
# metric (Cloud Monitoring or PromQL spelling) for subscription sub.
watches(text, metric, sub) if {
	contains(text, sprintf("subscription_id=%q", [sub]))
	pubsub_metric_named(text, metric)
}

pubsub_metric_named(text, metric) if contains(text, sprintf("pubsub.googleapis.com/subscription/%s", [metric]))

pubsub_metric_named(text, metric) if contains(text, sprintf("pubsub_googleapis_com:subscription_%s", [metric]))

# alert_metrics are the subscription metrics the alert rules look for.
alert_metrics := {"dead_letter_message_count", "num_undelivered_messages", "oldest_unacked_message_age"}

# watched holds [metric, project, subscription ID] for every pair some condition names
# together, so a subscription's alerts are looked up, not searched for in every condition.
# An ID is what follows `subscription_id="` up to the next quote.
watched := {[metric, c[0], id] |
	some c in alert_conditions
	some metric in alert_metrics
	pubsub_metric_named(c[1], metric)
	some i, part in split(c[1], `subscription_id="`)
	i > 0
	end := indexof(part, `"`)
	end >= 0
	id := substring(part, 0, end)
}

# plain_id(sub) holds for an ID of the characters Pub/Sub allows in subscription IDs: its
# quoted form is "ID" and it cannot contain `subscription_id="`, so watched finds it exactly.
plain_id(sub) if regex.match(`^[A-Za-z0-9._~+%-]*$`, sub)

# subscription_ids maps the URN of each subscription whose name the plan shows to its ID.
subscription_ids := {s.urn: id |
	some s in lib.subscriptions
	name := s.properties.name
	lib.known_string(name)
	parts := split(name, "/")
	id := parts[count(parts) - 1]
}

# nonplain_ids are the subscription IDs watched cannot find exactly (only looked for when
# the stack has alert conditions).
nonplain_ids := {id |
	count(alert_condition_texts) > 0
	some id in subscription_ids
	not plain_id(id)
}

# alerted(metrics) is [project, ID] for every subscription some condition watches for one
# of metrics.
alerted(metrics) := {[w[1], w[2]] | some w in watched; w[0] in metrics; plain_id(w[2])} | {[c[0], id] |
	some id in nonplain_ids
	some metric in metrics
	some c in alert_conditions
	watches(c[1], metric, id)
}

# alerted_ids(pairs) are the IDs of the [project, ID] pairs.
alerted_ids(pairs) := {p[1] | some p in pairs}

# covered(pairs, ids, u) holds when an alert of pairs (whose IDs are ids) watches
# subscription u: one naming its ID in its project, or in a project the document cannot
# show; any project's when it cannot show u's.
covered(pairs, _, u) if [lib.project_of(lib.subscription_by_urn[u]), subscription_ids[u]] in pairs

covered(pairs, _, u) if ["", subscription_ids[u]] in pairs

covered(_, ids, u) if {
	lib.project_of(lib.subscription_by_urn[u]) == ""
	ids[subscription_ids[u]]
}

dead_letter_alerts := alerted({"dead_letter_message_count"})

dead_letter_alerted_ids := alerted_ids(dead_letter_alerts)

undelivered_alerts := alerted({"num_undelivered_messages"})

undelivered_alerted_ids := alerted_ids(undelivered_alerts)

backlog_alerts := alerted({"oldest_unacked_message_age", "num_undelivered_messages"})

backlog_alerted_ids := alerted_ids(backlog_alerts)

# dlq_alerted holds the URN of each subscription whose dead letters a policy watches: its
# dead_letter_message_count, or the backlog of a subscription reading its dead-letter topic.
dlq_alerted := {u | count(dead_letter_alerts) > 0; some u, _ in subscription_ids; covered(dead_letter_alerts, dead_letter_alerted_ids, u)} | {u |
	count(undelivered_alerts) > 0
	some u, t in lib.dead_letters_to
	some r in maybe_readers(t)
	covered(undelivered_alerts, undelivered_alerted_ids, r)
}

# maybe_readers(t) are the subscriptions that may read topic t.
maybe_readers(t) := (object.get(lib.readers, t, set()) | {r | some r in lib.inexact_topics; lib.topic_links[r].targets[t]}) | lib.unknown_readers

# missing_dlq_alerts holds the URN of each subscription that surely dead-letters to a topic
# of the plan with no alert on its dead letters; computed once for the strict and the
# advisory rule. (Where dead letters go outside the plan, their alert can be outside too.)
missing_dlq_alerts := {u |
	some u, t in lib.dead_letters_to
	lib.topic_urns[t]
	subscription_ids[u]
	not lib.maybe_dlq_subscriptions[u]
	not dlq_alerted[u]
	not alerts_unresolved(lib.subscription_by_urn[u])
}

# missing_backlog_alerts holds the URN of each subscription (whose name the plan shows) no
# policy watches for backlog: its oldest unacked message age or its undelivered message
# count.
missing_backlog_alerts := {s.urn |
	some s in lib.subscriptions
	name := s.properties.name
	is_string(name)
	not lib.unshown[name]
	not backlog_alerted[s.urn]
	not alerts_unresolved(s)
}

backlog_alerted := {u | count(backlog_alerts) > 0; some u, _ in subscription_ids; covered(backlog_alerts, backlog_alerted_ids, u)}

# strict_dlq_alerts and strict_backlog_alerts map the URN of each subscription missing
# such an alert in an environment where the alert is mandatory to that environment.
strict_dlq_alerts := strict_among(missing_dlq_alerts, "stack_deny_subscription_without_dlq_alert")

strict_backlog_alerts := strict_among(missing_backlog_alerts, "stack_deny_subscription_without_backlog_alert")

# strict_among(urns, rule): every one of urns when rule is enforced everywhere; otherwise
# those in an environment where rule is mandatory, looked for only when the stack has such
# an environment at all.
strict_among(urns, rule) := {u: subscription_environments[u] | some u in urns} if {
	lib.setting(rule, "enforce") == true
} else := {u: env |
	strict := {e | some e in present_environments; e in lib.setting(rule, "environments")}
	count(strict) > 0
	some u in urns
	env := subscription_environments[u]
	strict[env]
}

# subscription_environments maps each subscription's URN to its environment (see
# environment(r)): computed once for both strict rules.
subscription_environments := {s.urn: lib.config.environment | some s in lib.subscriptions} if {
	is_string(lib.config.environment)
} else := {s.urn: lib.label(s, "eventpipe_env") | some s in lib.subscriptions}

# present_environments are the environments of the stack's subscriptions.
present_environments := {e | some e in subscription_environments}

# METADATA
# title: Dead-lettering subscription without a DLQ alert (strict environment)
# description: >-
#   Dead letters are messages the consumer never applied. Without an alert policy on the
#   DLQ subscription's num_undelivered_messages or the source's dead_letter_message_count
#   they wait unseen until the DLQ's retention drops them. Mandatory in the environments of
#   config.stack_deny_subscription_without_dlq_alert.environments (default ["prod"]),
#   or everywhere when its enforce is true.
# custom:
#   id: EP101
#   severity: high
#   needs_complete_stack: true
#   fix: >-
#     Keep the pipeline's alerts enabled (the eventpipe Pipeline component creates
#     dlq-warning and dlq-critical policies), or add an alert policy on the DLQ
#     subscription's pubsub.googleapis.com/subscription/num_undelivered_messages.
stack_deny_subscription_without_dlq_alert contains f if {
	m := lib.rule(rego.metadata.chain())
	some u, env in strict_dlq_alerts
	s := lib.subscription_by_urn[u]
	text := sprintf("%s dead-letters, but no alert policy watches its dead letters in environment %q", [lib.display(s), env])
	f := lib.finding(s, text, m)
}

# METADATA
# title: Dead-lettering subscription without a DLQ alert
# description: >-
#   The same finding as EP101, advisory in environments where it is not mandatory.
# custom:
#   id: EP102
#   severity: medium
#   needs_complete_stack: true
#   fix: >-
#     Keep the pipeline's alerts enabled, or add an alert policy on the DLQ subscription's
#     pubsub.googleapis.com/subscription/num_undelivered_messages.
stack_warn_subscription_without_dlq_alert contains f if {
	m := lib.rule(rego.metadata.chain())
	some u in missing_dlq_alerts
	not strict_dlq_alerts[u]
	s := lib.subscription_by_urn[u]
	text := concat("", [lib.display(s), " dead-letters, but no alert policy watches its dead letters"])
	f := lib.finding(s, text, m)
}

# METADATA
# title: Subscription without a backlog alert (strict environment)
# description: >-
#   A stuck or slow consumer shows first as a growing backlog. Without an alert on the
#   subscription's oldest_unacked_message_age or num_undelivered_messages, messages age
#   silently until retention drops them. Mandatory in the environments of
#   config.stack_deny_subscription_without_backlog_alert.environments (default
#   ["prod"]), or everywhere when its enforce is true.
# custom:
#   id: EP103
#   severity: high
#   needs_complete_stack: true
#   fix: >-
#     Keep the pipeline's alerts enabled (the eventpipe Pipeline component creates
#     backlog-age and backlog-growth policies), or add an alert policy on the subscription's
#     pubsub.googleapis.com/subscription/oldest_unacked_message_age.
stack_deny_subscription_without_backlog_alert contains f if {
	m := lib.rule(rego.metadata.chain())
	some u, env in strict_backlog_alerts
	s := lib.subscription_by_urn[u]
	text := sprintf("%s has no backlog alert in environment %q", [lib.display(s), env])
	f := lib.finding(s, text, m)
}

# METADATA
# title: Subscription without a backlog alert
# description: >-
#   The same finding as EP103, advisory in environments where it is not mandatory.
# custom:
#   id: EP104
#   severity: medium
#   needs_complete_stack: true
#   fix: >-
#     Keep the pipeline's alerts enabled, or add an alert policy on the subscription's
#     pubsub.googleapis.com/subscription/oldest_unacked_message_age.
stack_warn_subscription_without_backlog_alert contains f if {
	m := lib.rule(rego.metadata.chain())
	some u in missing_backlog_alerts
	not strict_backlog_alerts[u]
	s := lib.subscription_by_urn[u]
	text := concat("", [lib.display(s), " has no backlog alert"])
	f := lib.finding(s, text, m)
}
