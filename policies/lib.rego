# METADATA
# title: eventpipe
# description: >-
#   Pub/Sub dead-lettering, retry, push-auth, Cloud Run exposure and Firestore TTL rules for
#   eventpipe stacks. Resource rules (deny_*, warn_*) see one resource as input; stack rules
#   (stack_deny_*, stack_warn_*) see input.resources, the shape Pulumi's OPA policy packs use.
# scope: package
package eventpipe

import rego.v1

# This file holds the helpers every rule file shares: resource types, the values a plan
# cannot know, durations, configuration lookups and the reference index used by the
# cross-resource rules. Nothing here is a rule: names without a deny/warn prefix are
# ignored by Pulumi and by eventpipe check.

subscription_type := "gcp:pubsub/subscription:Subscription"

topic_type := "gcp:pubsub/topic:Topic"

topic_iam_member_type := "gcp:pubsub/topicIAMMember:TopicIAMMember"

topic_iam_binding_type := "gcp:pubsub/topicIAMBinding:TopicIAMBinding"

subscription_iam_member_type := "gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember"

subscription_iam_binding_type := "gcp:pubsub/subscriptionIAMBinding:SubscriptionIAMBinding"

project_iam_member_type := "gcp:projects/iAMMember:IAMMember"

project_iam_binding_type := "gcp:projects/iAMBinding:IAMBinding"

run_service_type := "gcp:cloudrunv2/service:Service"

run_iam_member_type := "gcp:cloudrunv2/serviceIamMember:ServiceIamMember"

run_iam_binding_type := "gcp:cloudrunv2/serviceIamBinding:ServiceIamBinding"

firestore_field_type := "gcp:firestore/field:Field"

alert_policy_type := "gcp:monitoring/alertPolicy:AlertPolicy"

# unknown_value is what `pulumi preview --json` prints for a value only known after apply.
unknown_value := "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

# secret_value is what `pulumi preview --json` prints for a secret.
secret_value := "[secret]"

# unknown(x) holds when the plan could not show x: no rule may decide on such a value.
unknown(x) if x == unknown_value

unknown(x) if x == secret_value

# known_string(x) holds for a non-empty string the plan shows in clear.
known_string(x) if {
	is_string(x)
	not unshown[x]
}

# unshown are the strings that show no value: empty, unknown or secret.
unshown := {"", unknown_value, secret_value}

# prop(r, path) is the input property at path, or null when it is absent.
prop(r, path) := object.get(object.get(r, "properties", {}), path, null)

# absent(x) holds for a missing (null) or empty block.
absent(x) if x == null

absent(x) if x == {}

absent(x) if x == []

# label(r, key) is a label value of r, or "" when unset.
label(r, key) := v if {
	labels := prop(r, ["labels"])
	is_object(labels)
	v := labels[key]
	is_string(v)
} else := ""

# setting(rule, key, default) reads a threshold from data.config.<rule>.<key>, where both
# Pulumi policy configuration and the eventpipe check configuration file put it.
setting(rule, key, default_value) := object.get(config, [rule, key], default_value)

# config is data.config, or empty when neither Pulumi nor eventpipe check provides one.
default config := {}

config := data.config

# environment(r) is the stack environment: data.config.environment when eventpipe check
# sets it, otherwise the eventpipe_env label the components put on every resource.
environment(r) := e if {
	e := data.config.environment
	is_string(e)
} else := label(r, "eventpipe_env")

# seconds(d) converts a protobuf duration string such as "10s" or "600.5s" to seconds.
seconds(d) := n if {
	known_string(d)
	n := time.parse_duration_ns(d) / 1000000000
}

# finding(r, text) is a stack-rule message: the offending resource's URN, ": ", the text.
# eventpipe check reads the URN back to attach the finding to the resource.
finding(r, text) := sprintf("%s: %s", [r.urn, text])

# display(r) names a resource in messages.
display(r) := sprintf("%s '%s'", [short_type(r.type), r.name])

short_type(t) := parts[count(parts) - 1] if {
	parts := split(t, ":")
} else := t

# ---- reference index -------------------------------------------------------------------
# A reference from one resource to another (a subscription's topic, a grant's topic) is
# resolved through propertyDependencies URNs first, then through ids and names when they
# are known. Unknown references resolve to nothing, so no verdict rests on them.

# indexed_types are the resource types the stack rules look up in by_type.
indexed_types := {
	subscription_type, topic_type, firestore_field_type, run_service_type, alert_policy_type,
	project_iam_member_type, project_iam_binding_type, topic_iam_member_type, topic_iam_binding_type,
	subscription_iam_member_type, subscription_iam_binding_type,
}

