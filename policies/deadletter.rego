package eventpipe.rules

import rego.v1

import data.eventpipe.lib

# Cross-resource dead-letter rules: they join subscriptions, topics and IAM grants through
# the links in lib.rego. A deny needs the link it rests on to be certain.

# METADATA
# title: Subscription without a dead-letter policy
# description: >-
#   Without a dead-letter policy a message the consumer can never process (a poison
#   message) is redelivered forever: push consumers are hammered and good messages starve.
#   Exempt are DLQ subscriptions (the document shows that some subscription's dead-letter
#   policy names the topic they read, or they carry eventpipe_role=dlq) and subscriptions
#   with the explicit opt-out label (EP015). Where a subscription may be a DLQ
#   subscription through a link the document cannot show (a value known only after
#   apply), the finding is a warning naming the expressions that would decide it: no deny
#   rests on a link that is only possible, and no such subscription passes unmentioned.
# custom:
#   id: EP001
#   severity: high
#   needs_complete_stack: true
#   fix: >-
#     Give the subscription a deadLetterPolicy with a deadLetterTopic (the eventpipe
#     Subscription component always creates one).
stack_deny_missing_dead_letter_policy contains f if {
	m := lib.rule(rego.metadata.chain())
	some s in lib.subscriptions
	not lib.dead_lettering[s.urn]
	not lib.opted_out_subscriptions[s.urn]
	not lib.dlq_subscriptions[s.urn]
	text := sprintf("%s has no dead-letter policy: poison messages are redelivered forever", [lib.display(s)])
	f := lib.finding(s, text, undecided_dlq(firm_if_new_topic(m, s), s.urn))
}

# firm_if_new_topic: a subscription reading a topic the document creates is no DLQ
# subscription of anything the document leaves out (an unchanged subscription cannot
# dead-letter to a topic that did not exist): its EP001 verdict is firm.
firm_if_new_topic(m, s) := lib.firm(m) if {
	m.note
	lib.created_here(lib.topic_by_urn[lib.reads[s.urn]])
} else := m

# undecided_dlq(m, u) is the rule m for subscription u, with a note (so a warning, not a
# deny) when u may be a DLQ subscription through links the document cannot show: the note
# names the expressions that would decide it.
undecided_dlq(m, u) := object.union(m, {"note": lib.join_notes(object.get(m, "note", ""), text)}) if {
	lib.uncertain_dlq_subscriptions[u]
	doubts := lib.dlq_doubts_text(u)
	text := sprintf(
		"unless it is a dead-letter subscription, which the document cannot show: that rests on %s (label it eventpipe_role=dlq if it is one)",
		[doubts],
	)
} else := m

# METADATA
# title: Dead-letter topic is the subscription's own topic
# description: >-
#   Dead-lettering into the topic the subscription reads republishes the poison message to
#   the same subscription, an endless loop that also duplicates it to every other reader.
# custom:
#   id: EP004
#   severity: high
#   fix: >-
#     Point deadLetterPolicy.deadLetterTopic at a separate dead-letter topic
#     (<subscription>.dlq).
stack_deny_dead_letter_topic_is_source contains f if {
	m := lib.rule(rego.metadata.chain())
	some u in self_dead_letters
	s := lib.subscription_by_urn[u]
	f := lib.finding(s, sprintf("%s dead-letters into the topic it reads", [lib.display(s)]), m)
}

# self_dead_letters holds every subscription that surely dead-letters into the topic it reads.
self_dead_letters contains u if {
	some u, t in lib.dead_letters_to
	lib.reads[u] == t
}

# METADATA
# title: Dead-letter topic that no subscription reads
# description: >-
#   Pub/Sub drops what is published to a topic without subscriptions, so dead letters sent
#   to a topic nobody reads are lost for good. Judged for dead-letter topics in the plan.
# custom:
#   id: EP005
#   severity: high
#   needs_complete_stack: true
#   fix: >-
#     Create a never-expiring subscription on the dead-letter topic (the eventpipe component
#     creates <subscription>.dlq-sub).
stack_deny_dead_letter_topic_unread contains f if {
	count(lib.unknown_readers) == 0
	m := lib.rule(rego.metadata.chain())
	some u, t in lib.dead_letters_to
	lib.topic_urns[t]
	not lib.read_topics[t]
	not lib.maybe_read_topics[t]
	s := lib.subscription_by_urn[u]
	text := sprintf("%s dead-letters to %s, which no subscription reads: dead letters would be lost", [lib.display(s), t])
	f := lib.finding(s, text, m)
}

