package eventpipe

import rego.v1

# EP002 deny_dead_letter_attempts_out_of_range

test_attempts_in_range_pass if {
	every n in [5, 7, 10] {
		count(deny_dead_letter_attempts_out_of_range) == 0 with input as with_props(good_subscription, {"deadLetterPolicy": {"deadLetterTopic": "t", "maxDeliveryAttempts": n}})
	}
}

test_attempts_unset_means_five if {
	count(deny_dead_letter_attempts_out_of_range) == 0 with input as with_props(good_subscription, {"deadLetterPolicy": {"deadLetterTopic": "t"}})
}

test_attempts_too_few_deny if {
	msgs := deny_dead_letter_attempts_out_of_range with input as with_props(good_subscription, {"deadLetterPolicy": {"deadLetterTopic": "t", "maxDeliveryAttempts": 3}})
	msgs == {"Subscription 'orders-push' dead-letters after 3 delivery attempts; the allowed range is 5-10"}
}

test_attempts_too_many_deny if {
	count(deny_dead_letter_attempts_out_of_range) == 1 with input as with_props(good_subscription, {"deadLetterPolicy": {"deadLetterTopic": "t", "maxDeliveryAttempts": 50}})
}

test_attempts_range_from_config if {
	r := with_props(good_subscription, {"deadLetterPolicy": {"deadLetterTopic": "t", "maxDeliveryAttempts": 50}})
	count(deny_dead_letter_attempts_out_of_range) == 0 with input as r with data.config as {"deny_dead_letter_attempts_out_of_range": {"max": 100}}
	count(deny_dead_letter_attempts_out_of_range) == 1 with input as good_subscription with data.config as {"deny_dead_letter_attempts_out_of_range": {"min": 6}}
}

test_attempts_unknown_no_verdict if {
	count(deny_dead_letter_attempts_out_of_range) == 0 with input as with_props(good_subscription, {"deadLetterPolicy": unknown_value})
}

# EP003 deny_retry_policy

test_retry_good_pass if {
	count(deny_retry_policy) == 0 with input as good_subscription
}

test_retry_missing_deny if {
	msgs := deny_retry_policy with input as without_prop(good_subscription, "retryPolicy")
	msgs == {"Subscription 'orders-push' has no retry policy: nacked messages are redelivered immediately"}
}

test_dlq_subscription_may_omit_retry_policy if {
	count(deny_retry_policy) == 0 with input as without_prop(dlq_subscription_resource, "retryPolicy")
	unlabelled := without_prop(without_prop(dlq_subscription_resource, "retryPolicy"), "labels")
	count(deny_retry_policy) == 1 with input as unlabelled
}

test_retry_min_too_low_deny if {
	count(deny_retry_policy) == 1 with input as with_props(good_subscription, {"retryPolicy": {"minimumBackoff": "1s", "maximumBackoff": "600s"}})
}

test_retry_max_too_high_deny if {
	count(deny_retry_policy) == 1 with input as with_props(good_subscription, {"retryPolicy": {"minimumBackoff": "10s", "maximumBackoff": "900s"}})
}

test_retry_defaults_inside_block_pass if {
	count(deny_retry_policy) == 0 with input as with_props(good_subscription, {"retryPolicy": {}})
}

test_retry_threshold_from_config if {
	count(deny_retry_policy) == 1 with input as good_subscription with data.config as {"deny_retry_policy": {"minimumBackoffSeconds": 30}}
}

test_retry_unknown_no_verdict if {
	count(deny_retry_policy) == 0 with input as with_props(good_subscription, {"retryPolicy": unknown_value})
	count(deny_retry_policy) == 0 with input as with_props(good_subscription, {"retryPolicy": {"minimumBackoff": unknown_value}})
}

# EP008 deny_push_without_oidc

test_push_with_oidc_pass if {
	count(deny_push_without_oidc) == 0 with input as good_subscription
}

