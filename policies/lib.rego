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

# setting(rule, key, default_value) reads a threshold.
setting(rule, key, default_value) := object.get(config, [rule, key], default_value)

# environment(r) is the stack environment: config.environment when given, otherwise the
# eventpipe_env label the components put on every resource.
environment(r) := e if {
	e := config.environment
	is_string(e)
} else := label(r, "eventpipe_env")

# strict(rule, r) holds when rule's deny applies to r's environment: everywhere when
# config.<rule>.enforce is true, otherwise in config.<rule>.environments (default ["prod"]).
strict(rule, _) if setting(rule, "enforce", false) == true

strict(rule, r) if environment(r) in setting(rule, "environments", ["prod"])

# seconds(d) converts a protobuf duration string such as "10s" or "600.5s" to seconds.
seconds(d) := n if {
	known_string(d)
	n := time.parse_duration_ns(d) / 1000000000
}

# name(r) is a resource's name: the last part of its Pulumi URN, or its Terraform address.
name(r) := parts[count(parts) - 1] if {
	parts := split(r.urn, "::")
}

# display(r) names a resource in messages: its short type and name.
display(r) := sprintf("%s '%s'", [short_type(r.type), name(r)])

short_type(t) := parts[count(parts) - 1] if {
	parts := split(t, ":")
} else := t

# rule(chain) is what every result of a rule repeats, from the rule's rego.metadata.chain():
# its id, severity and fix. A deny that rests on a resource being absent
# (custom.needs_complete_stack) gets a note saying why it is only a warning on a document
# that leaves out unchanged resources (the eventpipe package reports it as one). Rules
# compute it once, before their loop.
rule(chain) := object.union(declared_rule(chain), {"note": incomplete_note}) if {
	startswith(trim_prefix(chain[0].path[count(chain[0].path) - 1], "stack_"), "deny_")
	chain[0].annotations.custom.needs_complete_stack == true
	not model.complete
} else := declared_rule(chain)

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

# ---- names -------------------------------------------------------------------------------
# A topic is named by its project and ID: "projects/P/topics/T", "P/T" (IAM resources) and
# "T" (in the referring resource's own project) are the same topic. Subscriptions alike.

# project_of(r) is r's project, or "" when the plan does not show it (the provider default).
project_of(r) := p if {
	p := r.properties.project
	known_string(p)
} else := ""

# named(r, v, kind) is the [project, id] a reference v from resource r names, kind being
# "topics" or "subscriptions".
named(r, v, kind) := [project_of(r), v] if {
	not contains(v, "/")
} else := [m[1], m[3]] if {
	m := regex.find_all_string_submatch_n(`^projects/([^/]+)/([a-z]+)/([^/]+)$`, v, 1)[0]
	m[2] == kind
} else := [parts[0], parts[1]] if {
	parts := split(v, "/")
	count(parts) == 2
}

# topic_names lists [project, id, URN] for every topic whose name the plan shows.
topic_names := [[n[0], n[1], t.urn] |
	some t in topics
	known_string(t.properties.name)
	n := named(t, t.properties.name, "topics")
]

topics_by_id := {id: [e | some e in topic_names; e[1] == id] | some id in {e[1] | some e in topic_names}}

subscription_names := [[n[0], n[1], s.urn] |
	some s in subscriptions
	known_string(s.properties.name)
	n := named(s, s.properties.name, "subscriptions")
]

subscriptions_by_id := {id: [e | some e in subscription_names; e[1] == id] | some id in {e[1] | some e in subscription_names}}

# same_project holds when two projects can be the same: equal, or one not shown.
same_project(a, b) if a == b

same_project(a, _) if a == ""

same_project(_, b) if b == ""

# ---- links -------------------------------------------------------------------------------
# A link is what a reference property points at: {"targets": set, "exact": bool}. Exact
# with one target: that resource (its URN, or "external:projects/P/<kind>/ID" outside the
# plan). Not exact: one of the targets, or anything at all when there are none (the plan
# cannot show it). Exact with none: the property is not set.

none_link := {"targets": set(), "exact": true}

anything_link := {"targets": set(), "exact": false}

# anything(l) holds for a link the plan cannot show.
anything(l) if {
	not l.exact
	count(l.targets) == 0
}

