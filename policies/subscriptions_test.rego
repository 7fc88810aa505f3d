package eventpipe.subscriptions_test

import rego.v1

import data.eventpipe.fixtures_test as fx
import data.eventpipe.lib
import data.eventpipe.rules

# Rules on one subscription, each tested on the healthy stack broken one way.

with_sub(patch) := fx.swap(fx.good_stack, fx.good_subscription, fx.with_props(fx.good_subscription, patch))

without(key) := fx.swap(fx.good_stack, fx.good_subscription, fx.without_prop(fx.good_subscription, key))

test_healthy_stack_passes_every_rule if {
	count(fx.results(fx.good_stack)) == 0
}

# EP002 deny_dead_letter_attempts_out_of_range

test_attempts_in_range_pass if {
	every n in [5, 7, 10] {
		s := with_sub({"deadLetterPolicy": {"deadLetterTopic": "projects/acme-prod/topics/orders-push.dlq", "maxDeliveryAttempts": n}})
		count(fx.results(s)) == 0
	}
}

test_attempts_unset_means_five if {
	s := with_sub({"deadLetterPolicy": {"deadLetterTopic": "projects/acme-prod/topics/orders-push.dlq"}})
	count(rules.deny_dead_letter_attempts_out_of_range) == 0 with data.eventpipe.model.resources as s
}

test_attempts_too_few_deny if {
	s := with_sub({"deadLetterPolicy": {"deadLetterTopic": "projects/acme-prod/topics/orders-push.dlq", "maxDeliveryAttempts": 3}})
	fx.messages(rules.deny_dead_letter_attempts_out_of_range) == {"EP002: Subscription 'orders-push' dead-letters after 3 delivery attempts; maxDeliveryAttempts allowed 5–100"} with data.eventpipe.model.resources as s
	fx.verdicts(s) == {"deny:EP002"}
}

test_attempts_too_many_deny if {
	s := with_sub({"deadLetterPolicy": {"deadLetterTopic": "projects/acme-prod/topics/orders-push.dlq", "maxDeliveryAttempts": 101}})
	fx.verdicts(s) == {"deny:EP002"}
}

test_attempts_default_range_is_the_stack_configs if {
	# The stack config accepts 5-100: a check configuration narrows that, the default does not.
	s := with_sub({"deadLetterPolicy": {"deadLetterTopic": "projects/acme-prod/topics/orders-push.dlq", "maxDeliveryAttempts": 100}})
	count(fx.results(s)) == 0
	fx.messages(rules.deny_dead_letter_attempts_out_of_range) == {"EP002: Subscription 'orders-push' dead-letters after 100 delivery attempts; maxDeliveryAttempts allowed 5–10"} with data.eventpipe.model.resources as s with data.config as {"deny_dead_letter_attempts_out_of_range": {"max": 10}}
}

test_attempts_range_from_config if {
	s := with_sub({"deadLetterPolicy": {"deadLetterTopic": "projects/acme-prod/topics/orders-push.dlq", "maxDeliveryAttempts": 50}})
	count(rules.deny_dead_letter_attempts_out_of_range) == 0 with data.eventpipe.model.resources as s with data.config as {"deny_dead_letter_attempts_out_of_range": {"max": 100}}
	count(rules.deny_dead_letter_attempts_out_of_range) == 1 with data.eventpipe.model.resources as fx.good_stack with data.config as {"deny_dead_letter_attempts_out_of_range": {"min": 6}}
}

test_attempts_unknown_no_verdict if {
	s := with_sub({"deadLetterPolicy": lib.unknown_value})
	count(fx.results(s)) == 0
	t := with_sub({"deadLetterPolicy": {"deadLetterTopic": "projects/acme-prod/topics/orders-push.dlq", "maxDeliveryAttempts": lib.unknown_value}})
	count(fx.results(t)) == 0
}

# EP003 deny_retry_policy

test_retry_missing_deny if {
	fx.messages(rules.deny_retry_policy) == {"EP003: Subscription 'orders-push' has no retry policy: nacked messages are redelivered immediately"} with data.eventpipe.model.resources as without("retryPolicy")
	fx.verdicts(without("retryPolicy")) == {"deny:EP003"}
}

test_dlq_subscription_may_omit_retry_policy if {
	s := fx.swap(fx.good_stack, fx.dlq_subscription, fx.without_prop(fx.dlq_subscription, "retryPolicy"))
	count(fx.results(s)) == 0
}

test_dlq_subscription_recognised_by_structure_may_omit_retry_policy if {
	# No eventpipe_role label: it reads the topic orders-push dead-letters to.
	bare := fx.without_prop(fx.without_prop(fx.dlq_subscription, "retryPolicy"), "labels")
	count(fx.results(fx.swap(fx.good_stack, fx.dlq_subscription, bare))) == 0
}

test_subscription_reading_a_topic_nobody_dead_letters_to_needs_retry_policy if {
	lone := fx.with_props(fx.without_prop(fx.without_prop(fx.dlq_subscription, "retryPolicy"), "labels"), {"topic": "projects/acme-prod/topics/orders"})
	"deny:EP003" in fx.verdicts(fx.swap(fx.good_stack, fx.dlq_subscription, lone))
}

