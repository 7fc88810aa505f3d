package eventpipe.removals_test

import rego.v1

import data.eventpipe.fixtures_test as fx
import data.eventpipe.lib
import data.eventpipe.rules

removal(r, action) := {"urn": r.urn, "type": r.type, "action": action, "properties": r.properties}

removed(removals) := verdicts if {
	verdicts := fx.verdicts(fx.good_stack) with data.eventpipe.model.removals as removals
}

test_replaced_subscription_denied_in_prod if {
	r := [removal(fx.good_subscription, "replace")]
	removed(r) == {"deny:EP016"}
	msgs := fx.messages(rules.deny_subscription_removed) with data.eventpipe.model.removals as r
	msgs == {"EP016: Subscription 'orders-push' is replaced (deleted, then created again): its unacknowledged messages (its backlog) are lost"}
}

test_deleted_dlq_subscription_denied_in_prod if {
	# A DLQ subscription's backlog is the dead letters awaiting triage; the environment comes
	# from the configuration when the resource has no label.
	r := [removal(fx.dlq_subscription, "delete")]
	verdicts := fx.verdicts(fx.good_stack) with data.eventpipe.model.removals as r with data.config as {"environment": "prod"}
	verdicts == {"deny:EP016"}
}

test_replaced_topic_denied_in_prod if {
	r := [removal(fx.source_topic, "replace")]
	msgs := fx.messages(rules.deny_subscription_removed) with data.eventpipe.model.removals as r with data.config as {"environment": "prod"}
	msgs == {"EP016: Topic 'orders' is replaced (deleted, then created again): its subscriptions are detached and receive nothing published to the new topic"}
}

test_removal_warns_outside_prod if {
	dev := fx.with_props(fx.good_subscription, {"labels": {"eventpipe_env": "dev"}})
	removed([removal(dev, "delete")]) == {"warn:EP017"}
	msgs := fx.messages(rules.warn_subscription_removed) with data.eventpipe.model.removals as [removal(dev, "delete")]
	msgs == {"EP017: Subscription 'orders-push' is deleted: its unacknowledged messages (its backlog) are lost"}
}

test_removal_strictness_configurable if {
	dev := fx.with_props(fx.good_subscription, {"labels": {"eventpipe_env": "dev"}})
	r := [removal(dev, "delete")]
	verdicts := fx.verdicts(fx.good_stack) with data.eventpipe.model.removals as r with data.config as {"deny_subscription_removed": {"enforce": true}}
	verdicts == {"deny:EP016"}
	relaxed := fx.verdicts(fx.good_stack) with data.eventpipe.model.removals as [removal(fx.good_subscription, "replace")] with data.config as {"deny_subscription_removed": {"environments": []}}
	relaxed == {"warn:EP017"}
}

test_deleted_topic_without_readers_is_not_flagged if {
	removed([removal(fx.with_props(fx.source_topic, {"name": "retired"}), "delete")]) == set()
}

test_deleted_topic_a_kept_subscription_reads_is_flagged if {
	by_name := [removal(fx.source_topic, "delete")]
	verdicts := fx.verdicts(fx.drop(fx.good_stack, fx.source_topic)) with data.eventpipe.model.removals as by_name with data.config as {"environment": "prod"}
	"deny:EP016" in verdicts
	linked := fx.swap(fx.drop(fx.good_stack, fx.source_topic), fx.good_subscription, fx.with_links(fx.good_subscription, {"topic": [fx.source_topic.urn]}))
	"warn:EP017" in fx.verdicts(linked) with data.eventpipe.model.removals as [removal(fx.with_props(fx.source_topic, {"name": "renamed"}), "delete")]
	msgs := fx.messages(rules.warn_subscription_removed) with data.eventpipe.model.removals as [removal(fx.source_topic, "delete")] with data.eventpipe.model.resources as fx.drop(fx.good_stack, fx.source_topic)
	msgs == {"EP017: Topic 'orders' is deleted: the subscriptions still reading it are detached and receive nothing more"}
}
