package eventpipe

import rego.v1

# Rules on one subscription: delivery attempts, retry policy, push auth, expiration, opt-out.

# METADATA
# title: Dead-letter delivery attempts out of range
# description: >-
#   maxDeliveryAttempts decides how often a poison message is retried before it is
#   dead-lettered. Too few attempts dead-letter messages a transient Firestore error would
#   have let through; too many keep a poison message hot-looping. The allowed range is
#   data.config.deny_dead_letter_attempts_out_of_range.{min,max} (default 5-10); an unset
#   value means Pub/Sub's default of 5.
# custom:
#   id: EP002
#   severity: medium
#   fix: Set deadLetterPolicy.maxDeliveryAttempts between the configured bounds (5 for poison-heavy streams, 10 when transient Firestore saturation is expected).
deny_dead_letter_attempts_out_of_range contains msg if {
	input.type == "gcp:pubsub/subscription:Subscription"
	policy := input.properties.deadLetterPolicy
	is_object(policy)
	raw := object.get(policy, "maxDeliveryAttempts", 0)
	is_number(raw)
	attempts := delivery_attempts(raw)
	low := object.get(config, ["deny_dead_letter_attempts_out_of_range", "min"], 5)
	high := object.get(config, ["deny_dead_letter_attempts_out_of_range", "max"], 10)
	not in_range(attempts, low, high)
	msg := sprintf("%s dead-letters after %v delivery attempts; the allowed range is %v-%v", [display(input), attempts, low, high])
}

# delivery_attempts is a maxDeliveryAttempts setting in effect: unset or 0 means Pub/Sub's
# default, 5.
delivery_attempts(raw) := 5 if {
	raw == 0
} else := raw

# in_range holds when low <= x <= high.
in_range(x, low, high) if {
	x >= low
	x <= high
}

# METADATA
# title: Retry policy missing or out of range
# description: >-
#   Without a retry policy Pub/Sub redelivers a nacked message immediately, so a failing
#   consumer is hammered in a tight loop. The minimum backoff must be at least
#   data.config.deny_retry_policy.minimumBackoffSeconds (default 10) and the maximum at most
#   data.config.deny_retry_policy.maximumBackoffSeconds (default 600). A DLQ subscription
#   labelled eventpipe_role=dlq may omit the policy: people and the replay tool read it, not
#   a consumer that nacks (any retry policy it has is still checked).
# custom:
#   id: EP003
#   severity: medium
#   fix: 'Set retryPolicy with minimumBackoff "10s" and maximumBackoff "600s".'
deny_retry_policy contains msg if {
	input.type == "gcp:pubsub/subscription:Subscription"
	object.get(input.properties, "retryPolicy", null) == null
	object.get(input.properties, ["labels", "eventpipe_role"], "") != "dlq"
	msg := sprintf("%s has no retry policy: nacked messages are redelivered immediately", [display(input)])
}

deny_retry_policy contains msg if {
	input.type == "gcp:pubsub/subscription:Subscription"
	got := time.parse_duration_ns(input.properties.retryPolicy.minimumBackoff) / 1000000000
	low := object.get(config, ["deny_retry_policy", "minimumBackoffSeconds"], 10)
	got < low
	msg := sprintf("%s retries after %vs; the minimum backoff must be at least %vs", [display(input), got, low])
}

deny_retry_policy contains msg if {
	input.type == "gcp:pubsub/subscription:Subscription"
	got := time.parse_duration_ns(input.properties.retryPolicy.maximumBackoff) / 1000000000
	high := object.get(config, ["deny_retry_policy", "maximumBackoffSeconds"], 600)
	got > high
	msg := sprintf("%s backs off up to %vs; the maximum backoff must be at most %vs", [display(input), got, high])
}