test_export_subscriptions_may_omit_retry_policy if {
	# Pub/Sub writes their messages itself: no consumer of yours to hammer.
	bq := fx.without_prop(fx.with_props(fx.good_subscription, {"bigqueryConfig": {"table": "acme-prod.ledger.events"}}), "pushConfig")
	count(fx.results(fx.swap(fx.good_stack, fx.good_subscription, fx.without_prop(bq, "retryPolicy")))) == 0
	gcs := fx.without_prop(fx.with_props(fx.good_subscription, {"cloudStorageConfig": {"bucket": "acme-archive"}}), "pushConfig")
	count(fx.results(fx.swap(fx.good_stack, fx.good_subscription, fx.without_prop(gcs, "retryPolicy")))) == 0

	# A retry policy they do have is still checked, and they still need a dead-letter policy.
	fast := fx.with_props(bq, {"retryPolicy": {"minimumBackoff": "1s", "maximumBackoff": "900s"}})
	fx.verdicts(fx.swap(fx.good_stack, fx.good_subscription, fast)) == {"deny:EP003"}
	"deny:EP001" in fx.verdicts(fx.swap(fx.good_stack, fx.good_subscription, fx.without_prop(bq, "deadLetterPolicy")))
}

test_missing_retry_policy_only_is_noted_on_incomplete_documents if {
	# Whether it is a DLQ subscription rests on the others; a backoff out of range does not.
	missing := fx.results(without("retryPolicy")) with data.eventpipe.model.complete as false
	[r.note | some r in missing; r.id == "EP003"] == [lib.incomplete_note]
	fast := fx.results(with_sub({"retryPolicy": {"minimumBackoff": "1s", "maximumBackoff": "900s"}})) with data.eventpipe.model.complete as false
	[object.get(r, "note", "") | some r in fast; r.id == "EP003"] == [""]
}

test_retry_min_too_low_deny if {
	# The stack config accepts 0s-10m: 1s passes by default, a check configuration narrows it.
	s := with_sub({"retryPolicy": {"minimumBackoff": "1s", "maximumBackoff": "600s"}})
	count(fx.results(s)) == 0
	fx.messages(rules.deny_retry_policy) == {"EP003: Subscription 'orders-push' retries after 1s; minimumBackoff must be at least 10s"} with data.eventpipe.model.resources as s with data.config as {"deny_retry_policy": {"minimumBackoffSeconds": 10}}
	fx.verdicts(with_sub({"retryPolicy": {"minimumBackoff": "-1s", "maximumBackoff": "600s"}})) == {"deny:EP003"}
}

test_retry_max_too_high_deny if {
	s := with_sub({"retryPolicy": {"minimumBackoff": "10s", "maximumBackoff": "900s"}})
	fx.messages(rules.deny_retry_policy) == {"EP003: Subscription 'orders-push' backs off up to 15m; maximumBackoff must be at most 10m"} with data.eventpipe.model.resources as s
	fx.verdicts(s) == {"deny:EP003"}
}

test_retry_bounds_from_config if {
	s := with_sub({"retryPolicy": {"minimumBackoff": "5s", "maximumBackoff": "600s"}})
	count(rules.deny_retry_policy) == 0 with data.eventpipe.model.resources as s with data.config as {"deny_retry_policy": {"minimumBackoffSeconds": 5}}
}

test_retry_unknown_no_verdict if {
	count(fx.results(with_sub({"retryPolicy": lib.unknown_value}))) == 0
	count(fx.results(with_sub({"retryPolicy": {"minimumBackoff": lib.unknown_value, "maximumBackoff": lib.secret_value}}))) == 0
}

# EP008 deny_push_without_oidc

test_push_without_oidc_deny if {
	s := with_sub({"pushConfig": {"pushEndpoint": "https://x.a.run.app/pubsub/push"}})
	fx.messages(rules.deny_push_without_oidc) == {"EP008: Subscription 'orders-push' pushes without an OIDC token: the consumer cannot authenticate Pub/Sub"} with data.eventpipe.model.resources as s
}

test_push_oidc_unknown_no_verdict if {
	count(fx.results(with_sub({"pushConfig": {"pushEndpoint": "https://x", "oidcToken": lib.unknown_value}}))) == 0
	count(fx.results(with_sub({"pushConfig": {"pushEndpoint": "https://x", "oidcToken": {"serviceAccountEmail": lib.unknown_value}}}))) == 0
}

test_google_run_push_handlers_need_no_oidc if {
	# Cloud Functions (1st gen) triggers: Google serves the endpoint and authenticates the push.
	count(fx.results(with_sub({"pushConfig": {"pushEndpoint": "https://europe-west1-acme-prod.cloudfunctions.net/ledger-writer"}}))) == 0
	gen1 := "https://7f3c2a91d0e84b5c-dot-t7e2b4c19a5d3f6-tp.appspot.com/_ah/push-handlers/pubsub/projects/acme-prod/topics/ledger?pubsub_trigger=true"
	count(fx.results(with_sub({"pushConfig": {"pushEndpoint": gen1}}))) == 0
}