# METADATA
# title: Service agent cannot publish to the dead-letter topic
# description: >-
#   Pub/Sub forwards dead letters as the service agent of the subscription's project
#   (service-PROJECT_NUMBER@gcp-sa-pubsub.iam.gserviceaccount.com). Without
#   roles/pubsub.publisher on the dead-letter topic, dead-lettering fails silently and the
#   message keeps being redelivered. Judged for dead-letter topics in the plan. Where the
#   document shows the number of the subscription's project (a Terraform plan's
#   google_project data source), only that project's agent counts; otherwise any
#   project's agent does, and the finding says so.
# custom:
#   id: EP006
#   severity: high
#   needs_complete_stack: true
#   fix: >-
#     Grant roles/pubsub.publisher on the dead-letter topic to
#     serviceAccount:service-PROJECT_NUMBER@gcp-sa-pubsub.iam.gserviceaccount.com, the
#     number being the subscription's project's (a TopicIAMMember).
stack_deny_dead_letter_publisher_grant_missing contains f if {
	m := lib.rule(rego.metadata.chain())

	# The stack-wide condition first: it ends the rule at once, whatever the size.
	not lib.unknown_publisher
	some u, t in lib.dead_letters_to
	lib.topic_urns[t]
	not self_dead_letters[u]
	s := lib.subscription_by_urn[u]
	not lib.may_publish(t, s)
	not lib.grants_unprinted(lib.topic_by_urn[t])
	not lib.project_grant_covers(lib.project_publisher_grants, lib.topic_by_urn[t], s)
	text := sprintf("%s dead-letters to %s, but the Pub/Sub service agent has no roles/pubsub.publisher grant there%s", [lib.display(s), t, lib.agent_note(s)])
	f := lib.finding(s, text, m)
}

# METADATA
# title: Service agent cannot acknowledge on the source subscription
# description: >-
#   To dead-letter a message Pub/Sub's service agent must also acknowledge it on the source
#   subscription. Without roles/pubsub.subscriber there, dead-lettering fails silently. As
#   for EP006, the agent is the one of the subscription's project when the document shows
#   that project's number.
# custom:
#   id: EP007
#   severity: high
#   needs_complete_stack: true
#   fix: >-
#     Grant roles/pubsub.subscriber on the subscription to
#     serviceAccount:service-PROJECT_NUMBER@gcp-sa-pubsub.iam.gserviceaccount.com, the
#     number being the subscription's project's (a SubscriptionIAMMember).
stack_deny_dead_letter_subscriber_grant_missing contains f if {
	m := lib.rule(rego.metadata.chain())
	not lib.unknown_subscriber
	some u in lib.surely_dead_lettering
	s := lib.subscription_by_urn[u]
	not lib.may_acknowledge(s)
	not lib.grants_unprinted(s)
	not lib.project_grant_covers(lib.project_subscriber_grants, s, s)
	text := sprintf("%s dead-letters, but the Pub/Sub service agent has no roles/pubsub.subscriber grant on it%s", [lib.display(s), lib.agent_note(s)])
	f := lib.finding(s, text, m)
}

# METADATA
# title: Dead-letter subscription retention below the minimum
# description: >-
#   Dead letters wait for a human. A DLQ subscription that keeps messages for less than
#   config.stack_warn_dlq_retention_short.minimumDays (default 7) loses them before
#   triage. Unset retention is Pub/Sub's default of 7 days.
# custom:
#   id: EP013
#   severity: low
#   fix: 'Set messageRetentionDuration on the DLQ subscription to at least "604800s" (7 days).'
stack_warn_dlq_retention_short contains f if {
	m := lib.rule(rego.metadata.chain())
	low := lib.setting("stack_warn_dlq_retention_short", "minimumDays")
	some u in lib.dlq_subscriptions
	s := lib.subscription_by_urn[u]
	days := retention_days(lib.prop(s, ["messageRetentionDuration"]))
	days < low
	kept := lib.duration_text(days * 86400)
	least := lib.duration_text(low * 86400)
	text := sprintf("%s keeps dead letters for %s; messageRetentionDuration must be at least %s for triage", [lib.display(s), kept, least])
	f := lib.finding(s, text, m)
}

retention_days(d) := lib.seconds(lib.pubsub_defaults.messageRetentionDuration) / 86400 if d == null

else := lib.seconds(d) / 86400
