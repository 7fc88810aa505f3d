package eventpipe.rules

import rego.v1

import data.eventpipe.lib
import data.eventpipe.model

# Rules on what a preview or plan deletes or replaces.

# METADATA
# title: Subscription or topic deleted or replaced (strict environment)
# description: >-
#   Deleting or replacing a subscription drops its backlog: every message not yet acknowledged
#   is gone, and for a DLQ subscription every dead letter awaiting triage. A change to a
#   subscription's topic, filter or message ordering replaces it (delete, then create, under
#   the same name). Replacing a topic detaches its subscriptions, which then receive nothing
#   published to the new topic; deleting a topic a remaining subscription reads does the
#   same. Mandatory in the environments listed in
#   config.deny_subscription_removed.environments (default ["prod"]) or everywhere when
#   config.deny_subscription_removed.enforce is true; see EP017 elsewhere.
# custom:
#   id: EP016
#   severity: high
#   needs_operations: true
#   fix: >-
#     Create a new subscription, drain the old one, then delete it (for a topic, create the
#     new topic and its subscriptions, move the publishers, drain the old subscriptions,
#     then delete the old topic); a deliberate removal needs a waiver.
deny_subscription_removed contains f if {
	m := lib.rule(rego.metadata.chain())
	some r in losing_removals
	lib.strict("deny_subscription_removed", r)
	f := lib.finding(r, removal_text(r), m)
}

# METADATA
# title: Subscription or topic deleted or replaced
# description: >-
#   The same finding as EP016, advisory in environments where it is not mandatory.
# custom:
#   id: EP017
#   severity: medium
#   needs_operations: true
#   fix: >-
#     Create a new subscription, drain the old one, then delete it (for a topic, create the
#     new topic and its subscriptions, move the publishers, drain the old subscriptions,
#     then delete the old topic).
warn_subscription_removed contains f if {
	m := lib.rule(rego.metadata.chain())
	some r in losing_removals
	not lib.strict("deny_subscription_removed", r)
	f := lib.finding(r, removal_text(r), m)
}

# losing_removals are the removals that lose messages: every subscription deleted or
# replaced; a topic replaced (its subscriptions stay attached to the deleted topic, also
# those outside the plan); a topic deleted while a subscription the plan keeps may read it.
# (Deleting an unread topic loses nothing; its own subscriptions, if deleted too, are
# reported themselves.)
losing_removals contains r if {
	some r in model.removals
	r.type == lib.subscription_type
}

losing_removals contains r if {
	some r in model.removals
	r.type == lib.topic_type
	r.action == "replace"
}

losing_removals contains r if {
	some r in model.removals
	r.type == lib.topic_type
	r.action == "delete"
	read_after_removal(r)
}

# read_after_removal(t) holds when a subscription the plan keeps may read removed topic t:
# it depends on t's URN, or names it, or its topic cannot be shown.
read_after_removal(t) if {
	some s in lib.subscriptions
	t.urn in object.get(s.propertyDependencies, "topic", [])
}

read_after_removal(t) if {
	[project, id] := lib.named(t, t.properties.name, "topics")
	key := concat("", ["external:projects/", project, "/topics/", id])
	some s in lib.subscriptions
	lib.links[s.urn].topic.targets[key]
}

read_after_removal(_) if count(lib.unknown_readers) > 0

removal_text(r) := sprintf("%s is %s: %s", [lib.display(r), removal_verbs[r.action], removal_effects[[r.type, r.action]]])

removal_verbs := {"delete": "deleted", "replace": "replaced (deleted, then created again)"}

removal_effects := {
	[lib.subscription_type, "delete"]: "its unacknowledged messages (its backlog) are lost",
	[lib.subscription_type, "replace"]: "its unacknowledged messages (its backlog) are lost",
	[lib.topic_type, "replace"]: "its subscriptions are detached and receive nothing published to the new topic",
	[lib.topic_type, "delete"]: "the subscriptions still reading it are detached and receive nothing more",
}
