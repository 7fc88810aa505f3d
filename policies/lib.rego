# METADATA
# title: eventpipe rule helpers
# description: >-
#   What the rules share: resource types, the values a plan cannot show, configuration and
#   environment lookups, the links between subscriptions, topics and IAM grants, and the
#   result every rule reports.
# scope: package
package eventpipe.lib

import rego.v1

import data.eventpipe.model

subscription_type := "gcp:pubsub/subscription:Subscription"

topic_type := "gcp:pubsub/topic:Topic"

topic_iam_member_type := "gcp:pubsub/topicIAMMember:TopicIAMMember"

topic_iam_binding_type := "gcp:pubsub/topicIAMBinding:TopicIAMBinding"

topic_iam_policy_type := "gcp:pubsub/topicIAMPolicy:TopicIAMPolicy"

subscription_iam_member_type := "gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember"

subscription_iam_binding_type := "gcp:pubsub/subscriptionIAMBinding:SubscriptionIAMBinding"

subscription_iam_policy_type := "gcp:pubsub/subscriptionIAMPolicy:SubscriptionIAMPolicy"

project_iam_member_type := "gcp:projects/iAMMember:IAMMember"

project_iam_binding_type := "gcp:projects/iAMBinding:IAMBinding"

project_iam_policy_type := "gcp:projects/iAMPolicy:IAMPolicy"

run_service_type := "gcp:cloudrunv2/service:Service"

run_iam_member_type := "gcp:cloudrunv2/serviceIamMember:ServiceIamMember"

run_iam_binding_type := "gcp:cloudrunv2/serviceIamBinding:ServiceIamBinding"

run_iam_policy_type := "gcp:cloudrunv2/serviceIamPolicy:ServiceIamPolicy"

firestore_field_type := "gcp:firestore/field:Field"

alert_policy_type := "gcp:monitoring/alertPolicy:AlertPolicy"

unknown_value := model.unknown_value

secret_value := model.secret_value

# unknown(x) holds when the plan could not show x: no rule may decide on such a value.
unknown(x) if x == unknown_value

unknown(x) if x == secret_value

# unshown are the strings that show no value: empty, unknown or secret.
unshown := {"", unknown_value, secret_value}

# known_string(x) holds for a non-empty string the plan shows in clear.
known_string(x) if {
	is_string(x)
	not unshown[x]
}

# prop(r, path) is the property at path, or null when it is absent.
prop(r, path) := object.get(r.properties, path, null)

# label(r, key) is a label value of r, or "" when unset.
label(r, key) := v if {
	v := r.properties.labels[key]
	is_string(v)
} else := ""

# config is data.config: thresholds as config.<rule name>.<key> (where Pulumi policy
# configuration puts them too), environment, waivers and today. Empty when none is given.
default config := {}

config := data.config if is_object(data.config)

# setting(rule, key) reads a threshold: config.<rule>.<key>, or its default
# (setting_defaults, generated from spec.Bounds into lib_settings.rego).
setting(rule, key) := object.get(config, [rule, key], setting_defaults[rule][key])

# environment(r) is the stack environment: config.environment when given, otherwise the
# eventpipe_env label the components put on every resource.
environment(r) := e if {
	e := config.environment
	is_string(e)
} else := label(r, "eventpipe_env")

# strict(rule, r) holds when rule's deny applies to r's environment: everywhere when
# config.<rule>.enforce is true, otherwise in config.<rule>.environments (default ["prod"]).
strict(rule, _) if setting(rule, "enforce") == true

strict(rule, r) if environment(r) in setting(rule, "environments")

# seconds(d) converts a protobuf duration string such as "10s" or "600.5s" to seconds.
seconds(d) := n if {
	known_string(d)
	n := time.parse_duration_ns(d) / 1000000000
}

# duration_text(n) writes n seconds as the stack config does (spec.FormatDuration): in the
# largest whole unit of d, h, m and s ("14d", "10m", "45s"), otherwise as seconds.
duration_text(n) := sprintf("%vd", [n / 86400]) if {
	whole_multiple(n, 86400)
} else := sprintf("%vh", [n / 3600]) if {
	whole_multiple(n, 3600)
} else := sprintf("%vm", [n / 60]) if {
	whole_multiple(n, 60)
} else := sprintf("%vs", [n])