# topic_link(r, property) resolves a reference to a topic: through propertyDependencies
# URNs first, then through the value's name when the plan shows it.
topic_link(r, property) := none_link if {
	not_set(r, property)
} else := {"targets": ts, "exact": count(ts) == 1} if {
	ts := {u | some u in r.propertyDependencies[property]; topic_urns[u]}
	count(ts) > 0
} else := named_link(named(r, v, "topics"), "topics") if {
	v := reference_value(r, property)
	known_string(v)
} else := anything_link

# subscription_link(r, property) resolves a reference to a subscription alike.
subscription_link(r, property) := none_link if {
	not_set(r, property)
} else := {"targets": ts, "exact": count(ts) == 1} if {
	ts := {u | some u in r.propertyDependencies[property]; subscription_urns[u]}
	count(ts) > 0
} else := named_link(named(r, v, "subscriptions"), "subscriptions") if {
	v := r.properties[property]
	known_string(v)
} else := anything_link

# named_link resolves a [project, id] among the resources of the plan, or outside it.
named_link([project, id], kind) := {"targets": ts, "exact": count(ts) == 1} if {
	ts := {e[2] | some e in named_in_plan(kind, id); same_project(project, e[0])}
	count(ts) > 0
} else := {"targets": {concat("", ["external:projects/", project, "/", kind, "/", id])}, "exact": project != ""}

named_in_plan("topics", id) := object.get(topics_by_id, id, [])

named_in_plan("subscriptions", id) := object.get(subscriptions_by_id, id, [])

# reference_value is the value of a linking property: a dead-letter policy links through
# its deadLetterTopic.
reference_value(r, "deadLetterPolicy") := r.properties.deadLetterPolicy.deadLetterTopic

reference_value(r, property) := r.properties[property] if property != "deadLetterPolicy"

# not_set holds for a linking property without a value.
not_set(r, "deadLetterPolicy") if {
	object.get(r.properties, "deadLetterPolicy", null) in {null, {}, []}
}

not_set(r, "deadLetterPolicy") if {
	object.get(r.properties.deadLetterPolicy, "deadLetterTopic", null) in {null, ""}
}

not_set(r, property) if {
	property != "deadLetterPolicy"
	object.get(r.properties, property, null) in {null, ""}
}

# Subscriptions link to topics mostly through one propertyDependencies URN (the property
# being set): those are read straight into reads and dead_letters_to; every other
# subscription's links are resolved
# by topic_link into topic_links and dead_letter_links. The sets below are derived once, so
# the rules look things up instead of calling functions per subscription.

# reads maps each subscription to the topic it surely reads; dead_letters_to, to the topic
# it surely dead-letters to.
reads := object.union(direct_reads, {u: t | some u, l in topic_links; l.exact; some t in l.targets})

dead_letters_to := object.union(direct_dead_letters, {u: t | some u, l in dead_letter_links; l.exact; some t in l.targets})

direct_reads := {s.urn: t |
	some s in subscriptions
	[t] := s.propertyDependencies.topic
	topic_urns[t]
	value := s.properties.topic
	not unset_values[value]
}

direct_dead_letters := {s.urn: t |
	some s in subscriptions
	[t] := s.propertyDependencies.deadLetterPolicy
	topic_urns[t]
	value := s.properties.deadLetterPolicy.deadLetterTopic
	not unset_values[value]
}

# unset_values are the values of a property that is not set.
unset_values := {null, ""}

topic_links := {s.urn: topic_link(s, "topic") | some s in subscriptions; not direct_reads[s.urn]}

dead_letter_links := {s.urn: topic_link(s, "deadLetterPolicy") | some s in subscriptions; not direct_dead_letters[s.urn]}

# links maps each subscription's URN to what it reads ("topic") and where it dead-letters
# ("dead").
links := {s.urn: {"topic": link_of_subscription(s.urn, direct_reads, topic_links), "dead": link_of_subscription(s.urn, direct_dead_letters, dead_letter_links)} |
	some s in subscriptions
}

link_of_subscription(u, direct, resolved) := {"targets": {direct[u]}, "exact": true} if direct[u] else := resolved[u]

read_topics := {t | some t in reads}

dead_letter_topics := {t | some t in dead_letters_to}

# dead_letter_sources maps each topic some subscription surely dead-letters to, to those
# subscriptions; readers, each topic some subscription surely reads, to those.
dead_letter_sources := {t: {u | some u, x in dead_letters_to; x == t} | some t in dead_letter_topics}

readers := {t: {u | some u, x in reads; x == t} | some t in read_topics}