# by_type maps each of indexed_types present in the plan to its resources, in plan order:
# one indexed pass over input.resources instead of one scan per rule (OPA indexes the
# inner comprehension by r.type because t comes from the outer one).
by_type[t] := rs if {
	some t in indexed_types
	rs := [r | some r in input.resources; r.type == t]
	count(rs) > 0
}

# resources_of(t) is every resource of type t, in plan order (t among indexed_types).
resources_of(t) := object.get(by_type, t, [])

topics := resources_of(topic_type)

# topic_urns holds the URN of every topic of the plan.
topic_urns := {r.urn | some r in topics}

topic_name_pairs := [[n, r.urn] | some r in topics; n := r.properties.name; known_string(n)]

# topics_by_name maps each topic name to the URNs of the topics with that name.
topics_by_name := {n: {u | some p in topic_name_pairs; p[0] == n; u := p[1]} | some n in {q[0] | some q in topic_name_pairs}}

subscription_urns := {r.urn | some r in subscriptions}

subscription_name_pairs := [[n, r.urn] |
	some r in subscriptions
	n := r.properties.name
	known_string(n)
]

# subscriptions_by_name maps each subscription name to the URNs of those with that name.
subscriptions_by_name := {n: {u | some p in subscription_name_pairs; p[0] == n; u := p[1]} | some n in {q[0] | some q in subscription_name_pairs}}

# basename is the last path segment: a reference "projects/P/topics/NAME" or "NAME" (or an
# id of that form) resolves by NAME.
basename(s) := parts[count(parts) - 1] if {
	parts := split(s, "/")
} else := s

# topic_targets(r, property) is the set of topics a reference points to: the topic
# URNs among propertyDependencies[property] when there are any; otherwise the topics named
# by the value's last path segment; otherwise, for a known value naming something outside
# the plan, "external:<value>". Undefined when the plan cannot show it. (The indexes are
# referenced, not passed: OPA hashes function arguments.)
topic_targets(r, property) := t if {
	t := {u | some u in r.propertyDependencies[property]; topic_urns[u]}
	count(t) > 0
} else := named_topics(value_of(r, property))

named_topics(v) := t if {
	t := topics_by_name[basename(v)]
} else := {concat("", ["external:", v])}

# subscription_targets(r, property) is topic_targets for references to subscriptions.
subscription_targets(r, property) := t if {
	t := {u | some u in r.propertyDependencies[property]; subscription_urns[u]}
	count(t) > 0
} else := named_subscriptions(value_of(r, property))

named_subscriptions(v) := t if {
	t := subscriptions_by_name[basename(v)]
} else := {concat("", ["external:", v])}

# value_of(r, property) is the known reference value of a linking property. The dead-letter
# policy links through its deadLetterTopic field.
value_of(r, "deadLetterPolicy") := v if {
	v := r.properties.deadLetterPolicy.deadLetterTopic
	known_string(v)
}

value_of(r, property) := v if {
	property != "deadLetterPolicy"
	v := r.properties[property]
	known_string(v)
}

subscriptions := resources_of(subscription_type)

# subscription_by_urn maps each subscription's URN to the resource (lookups, not scans).
subscription_by_urn := {s.urn: s | some s in subscriptions}

# links maps each subscription's URN to what it reads ("topic") and where it dead-letters
# ("dead"), resolved once per evaluation.
links := {s.urn: {"topic": all_targets(s, "topic"), "dead": all_targets(s, "deadLetterPolicy")} | some s in subscriptions}

# all_targets(r, property) is topic_targets, or the empty set for an unresolvable reference.
# (topic_targets inlined: this runs twice for every subscription.)
all_targets(r, property) := t if {
	t := {u | some u in r.propertyDependencies[property]; topic_urns[u]}
	count(t) > 0
} else := t if {
	t := named_topics(value_of(r, property))
} else := set()

reader_pairs := [[t, u] | some u, l in links; some t in l.topic]

# readers maps each resolved topic to the subscriptions that read it. Each group is built
# once per distinct key (a topic has several readers), as in the other group-bys here.
readers := {t: {u | some p in reader_pairs; p[0] == t; u := p[1]} | some t in {q[0] | some q in reader_pairs}}

dead_letter_pairs := [[t, u] | some u, l in links; some t in l.dead]

# dead_letter_sources maps each dead-letter topic to the subscriptions that dead-letter to it.
dead_letter_sources := {t: {u | some p in dead_letter_pairs; p[0] == t; u := p[1]} | some t in {q[0] | some q in dead_letter_pairs}}