whole_multiple(n, unit) if {
	n > 0
	round(n) == n
	round(n) % unit == 0
}

# name(r) is a resource's name: the last part of its Pulumi URN, or its Terraform address.
name(r) := regex.replace(r.urn, `^.*::`, "")

# display(r) names a resource in messages: its short type and name.
display(r) := concat("", [short_type(r.type), " '", name(r), "'"])

short_type(t) := parts[count(parts) - 1] if {
	parts := split(t, ":")
} else := t

# rule(chain) is what every result of a rule repeats, from the rule's rego.metadata.chain():
# its id, severity and fix. A result that rests on a resource being absent
# (custom.needs_complete_stack) gets a note saying so on a document that leaves out
# unchanged resources: a deny with it is only a warning (the eventpipe package reports it
# as one), a warning says it may be wrong. Rules compute it once, before their loop.
rule(chain) := object.union(declared_rule(chain), {"note": incomplete_note}) if {
	chain[0].annotations.custom.needs_complete_stack == true
	not model.complete
} else := declared_rule(chain)

# join_notes(a, b) is b after a, for a result with two notes.
join_notes("", b) := b

join_notes(a, b) := concat("; ", [a, b]) if a != ""

# firm(rule) is rule without the note: for a result that rests on nothing the document
# leaves out.
firm(rule) := object.remove(rule, ["note"])

# created_here(r) holds when the document creates r: nothing it leaves out (resources
# that existed before, unchanged) can refer to r by a value it held before.
created_here(r) if r.op == "create"

# grants_unprinted(r) holds when a document that leaves out unchanged resources may leave
# out grants on r: r existed before (an in-place update), so grants made on it earlier are
# unchanged and not printed.
grants_unprinted(r) if {
	not model.complete
	r.op in {"update", "same"}
}

declared_rule(chain) := {
	"id": chain[0].annotations.custom.id,
	"severity": chain[0].annotations.custom.severity,
	"fix": chain[0].annotations.custom.fix,
}

# finding(r, text, rule) is one result of rule (see rule(chain)) on resource r: msg ("ID:
# text", as conftest prints it), the rule's id, severity and fix, r's urn and type, and the
# note, if any.
finding(r, text, rule) := {
	"msg": concat("", [rule.id, ": ", text, " (", rule.note, ")"]),
	"id": rule.id,
	"severity": rule.severity,
	"fix": rule.fix,
	"note": rule.note,
	"urn": r.urn,
	"type": r.type,
} if {
	rule.note
} else := {
	"msg": concat("", [rule.id, ": ", text]),
	"id": rule.id,
	"severity": rule.severity,
	"fix": rule.fix,
	"urn": r.urn,
	"type": r.type,
}

incomplete_note := "the preview leaves out unchanged resources, so this verdict could be wrong: run `pulumi preview --json --show-sames` for a firm one"

# ---- resources by type -------------------------------------------------------------------

# by_type maps each resource type to its resources, in document order: one indexed pass
# instead of one scan per rule.
by_type := {t: rs |
	some t in {r.type | some r in model.resources}
	rs := [r | some r in model.resources; r.type == t]
}

resources_of(t) := object.get(by_type, t, [])

subscriptions := resources_of(subscription_type)

topics := resources_of(topic_type)

topic_urns := {t.urn | some t in topics}

subscription_urns := {s.urn | some s in subscriptions}

subscription_by_urn := {s.urn: s | some s in subscriptions}

topic_by_urn := {t.urn: t | some t in topics}

# export_subscription(s) holds for a BigQuery or Cloud Storage subscription: Pub/Sub writes
# its messages itself, no consumer of yours receives them.
export_subscription(s) if is_object(s.properties.bigqueryConfig)

export_subscription(s) if is_object(s.properties.cloudStorageConfig)

# google_push_handler(endpoint) holds for a push endpoint Google serves and authenticates
# itself: a Cloud Functions (1st gen) trigger (*.cloudfunctions.net) or an App Engine push
# handler (*.appspot.com/_ah/push-handlers/, where 1st gen Pub/Sub triggers push).
google_push_handler(endpoint) if regex.match(`^https://[^/?#]+\.cloudfunctions\.net([/?#]|$)`, lower(endpoint))

google_push_handler(endpoint) if regex.match(`^https://[^/?#]+\.appspot\.com/_ah/push-handlers/`, lower(endpoint))