# inexact_topics and inexact_dead_letters are the subscriptions whose topic or dead-letter
# topic the plan shows only as one of several, or not at all; maybe_read_topics and
# maybe_dead_letter_topics are those candidates; unknown_readers and unknown_dead_letters
# are the subscriptions whose topic or dead-letter topic could be anything.
inexact_topics := {u | some u, l in topic_links; not l.exact}

inexact_dead_letters := {u | some u, l in dead_letter_links; not l.exact}

maybe_read_topics := {t | some u in inexact_topics; some t in topic_links[u].targets}

maybe_dead_letter_topics := {t | some u in inexact_dead_letters; some t in dead_letter_links[u].targets}

unknown_readers := {u | some u in inexact_topics; count(topic_links[u].targets) == 0}

unknown_dead_letters := {u | some u in inexact_dead_letters; count(dead_letter_links[u].targets) == 0}

# dead_lettering holds every subscription that may dead-letter: its dead-letter policy names
# a topic, or the plan cannot show it. surely_dead_lettering holds those whose policy surely
# names a topic (shown or not).
dead_lettering := naming_dead_letter_topic | inexact_dead_letters

naming_dead_letter_topic := {u | some u, _ in direct_dead_letters} | {u | some u, l in dead_letter_links; count(l.targets) > 0}

surely_dead_lettering := naming_dead_letter_topic | {s.urn |
	some s in subscriptions
	unshown[s.properties.deadLetterPolicy.deadLetterTopic]
	s.properties.deadLetterPolicy.deadLetterTopic != ""
}

# dlq_subscriptions holds every subscription that surely is a DLQ subscription: it carries
# the eventpipe_role=dlq label the components set, or it reads a topic another subscription
# dead-letters to.
dlq_subscriptions := {s.urn | some s in subscriptions; s.properties.labels.eventpipe_role == "dlq"} | {u |
	some u, t in reads
	some v in dead_letter_sources[t]
	v != u
}

# maybe_dlq_subscriptions adds every subscription that may be one as far as the plan shows:
# rules exempting DLQ subscriptions exempt these, so no deny rests on a link it cannot show.
maybe_dlq_subscriptions := dlq_subscriptions | uncertain_dlq_subscriptions

uncertain_dlq_subscriptions := {u | count(maybe_dead_letter_topics) > 0; some u, t in reads; maybe_dead_letter_topics[t]} | {u |
	some u in inexact_topics
	some t in topic_links[u].targets
	maybe_dead_letter_target(t)
} | {u |
	some u in unknown_readers
	count(dead_lettering - {u}) > 0
} | {u |
	count(unknown_dead_letters) > 0
	some u, l in links
	not l.topic == none_link
	count(unknown_dead_letters - {u}) > 0
}

maybe_dead_letter_target(t) if dead_letter_topics[t]

maybe_dead_letter_target(t) if maybe_dead_letter_topics[t]

# opted_out_subscriptions holds the URN of every subscription with the DLQ opt-out label.
opted_out_subscriptions := {s.urn | some s in subscriptions; s.properties.labels.eventpipe_dlq_opt_out == "true"}

# ---- IAM grants --------------------------------------------------------------------------

# pubsub_agent(member) holds for the Pub/Sub service agent, or a member the plan cannot show.
pubsub_agent(member) if regex.match(`^serviceAccount:service-[0-9]+@gcp-sa-pubsub\.iam\.gserviceaccount\.com$`, member)

pubsub_agent(member) if unknown(member)

# grant_scopes maps each IAM member, binding and policy type to the scope it grants on.
grant_scopes := {
	project_iam_member_type: "project",
	project_iam_binding_type: "project",
	project_iam_policy_type: "project",
	topic_iam_member_type: "topic",
	topic_iam_binding_type: "topic",
	topic_iam_policy_type: "topic",
	subscription_iam_member_type: "subscription",
	subscription_iam_binding_type: "subscription",
	subscription_iam_policy_type: "subscription",
}

# bindings(g) lists the [role, members] an IAM resource grants: a member resource one
# member, a binding its members, an authoritative policy each binding of its policyData.
# A value the plan cannot show stays unknown_value.
bindings(g) := [[prop(g, ["role"]), [prop(g, ["member"])]]] if {
	g.properties.member
} else := [[prop(g, ["role"]), members]] if {
	members := g.properties.members
	is_array(members)
} else := [[prop(g, ["role"]), [unknown_value]]] if {
	unknown(g.properties.members)
} else := [[object.get(b, "role", unknown_value), object.get(b, "members", [unknown_value])] | some b in policy.bindings] if {
	policy := json.unmarshal(g.properties.policyData)
	is_object(policy)
} else := [[unknown_value, [unknown_value]]] if {
	# An authoritative policy whose data the plan cannot show (or cannot read) may grant anything.
	g.properties.policyData
}