# METADATA
# title: Push subscription without OIDC authentication
# description: >-
#   A push subscription without an OIDC token sends unauthenticated requests, so the
#   consumer must accept anyone's requests. Pub/Sub should sign each push with a service
#   account's OIDC token that the consumer (and Cloud Run IAM) verifies.
# custom:
#   id: EP008
#   severity: high
#   fix: Set pushConfig.oidcToken.serviceAccountEmail to the push service account and grant it roles/run.invoker on the consumer.
deny_push_without_oidc contains msg if {
	input.type == "gcp:pubsub/subscription:Subscription"
	push := input.properties.pushConfig
	is_object(push)
	not unknown(object.get(push, "oidcToken", null))
	object.get(push, ["oidcToken", "serviceAccountEmail"], null) in {null, ""} # unknown or set: no verdict
	msg := sprintf("%s pushes without an OIDC token: the consumer cannot authenticate Pub/Sub", [display(input)])
}

# METADATA
# title: Push endpoint not HTTPS
# description: >-
#   A push endpoint over plain HTTP sends message data and the OIDC token in clear text.
# custom:
#   id: EP009
#   severity: high
#   fix: 'Push to the consumer''s https:// URL (Cloud Run serves HTTPS only), e.g. https://SERVICE-URL/pubsub/push.'
deny_push_endpoint_not_https contains msg if {
	input.type == "gcp:pubsub/subscription:Subscription"
	endpoint := input.properties.pushConfig.pushEndpoint
	is_string(endpoint)
	not unshown[endpoint]
	not startswith(lower(endpoint), "https://")
	msg := sprintf("%s pushes to %q, which is not an https:// endpoint", [display(input), endpoint])
}

# METADATA
# title: Subscription expires when idle
# description: >-
#   A subscription with a finite expiration (including an unset expirationPolicy, which
#   means 31 days) is deleted after that long without activity, and every message published
#   afterwards is lost. Advisory outside the strict environments; see EP012.
# custom:
#   id: EP011
#   severity: low
#   fix: 'Set expirationPolicy.ttl to "" (never expire).'
warn_subscription_expires contains msg if {
	input.type == "gcp:pubsub/subscription:Subscription"
	ttl := input_expiration_ttl
	not input_strict_expiration
	msg := sprintf("%s expires after %s without activity", [display(input), ttl])
}

# METADATA
# title: Subscription expires when idle (strict environment)
# description: >-
#   The same finding as EP011, mandatory in the environments listed in
#   data.config.deny_subscription_expires.environments (default ["prod"]) or everywhere when
#   data.config.deny_subscription_expires.enforce is true.
# custom:
#   id: EP012
#   severity: medium
#   fix: 'Set expirationPolicy.ttl to "" (never expire).'
deny_subscription_expires contains msg if {
	input.type == "gcp:pubsub/subscription:Subscription"
	ttl := input_expiration_ttl
	input_strict_expiration
	msg := sprintf("%s expires after %s without activity in environment %q", [display(input), ttl, environment(input)])
}

# input_expiration_ttl is the finite TTL of the subscription in input, undefined when it
# never expires or the plan cannot show it. (Rules about the input resource are complete
# rules, computed once per resource and shared by EP011 and EP012.)
input_expiration_ttl := "31 days (the default)" if {
	object.get(input.properties, "expirationPolicy", null) in {null, {}}
} else := ttl if {
	ttl := input.properties.expirationPolicy.ttl
	is_string(ttl)
	not unshown[ttl]
}

# input_strict_expiration holds when a finite expiration is mandatory for input's environment.
input_strict_expiration if object.get(config, ["deny_subscription_expires", "enforce"], false) == true

input_strict_expiration if {
	environment(input) in object.get(config, ["deny_subscription_expires", "environments"], ["prod"])
}

# METADATA
# title: Dead-letter policy opted out
# description: >-
#   The subscription carries the explicit opt-out label eventpipe_dlq_opt_out=true, so it
#   has no dead-letter topic. Reported on every check, with the recorded reason, so the
#   exception shows in every review.
# custom:
#   id: EP015
#   severity: info
#   fix: Remove the opt-out and let the component create the dead-letter topic, or keep the recorded reason current.
warn_dead_letter_opt_out contains msg if {
	input.type == "gcp:pubsub/subscription:Subscription"
	input.properties.labels.eventpipe_dlq_opt_out == "true"
	reason := opt_out_reason(input)
	msg := sprintf("%s opts out of dead-lettering; recorded reason: %s", [display(input), reason])
}

opt_out_reason(s) := r if {
	r := label(s, "eventpipe_dlq_opt_out_reason")
	r != ""
} else := "(none recorded)"