# dlq_subscriptions holds the URN of every DLQ subscription: one that reads a topic another
# subscription dead-letters to, or that carries the eventpipe_role=dlq label the components
# set (so a DLQ subscription whose source is outside the plan is still recognised).
dlq_subscriptions := {u | some u, l in links; some t in l.topic; some v in dead_letter_sources[t]; v != u} | {s.urn |
	some s in subscriptions
	s.properties.labels.eventpipe_role == "dlq"
}

# dead_lettering holds the URN of every subscription with a dead-letter topic (or with a
# dead-letter policy the plan cannot show).
dead_lettering := {s.urn | some s in subscriptions; unknown(s.properties.deadLetterPolicy)} | {s.urn |
	some s in subscriptions
	dlt := s.properties.deadLetterPolicy.deadLetterTopic
	dlt != null
	dlt != ""
}

# opted_out_subscriptions holds the URN of every subscription with the DLQ opt-out label.
opted_out_subscriptions := {s.urn | some s in subscriptions; s.properties.labels.eventpipe_dlq_opt_out == "true"}

# self_dead_letter(s) holds when s dead-letters into the topic it reads.
self_dead_letter(s) if {
	l := links[s.urn]
	count(l.topic) == 1
	l.topic == l.dead
}

# ---- IAM grants ------------------------------------------------------------------------

# pubsub_agent(member) holds for the Pub/Sub service agent, or a member the plan cannot show.
pubsub_agent(member) if regex.match(`^serviceAccount:service-[0-9]+@gcp-sa-pubsub\.iam\.gserviceaccount\.com$`, member)

pubsub_agent(member) if unknown(member)

# grants_agent(g) holds when IAM member or binding g names the Pub/Sub service agent.
grants_agent(g) if pubsub_agent(prop(g, ["member"]))

grants_agent(g) if unknown(prop(g, ["members"]))

grants_agent(g) if {
	some m in prop(g, ["members"])
	pubsub_agent(m)
}

# role_is(g, role) holds when g grants role (or the plan cannot show its role).
role_is(g, role) if prop(g, ["role"]) == role

role_is(g, _) if unknown(prop(g, ["role"]))

# grant_kinds maps each IAM member and binding type to the scope it grants on.
grant_kinds := {
	project_iam_member_type: "project",
	project_iam_binding_type: "project",
	topic_iam_member_type: "topic",
	topic_iam_binding_type: "topic",
	subscription_iam_member_type: "subscription",
	subscription_iam_binding_type: "subscription",
}

# agent_grants is every IAM member or binding that names the Pub/Sub service agent, with
# its kind (project, topic, subscription): one pass over the resources for every grant rule.
agent_grants := [[kind, g] |
	some t, kind in grant_kinds
	some g in resources_of(t)
	grants_agent(g)
]

# agent_grant(kind, role) is each grant of kind to the service agent of role.
agent_grant(kind, role) := [g | some p in agent_grants; p[0] == kind; g := p[1]; role_is(g, role)]

# project_publisher_grant holds when the stack lets the service agent publish project-wide.
project_publisher_grant if count(agent_grant("project", "roles/pubsub.publisher")) > 0

# project_subscriber_grant holds when the stack lets the service agent subscribe project-wide.
project_subscriber_grant if count(agent_grant("project", "roles/pubsub.subscriber")) > 0

publisher_grant_pairs := [[t, g.urn] |
	some g in agent_grant("topic", "roles/pubsub.publisher")
	some t in topic_targets(g, "topic")
]

# publisher_grants is every topic on which the service agent may publish.
publisher_grants := {p[0] | some p in publisher_grant_pairs}

subscriber_grant_pairs := [[t, g.urn] |
	some g in agent_grant("subscription", "roles/pubsub.subscriber")
	some t in subscription_targets(g, "subscription")
]

# subscriber_grants is every subscription the service agent may acknowledge on.
subscriber_grants := {p[0] | some p in subscriber_grant_pairs}

# unresolved_publisher_grant holds when some publisher grant points at a topic the plan
# cannot show: a missing grant is then no longer certain.
unresolved_publisher_grant if {
	some g in agent_grant("topic", "roles/pubsub.publisher")
	not topic_targets(g, "topic")
}

# unresolved_subscriber_grant is the same for subscriber grants on subscriptions.
unresolved_subscriber_grant if {
	some g in agent_grant("subscription", "roles/pubsub.subscriber")
	not subscription_targets(g, "subscription")
}
