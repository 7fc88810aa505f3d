# METADATA
# title: eventpipe rules
# description: >-
#   The rules. Each rule is a set named deny_*, warn_*, stack_deny_* or stack_warn_* (deny
#   fails a check, warn is advisory; stack_ rules judge resources together), annotated with
#   its id, title, severity, description and fix, and reports lib.finding results. The
#   eventpipe package gathers them. Rules read the model (data.eventpipe.model), never the
#   input document itself.
# scope: package
package eventpipe.rules

import rego.v1

import data.eventpipe.lib

# Rules on one subscription: delivery attempts, retry policy, push auth, expiration, opt-out.

# METADATA
# title: Dead-letter delivery attempts out of range
# description: >-
#   maxDeliveryAttempts decides how often a poison message is retried before it is
#   dead-lettered. Too few attempts dead-letter messages a transient Firestore error would
#   have let through; too many keep a poison message hot-looping. The allowed range is
#   config.deny_dead_letter_attempts_out_of_range.{min,max} (default 5-100, the range the
#   stack config accepts); an unset value means Pub/Sub's default of 5.
# custom:
#   id: EP002
#   severity: medium
#   fix: >-
#     Set deadLetterPolicy.maxDeliveryAttempts within the allowed range (5 for
#     poison-heavy streams, 10 when transient Firestore saturation is expected), or
#     raise the range in the check configuration (--check-config FILE):
#     thresholds.deny_dead_letter_attempts_out_of_range.{min,max}, for one environment
#     under environments.ENV.thresholds.
deny_dead_letter_attempts_out_of_range contains f if {
	m := lib.rule(rego.metadata.chain())
	low := lib.setting("deny_dead_letter_attempts_out_of_range", "min")
	high := lib.setting("deny_dead_letter_attempts_out_of_range", "max")
	some s in lib.subscriptions
	policy := s.properties.deadLetterPolicy
	is_object(policy)
	raw := object.get(policy, "maxDeliveryAttempts", 0)
	is_number(raw)
	attempts := delivery_attempts(raw)
	not in_range(attempts, low, high)
	text := sprintf("%s dead-letters after %v delivery attempts; maxDeliveryAttempts allowed %v–%v", [lib.display(s), attempts, low, high])
	f := lib.finding(s, text, m)
}

# delivery_attempts is a maxDeliveryAttempts setting in effect: unset or 0 means Pub/Sub's
# default, 5.
delivery_attempts(raw) := lib.pubsub_defaults["deadLetterPolicy.maxDeliveryAttempts"] if raw == 0

else := raw

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
#   config.deny_retry_policy.minimumBackoffSeconds (default 0) and the maximum at most
#   config.deny_retry_policy.maximumBackoffSeconds (default 600), the range the stack config
#   accepts. A DLQ subscription may
#   omit the policy: people and the replay tool read it, not a consumer that nacks (any
#   retry policy it has is still checked). So may a BigQuery or Cloud Storage
#   subscription: Pub/Sub itself writes its messages, there is no consumer of yours to
#   hammer (its dead-letter policy still matters: EP001 catches messages it cannot write).
#   Whether a subscription is a DLQ subscription rests on the other subscriptions, so a
#   missing policy is judged on the whole stack.
# custom:
#   id: EP003
#   severity: medium
#   needs_complete_stack: true
#   fix: 'Set retryPolicy with minimumBackoff "10s" and maximumBackoff "600s".'
deny_retry_policy contains f if {
	m := lib.rule(rego.metadata.chain())
	some [s, text, on_absence] in retry_problems
	f := lib.finding(s, text, noted_if(m, on_absence))
}

# noted_if(m, on_absence) is rule m with its note about an incomplete document only for a
# finding that rests on other resources being absent.
noted_if(m, true) := m

noted_if(m, false) := object.remove(m, ["note"])

# retry_problems holds [subscription, what is wrong with its retry policy, whether that
# rests on other resources being absent].
retry_problems contains [s, text, true] if {
	some s in lib.subscriptions
	object.get(s.properties, "retryPolicy", null) == null
	not lib.maybe_dlq_subscriptions[s.urn]
	not lib.export_subscription(s)
	text := sprintf("%s has no retry policy: nacked messages are redelivered immediately", [lib.display(s)])
}

retry_problems contains [s, text, false] if {
	low := lib.setting("deny_retry_policy", "minimumBackoffSeconds")
	some s in lib.subscriptions
	got := lib.seconds(s.properties.retryPolicy.minimumBackoff)
	got < low
	text := sprintf("%s retries after %s; minimumBackoff must be at least %s", [lib.display(s), lib.duration_text(got), lib.duration_text(low)])
}

retry_problems contains [s, text, false] if {
	high := lib.setting("deny_retry_policy", "maximumBackoffSeconds")
	some s in lib.subscriptions
	got := lib.seconds(s.properties.retryPolicy.maximumBackoff)
	got > high
	text := sprintf("%s backs off up to %s; maximumBackoff must be at most %s", [lib.display(s), lib.duration_text(got), lib.duration_text(high)])
}