test_pull_subscription_pass if {
	count(deny_push_without_oidc) == 0 with input as without_prop(good_subscription, "pushConfig")
}

test_push_without_oidc_deny if {
	r := with_props(good_subscription, {"pushConfig": {"pushEndpoint": "https://x.a.run.app/pubsub/push"}})
	count(deny_push_without_oidc) == 1 with input as r
}

test_push_with_empty_oidc_email_deny if {
	r := with_props(good_subscription, {"pushConfig": {"pushEndpoint": "https://x.a.run.app/pubsub/push", "oidcToken": {"serviceAccountEmail": ""}}})
	count(deny_push_without_oidc) == 1 with input as r
}

test_push_unknown_oidc_no_verdict if {
	r := with_props(good_subscription, {"pushConfig": {"pushEndpoint": "https://x", "oidcToken": {"serviceAccountEmail": unknown_value}}})
	count(deny_push_without_oidc) == 0 with input as r
}

# EP009 deny_push_endpoint_not_https

test_https_endpoint_pass if {
	count(deny_push_endpoint_not_https) == 0 with input as good_subscription
}

test_http_endpoint_deny if {
	r := with_props(good_subscription, {"pushConfig": {"pushEndpoint": "http://x.a.run.app/pubsub/push", "oidcToken": {"serviceAccountEmail": "a@b"}}})
	msgs := deny_push_endpoint_not_https with input as r
	msgs == {`Subscription 'orders-push' pushes to "http://x.a.run.app/pubsub/push", which is not an https:// endpoint`}
}

test_secret_endpoint_no_verdict if {
	r := with_props(good_subscription, {"pushConfig": {"pushEndpoint": secret_value, "oidcToken": {"serviceAccountEmail": "a@b"}}})
	count(deny_push_endpoint_not_https) == 0 with input as r
}

# EP011 warn_subscription_expires / EP012 deny_subscription_expires

test_never_expires_pass if {
	count(warn_subscription_expires | deny_subscription_expires) == 0 with input as good_subscription
}

dev_subscription := with_props(good_subscription, {"labels": {"eventpipe_env": "dev"}, "expirationPolicy": {"ttl": "86400s"}})

test_expiring_in_dev_warns if {
	warn_subscription_expires == {"Subscription 'orders-push' expires after 86400s without activity"} with input as dev_subscription
	count(deny_subscription_expires) == 0 with input as dev_subscription
}

test_unset_expiration_is_31_days if {
	r := without_prop(dev_subscription, "expirationPolicy")
	warn_subscription_expires == {"Subscription 'orders-push' expires after 31 days (the default) without activity"} with input as r
}

test_expiring_in_prod_denies if {
	r := with_props(good_subscription, {"expirationPolicy": {"ttl": "2678400s"}})
	count(deny_subscription_expires) == 1 with input as r
	count(warn_subscription_expires) == 0 with input as r
}

test_environment_from_config_overrides_label if {
	count(deny_subscription_expires) == 1 with input as dev_subscription with data.config as {"environment": "prod"}
	count(deny_subscription_expires) == 1 with input as dev_subscription with data.config as {"deny_subscription_expires": {"enforce": true}}
	count(deny_subscription_expires) == 0 with input as dev_subscription with data.config as {"environment": "staging"}
}

# EP015 warn_dead_letter_opt_out

test_no_opt_out_pass if {
	count(warn_dead_letter_opt_out) == 0 with input as good_subscription
}

test_opt_out_warns_with_reason if {
	r := with_props(without_prop(good_subscription, "deadLetterPolicy"), {"labels": {"eventpipe_dlq_opt_out": "true", "eventpipe_dlq_opt_out_reason": "replayed_from_source_daily"}})
	warn_dead_letter_opt_out == {"Subscription 'orders-push' opts out of dead-lettering; recorded reason: replayed_from_source_daily"} with input as r
}
