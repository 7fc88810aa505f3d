package eventpipe

import rego.v1

# Cross-resource dead-letter rules: they see input.resources and join subscriptions,
# topics and IAM grants through the index in lib.rego.

# METADATA
# title: Subscription without a dead-letter policy
# description: >-
#   Without a dead-letter policy a message the consumer can never process (a poison
#   message) is redelivered forever: push consumers are hammered and good messages starve.
#   Exempt are DLQ subscriptions (they read another subscription's dead-letter topic, or
#   carry eventpipe_role=dlq) and subscriptions with the explicit opt-out label (EP015).
# custom:
#   id: EP001
#   severity: high
#   needs_complete_stack: true
#   fix: Give the subscription a deadLetterPolicy with a deadLetterTopic (the eventpipe Subscription component always creates one).
stack_deny_missing_dead_letter_policy contains msg if {
	some s in subscriptions
	not dead_lettering[s.urn]
	not opted_out_subscriptions[s.urn]
	not dlq_subscriptions[s.urn]
	msg := finding(s, sprintf("%s has no dead-letter policy: poison messages are redelivered forever", [display(s)]))
}

# METADATA
# title: Dead-letter topic is the subscription's own topic
# description: >-
#   Dead-lettering into the topic the subscription reads republishes the poison message to
#   the same subscription, an endless loop that also duplicates it to every other reader.
# custom:
#   id: EP004
#   severity: high
#   fix: Point deadLetterPolicy.deadLetterTopic at a separate dead-letter topic (<subscription>.dlq).
stack_deny_dead_letter_topic_is_source contains msg if {
	some u, l in links
	count(l.topic) == 1
	l.topic == l.dead
	s := subscription_by_urn[u]
	msg := finding(s, sprintf("%s dead-letters into the topic it reads", [display(s)]))
}

# METADATA
# title: Dead-letter topic that no subscription reads
# description: >-
#   Pub/Sub drops what is published to a topic without subscriptions, so dead letters sent
#   to a topic nobody reads are lost for good.
# custom:
#   id: EP005
#   severity: high
#   needs_complete_stack: true
#   fix: Create a never-expiring subscription on the dead-letter topic (the eventpipe component creates <subscription>.dlq-sub).
stack_deny_dead_letter_topic_unread contains msg if {
	some u, l in links
	dead := l.dead
	count(dead) > 0
	not some_reader(dead)
	s := subscription_by_urn[u]
	msg := finding(s, sprintf("%s dead-letters to %s, which no subscription reads: dead letters would be lost", [display(s), describe(dead)]))
}

some_reader(topics) if {
	some t in topics
	readers[t]
}

describe(targets_set) := concat(", ", sort([trim_prefix(t, "external:") | some t in targets_set]))

# METADATA
# title: Service agent cannot publish to the dead-letter topic
# description: >-
#   Pub/Sub forwards dead letters as its service agent
#   (service-PROJECT_NUMBER@gcp-sa-pubsub.iam.gserviceaccount.com). Without
#   roles/pubsub.publisher on the dead-letter topic, dead-lettering fails silently and the
#   message keeps being redelivered.
# custom:
#   id: EP006
#   severity: high
#   needs_complete_stack: true
#   fix: Grant roles/pubsub.publisher on the dead-letter topic to serviceAccount:service-PROJECT_NUMBER@gcp-sa-pubsub.iam.gserviceaccount.com (a TopicIAMMember).
stack_deny_dead_letter_publisher_grant_missing contains msg if {
	# The stack-wide conditions first: they end the rule at once, whatever the size.
	not project_publisher_grant
	not unresolved_publisher_grant
	some u, l in links
	dead := l.dead
	count(dead) > 0
	not some_publisher_grant(dead)
	s := subscription_by_urn[u]
	not self_dead_letter(s)
	msg := finding(s, sprintf("%s dead-letters to %s, but the Pub/Sub service agent has no roles/pubsub.publisher grant there", [display(s), describe(dead)]))
}

some_publisher_grant(topics) if {
	some t in topics
	publisher_grants[t]
}

# METADATA
# title: Service agent cannot acknowledge on the source subscription
# description: >-
#   To dead-letter a message Pub/Sub's service agent must also acknowledge it on the source
#   subscription. Without roles/pubsub.subscriber there, dead-lettering fails silently.
# custom:
#   id: EP007
#   severity: high
#   needs_complete_stack: true
#   fix: Grant roles/pubsub.subscriber on the subscription to serviceAccount:service-PROJECT_NUMBER@gcp-sa-pubsub.iam.gserviceaccount.com (a SubscriptionIAMMember).
stack_deny_dead_letter_subscriber_grant_missing contains msg if {
	not project_subscriber_grant
	not unresolved_subscriber_grant
	some s in subscriptions
	count(links[s.urn].dead) > 0
	not subscriber_grants[s.urn]
	msg := finding(s, sprintf("%s dead-letters, but the Pub/Sub service agent has no roles/pubsub.subscriber grant on it", [display(s)]))
}

# METADATA
# title: Dead-letter subscription retention below the minimum
# description: >-
#   Dead letters wait for a human. A DLQ subscription that keeps messages for less than
#   data.config.stack_warn_dlq_retention_short.minimumDays (default 7) loses them before
#   triage. Unset retention is Pub/Sub's default of 7 days.
# custom:
#   id: EP013
#   severity: low
#   fix: 'Set messageRetentionDuration on the DLQ subscription to at least "604800s" (7 days).'
stack_warn_dlq_retention_short contains msg if {
	some u in dlq_subscriptions
	s := subscription_by_urn[u]
	days := retention_days(prop(s, ["messageRetentionDuration"]))
	low := setting("stack_warn_dlq_retention_short", "minimumDays", 7)
	days < low
	msg := finding(s, sprintf("%s keeps dead letters for %v days; keep them at least %v days for triage", [display(s), days, low]))
}

retention_days(d) := 7 if d == null

retention_days(d) := seconds(d) / 86400