test_lookalike_push_handlers_need_oidc if {
	fx.verdicts(with_sub({"pushConfig": {"pushEndpoint": "https://acme.cloudfunctions.net.attacker.example/push"}})) == {"deny:EP008"}
	fx.verdicts(with_sub({"pushConfig": {"pushEndpoint": "https://evil.example/x.cloudfunctions.net"}})) == {"deny:EP008"}
	fx.verdicts(with_sub({"pushConfig": {"pushEndpoint": "https://acme.appspot.com/pubsub/push"}})) == {"deny:EP008"}
}

test_pull_subscription_needs_no_oidc if {
	count(fx.results(without("pushConfig"))) == 0
}

# EP009 deny_push_endpoint_not_https

test_http_push_endpoint_deny if {
	s := with_sub({"pushConfig": {"pushEndpoint": "http://x.internal/push", "oidcToken": {"serviceAccountEmail": "a@b"}}})
	fx.messages(rules.deny_push_endpoint_not_https) == {`EP009: Subscription 'orders-push' pushes to "http://x.internal/push", which is not an https:// endpoint`} with data.eventpipe.model.resources as s
}

test_https_in_capitals_pass if {
	count(fx.results(with_sub({"pushConfig": {"pushEndpoint": "HTTPS://x.a.run.app/push", "oidcToken": {"serviceAccountEmail": "a@b"}}}))) == 0
}

test_unknown_push_endpoint_no_verdict if {
	count(fx.results(with_sub({"pushConfig": {"pushEndpoint": lib.unknown_value, "oidcToken": {"serviceAccountEmail": "a@b"}}}))) == 0
}

# EP011 warn_subscription_expires / EP012 deny_subscription_expires

test_expiring_subscription_denied_in_prod if {
	s := with_sub({"expirationPolicy": {"ttl": "2678400s"}})
	fx.messages(rules.deny_subscription_expires) == {`EP012: Subscription 'orders-push' expires after 2678400s without activity in environment "prod"`} with data.eventpipe.model.resources as s
	fx.verdicts(s) == {"deny:EP012"}
}

test_unset_expiration_means_31_days if {
	fx.verdicts(without("expirationPolicy")) == {"deny:EP012"}
}

test_expiring_subscription_warns_outside_prod if {
	s := with_sub({"expirationPolicy": {"ttl": "86400s"}, "labels": {"eventpipe_env": "dev"}})
	fx.verdicts(s) == {"warn:EP011"}
	fx.messages(rules.warn_subscription_expires) == {"EP011: Subscription 'orders-push' expires after 86400s without activity"} with data.eventpipe.model.resources as s
}

test_expiration_environment_from_config if {
	s := with_sub({"expirationPolicy": {"ttl": "86400s"}, "labels": {}})
	count(rules.deny_subscription_expires) == 1 with data.eventpipe.model.resources as s with data.config as {"environment": "prod"}
	count(rules.warn_subscription_expires) == 1 with data.eventpipe.model.resources as s with data.config as {"environment": "dev"}
	count(rules.deny_subscription_expires) == 1 with data.eventpipe.model.resources as s with data.config as {"environment": "dev", "deny_subscription_expires": {"enforce": true}}
	count(rules.deny_subscription_expires) == 1 with data.eventpipe.model.resources as s with data.config as {"environment": "staging", "deny_subscription_expires": {"environments": ["staging"]}}
}

test_unknown_expiration_no_verdict if {
	count(fx.results(with_sub({"expirationPolicy": lib.unknown_value}))) == 0
	count(fx.results(with_sub({"expirationPolicy": {"ttl": lib.unknown_value}}))) == 0
}

# EP015 warn_dead_letter_opt_out

test_opt_out_reported_with_reason if {
	labels := {"eventpipe_env": "prod", "eventpipe_dlq_opt_out": "true", "eventpipe_dlq_opt_out_reason": "replayed_from_source"}
	opted := fx.with_props(fx.without_prop(fx.good_subscription, "deadLetterPolicy"), {"labels": labels})
	s := fx.drop(fx.drop(fx.swap(fx.good_stack, fx.good_subscription, opted), fx.dlq_subscription), fx.publisher_grant)
	fx.verdicts(s) == {"warn:EP015"}
	fx.messages(rules.warn_dead_letter_opt_out) == {"EP015: Subscription 'orders-push' opts out of dead-lettering; recorded reason: replayed_from_source"} with data.eventpipe.model.resources as s
}

test_opt_out_without_reason if {
	opted := fx.with_props(fx.good_subscription, {"labels": {"eventpipe_dlq_opt_out": "true"}})
	fx.messages(rules.warn_dead_letter_opt_out) == {"EP015: Subscription 'orders-push' opts out of dead-lettering; recorded reason: (none recorded)"} with data.eventpipe.model.resources as [opted]
}