# METADATA
# title: Push subscription without OIDC authentication
# description: >-
#   A push subscription without an OIDC token sends unauthenticated requests, so the
#   consumer must accept anyone's requests. Pub/Sub should sign each push with a service
#   account's OIDC token that the consumer (and Cloud Run IAM) verifies. Exempt are the
#   push handlers Google runs and authenticates itself: a Cloud Functions (1st gen)
#   trigger's endpoint on *.cloudfunctions.net or App Engine's /_ah/push-handlers/.
# custom:
#   id: EP008
#   severity: high
#   fix: >-
#     Set pushConfig.oidcToken.serviceAccountEmail to the push service account and grant it
#     roles/run.invoker on the consumer.
deny_push_without_oidc contains f if {
	m := lib.rule(rego.metadata.chain())
	some s in lib.subscriptions
	push := s.properties.pushConfig
	is_object(push)
	not lib.google_push_handler(object.get(push, "pushEndpoint", ""))
	not lib.unknown(object.get(push, "oidcToken", null))
	object.get(push, ["oidcToken", "serviceAccountEmail"], null) in {null, ""} # unknown or set: no verdict
	text := sprintf("%s pushes without an OIDC token: the consumer cannot authenticate Pub/Sub", [lib.display(s)])
	f := lib.finding(s, text, m)
}

# METADATA
# title: Push endpoint not HTTPS
# description: >-
#   A push endpoint over plain HTTP sends message data and the OIDC token in clear text.
# custom:
#   id: EP009
#   severity: high
#   fix: >-
#     Push to the consumer's https:// URL (Cloud Run serves HTTPS only), e.g.
#     https://SERVICE-URL/pubsub/push.
deny_push_endpoint_not_https contains f if {
	m := lib.rule(rego.metadata.chain())
	some s in lib.subscriptions
	endpoint := s.properties.pushConfig.pushEndpoint
	lib.known_string(endpoint)
	not startswith(lower(endpoint), "https://")
	text := sprintf("%s pushes to %q, which is not an https:// endpoint", [lib.display(s), endpoint])
	f := lib.finding(s, text, m)
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
warn_subscription_expires contains f if {
	m := lib.rule(rego.metadata.chain())
	some u, ttl in expiring_subscriptions
	s := lib.subscription_by_urn[u]
	not lib.strict("deny_subscription_expires", s)
	text := sprintf("%s expires after %s without activity", [lib.display(s), ttl])
	f := lib.finding(s, text, m)
}

# METADATA
# title: Subscription expires when idle (strict environment)
# description: >-
#   The same finding as EP011, mandatory in the environments listed in
#   config.deny_subscription_expires.environments (default ["prod"]) or everywhere when
#   config.deny_subscription_expires.enforce is true.
# custom:
#   id: EP012
#   severity: medium
#   fix: 'Set expirationPolicy.ttl to "" (never expire).'
deny_subscription_expires contains f if {
	m := lib.rule(rego.metadata.chain())
	some u, ttl in expiring_subscriptions
	s := lib.subscription_by_urn[u]
	lib.strict("deny_subscription_expires", s)
	text := sprintf("%s expires after %s without activity in environment %q", [lib.display(s), ttl, lib.environment(s)])
	f := lib.finding(s, text, m)
}

# expiring_subscriptions maps each subscription with a finite expiration to its TTL: the
# default of 31 days when its expirationPolicy is unset; none when it never expires or the
# plan cannot show it.
expiring_subscriptions := object.union(
	{s.urn: "31 days (the default)" | some s in lib.subscriptions; unset_expiration[object.get(s.properties, "expirationPolicy", null)]},
	{s.urn: s.properties.expirationPolicy.ttl |
		some s in lib.subscriptions
		is_string(s.properties.expirationPolicy.ttl)
		not lib.unshown[s.properties.expirationPolicy.ttl]
	},
)

unset_expiration := {null, {}}

# METADATA
# title: Dead-letter policy opted out
# description: >-
#   The subscription carries the explicit opt-out label eventpipe_dlq_opt_out=true, so it
#   has no dead-letter topic. Reported on every check, with the recorded reason, so the
#   exception shows in every review.
# custom:
#   id: EP015
#   severity: info
#   fix: >-
#     Remove the opt-out and let the component create the dead-letter topic, or keep the
#     recorded reason current.
warn_dead_letter_opt_out contains f if {
	m := lib.rule(rego.metadata.chain())
	some u in lib.opted_out_subscriptions
	s := lib.subscription_by_urn[u]
	text := sprintf("%s opts out of dead-lettering; recorded reason: %s", [lib.display(s), opt_out_reason(s)])
	f := lib.finding(s, text, m)
}

opt_out_reason(s) := r if {
	r := lib.label(s, "eventpipe_dlq_opt_out_reason")
	r != ""
} else := "(none recorded)"
