package eventpipe.lib

import rego.v1

import data.eventpipe.model

# How subscriptions, topics and grants name each other: names and links.
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

same_project("", _)

same_project(_, "")

# apart(a, b) holds when resources a and b are surely in different projects.
apart(a, b) if not same_project(project_of(a), project_of(b))

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
} else := possible_link({u | some u in r.possibleDependencies[property]; topic_urns[u]}) if {
	r.possibleDependencies[property]
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
} else := possible_link({u | some u in r.possibleDependencies[property]; subscription_urns[u]}) if {
	r.possibleDependencies[property]
} else := named_link(named(r, v, "subscriptions"), "subscriptions") if {
	v := r.properties[property]
	known_string(v)
} else := anything_link

# possible_link is a link to one of ts (possibleDependencies, which Terraform plans give
# where a reference may name several instances, or something outside the plan): when none
# of them is of the kind wanted, something outside the plan.
possible_link(ts) := {"targets": ts, "exact": false} if count(ts) > 0

else := {"targets": {"external:"}, "exact": false}

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
links := {s.urn: {
	"topic": link_of_subscription(s.urn, direct_reads, topic_links),
	"dead": link_of_subscription(s.urn, direct_dead_letters, dead_letter_links),
} |
	some s in subscriptions
}

link_of_subscription(u, direct, resolved) := {"targets": {direct[u]}, "exact": true} if direct[u]

else := resolved[u]

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

naming_dead_letter_topic := object.keys(dead_letters_to)

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

uncertain_dlq_subscriptions := (({u | count(maybe_dead_letter_topics) > 0; some u, t in reads; maybe_dead_letter_topics[t]} | {u |
	some u in inexact_topics
	some t in topic_links[u].targets
	maybe_dead_letter_target(t)
}) | {u |
	some u in unknown_readers
	others(dead_lettering, u)
}) | {u |
	count(unknown_dead_letters) > 0
	some u, l in links
	not l.topic == none_link
	others(unknown_dead_letters, u)
}

# others(set, u) holds when set holds something other than u: count(set - {u}) > 0 without
# building the difference (once per subscription, it would cost the set's size each time).
others(set, _) if count(set) > 1

others(set, u) if {
	count(set) == 1
	not set[u]
}

# dlq_doubts maps each subscription that may be a DLQ subscription, but not surely, to
# what its being one rests on: the linking properties the plan cannot resolve, each as
# "<property> of <resource> (<expression>)". The doubts every such subscription shares
# (a dead-letter policy whose topic the plan cannot show at all may name any topic) are
# kept apart, once: shared_doubts.
dlq_doubts[u] contains doubt(v, "deadLetterPolicy") if {
	count(maybe_dead_letter_topics) > 0
	some u, t in reads
	maybe_dead_letter_topics[t]
	not dlq_subscriptions[u]
	some v in inexact_dead_letters
	v != u
	t in dead_letter_links[v].targets
}

dlq_doubts[u] contains doubt(u, "topic") if {
	some u in inexact_topics
	not dlq_subscriptions[u]
	some t in topic_links[u].targets
	maybe_dead_letter_target(t)
}

dlq_doubts[u] contains doubt(u, "topic") if {
	some u in unknown_readers
	not dlq_subscriptions[u]
	others(dead_lettering, u)
}

# shared_doubts are the dead-letter policies the plan cannot show at all, sorted: each may
# name the topic of any subscription that reads one (but its own).
shared_doubts := sort({doubt(v, "deadLetterPolicy") | some v in unknown_dead_letters})

# shares_doubts holds the subscriptions the shared doubts concern.
shares_doubts contains u if {
	count(unknown_dead_letters) > 0
	some u, l in links
	not dlq_subscriptions[u]
	not l.topic == none_link
	others(unknown_dead_letters, u)
}

# dlq_doubts_text(u) lists, for a subscription that may be a DLQ subscription, up to three
# of its doubts (its own, then the shared ones but its own policy), in order, and how many
# more there are: the first four shared doubts always hold three that are not u's.
dlq_doubts_text(u) := doubts_text(sort(own | shared), count(own) + shared_count) if {
	own := object.get(dlq_doubts, u, set())
	shared := {d | shares_doubts[u]; some d in array.slice(shared_doubts, 0, 4); d != self_doubt(u)}
	shared_count := shared_doubt_count(u)
	count(own) + shared_count > 0
}

self_doubt(u) := doubt(u, "deadLetterPolicy") if unknown_dead_letters[u]

else := ""

shared_doubt_count(u) := count(unknown_dead_letters) - count({u} & unknown_dead_letters) if shares_doubts[u]

else := 0

doubt(u, property) := sprintf("%s of %s (%s)", [property, display(subscription_by_urn[u]), model.link_expression(subscription_by_urn[u], property)])

# doubts_text lists the first three of the sorted doubts, and how many more of total
# there are.
doubts_text(sorted, total) := concat("; ", array.slice(sorted, 0, 3)) if {
	total <= 3
} else := sprintf("%s; and %d more", [concat("; ", array.slice(sorted, 0, 3)), total - 3])

maybe_dead_letter_target(t) if dead_letter_topics[t]

maybe_dead_letter_target(t) if maybe_dead_letter_topics[t]

# opted_out_subscriptions holds the URN of every subscription with the DLQ opt-out label.
opted_out_subscriptions := {s.urn | some s in subscriptions; s.properties.labels.eventpipe_dlq_opt_out == "true"}