# agent_grants is [scope, role, grant] for each role an IAM resource grants the Pub/Sub
# service agent (or a member the plan cannot show).
agent_grants := [[scope, role, g] |
	some t, scope in grant_scopes
	some g in resources_of(t)
	some binding in bindings(g)
	grants_agent(binding[1])
	role := binding[0]
]

grants_agent(members) if unknown(members)

grants_agent(members) if {
	some m in members
	pubsub_agent(m)
}

# role_is(role, want) holds when role is want, or the plan cannot show it.
role_is(role, want) if role == want

role_is(role, _) if unknown(role)

# agent_grant_links lists the links of the grants of role to the service agent on scope.
agent_grant_links(scope, role, property, kind) := [link_of(g, property, kind) |
	some a in agent_grants
	a[0] == scope
	role_is(a[1], role)
	g := a[2]
]

link_of(g, property, "topics") := topic_link(g, property)

link_of(g, property, "subscriptions") := subscription_link(g, property)

# project_publisher_grant holds when the stack lets the service agent publish project-wide.
project_publisher_grant if {
	some a in agent_grants
	a[0] == "project"
	role_is(a[1], "roles/pubsub.publisher")
}

# project_subscriber_grant holds when the stack lets the service agent subscribe project-wide.
project_subscriber_grant if {
	some a in agent_grants
	a[0] == "project"
	role_is(a[1], "roles/pubsub.subscriber")
}

publisher_links := agent_grant_links("topic", "roles/pubsub.publisher", "topic", "topics")

subscriber_links := agent_grant_links("subscription", "roles/pubsub.subscriber", "subscription", "subscriptions")

# publisher_topics are the topics on which the service agent may publish; unknown_publisher
# holds when some publisher grant is on a topic the plan cannot show.
publisher_topics := {t | some l in publisher_links; some t in l.targets}

unknown_publisher if {
	some l in publisher_links
	anything(l)
}

subscriber_subscriptions := {s | some l in subscriber_links; some s in l.targets}

unknown_subscriber if {
	some l in subscriber_links
	anything(l)
}

# ---- waivers -----------------------------------------------------------------------------
# config.waivers suppress findings: each {rule: id, urn: URN or pattern (* any run of
# characters, ? one character), reason, expires: YYYY-MM-DD}, honoured through its expiry
# date (config.today, default today in UTC).

waivers := config.waivers if is_array(config.waivers) else := []

today := config.today if is_string(config.today) else := time.format([time.now_ns(), "UTC", "2006-01-02"])

valid_waiver(w) if {
	known_string(w.rule)
	known_string(w.urn)
	is_string(w.reason)
	trim_space(w.reason) != ""
	is_string(w.expires)
	regex.match(`^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$`, w.expires)
}

# live_waivers are the valid waivers not yet expired, each with its URN pattern as a regex.
live_waivers := [object.union(w, {"pattern": urn_pattern(w.urn)}) |
	some w in waivers
	valid_waiver(w)
	w.expires >= today
]

urn_pattern(p) := concat("", ["^", strings.replace_n(pattern_escapes, p), "$"])

pattern_escapes := {
	"*": ".*", "?": ".", "\\": "\\\\", ".": "\\.", "+": "\\+", "(": "\\(", ")": "\\)", "[": "\\[",
	"]": "\\]", "{": "\\{", "}": "\\}", "^": "\\^", "$": "\\$", "|": "\\|",
}

# waiver_of(f) is the first live waiver covering finding f.
waiver_of(f) := ws[0] if {
	ws := [w | some w in live_waivers; w.rule == f.id; regex.match(w.pattern, f.urn)]
	count(ws) > 0
}

# waiver_problems pairs the URN pattern of each expired or invalid waiver with what is wrong.
waiver_problems contains [object.get(w, "urn", ""), text] if {
	some i, w in waivers
	not valid_waiver(w)
	text := sprintf("waivers[%d] is invalid: a waiver needs rule (a rule id such as EP005), urn (a URN or a pattern with *), a reason and expires (a date, YYYY-MM-DD)", [i])
}

waiver_problems contains [w.urn, text] if {
	some w in waivers
	valid_waiver(w)
	w.expires < today
	text := sprintf("the waiver of %s for %s expired on %s (reason given: %s)", [w.rule, w.urn, w.expires, w.reason])
}
