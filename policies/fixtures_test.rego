package eventpipe

import rego.v1

# Shared fixtures for the rule tests: one healthy pipeline (source topic, push subscription
# with DLQ, DLQ topic and subscription, both service-agent grants, consumer, TTL fields).

agent := "serviceAccount:service-123456789@gcp-sa-pubsub.iam.gserviceaccount.com"

urn(t, name) := sprintf("urn:pulumi:prod::eventpipe::%s::%s", [t, name])

good_subscription := {
	"type": subscription_type,
	"urn": urn(subscription_type, "orders-push"),
	"name": "orders-push",
	"properties": {
		"name": "orders-push",
		"project": "acme-prod",
		"topic": "projects/acme-prod/topics/orders",
		"labels": {"eventpipe_role": "consumer", "eventpipe_env": "prod"},
		"deadLetterPolicy": {"deadLetterTopic": "projects/acme-prod/topics/orders-push.dlq", "maxDeliveryAttempts": 5},
		"retryPolicy": {"minimumBackoff": "10s", "maximumBackoff": "600s"},
		"expirationPolicy": {"ttl": ""},
		"pushConfig": {
			"pushEndpoint": "https://orders-consumer-abc.a.run.app/pubsub/push",
			"oidcToken": {"serviceAccountEmail": "push@acme-prod.iam.gserviceaccount.com"},
		},
	},
}

source_topic := {
	"type": topic_type, "urn": urn(topic_type, "orders"), "name": "orders",
	"properties": {"name": "orders", "project": "acme-prod"},
}

dlq_topic := {
	"type": topic_type, "urn": urn(topic_type, "orders-push.dlq"), "name": "orders-push.dlq",
	"properties": {"name": "orders-push.dlq", "project": "acme-prod"},
}

dlq_subscription_resource := {
	"type": subscription_type,
	"urn": urn(subscription_type, "orders-push.dlq-sub"),
	"name": "orders-push.dlq-sub",
	"properties": {
		"name": "orders-push.dlq-sub",
		"project": "acme-prod",
		"topic": "projects/acme-prod/topics/orders-push.dlq",
		"labels": {"eventpipe_role": "dlq"},
		"messageRetentionDuration": "1209600s",
		"retryPolicy": {"minimumBackoff": "10s", "maximumBackoff": "600s"},
		"expirationPolicy": {"ttl": ""},
	},
}

publisher_grant := {
	"type": topic_iam_member_type, "urn": urn(topic_iam_member_type, "orders-push.dlq-publisher"), "name": "orders-push.dlq-publisher",
	"properties": {"topic": "projects/acme-prod/topics/orders-push.dlq", "role": "roles/pubsub.publisher", "member": agent},
}

subscriber_grant := {
	"type": subscription_iam_member_type, "urn": urn(subscription_iam_member_type, "orders-push-subscriber"), "name": "orders-push-subscriber",
	"properties": {"subscription": "orders-push", "role": "roles/pubsub.subscriber", "member": agent},
}

consumer_service := {
	"type": run_service_type, "urn": urn(run_service_type, "orders-consumer"), "name": "orders-consumer",
	"properties": {"name": "orders-consumer", "template": {"containers": [{"image": "img", "envs": [
		{"name": "EVENTPIPE_STORE", "value": "firestore://acme-prod/(default)"},
		{"name": "EVENTPIPE_ENV", "value": "prod"},
	]}]}},
}

ttl_field(collection) := {
	"type": firestore_field_type, "urn": urn(firestore_field_type, collection), "name": collection,
	"properties": {"collection": collection, "field": "expireAt", "database": "(default)", "ttlConfig": {}},
}

good_stack := [
	source_topic, dlq_topic, good_subscription, dlq_subscription_resource, publisher_grant, subscriber_grant,
	consumer_service, ttl_field("eventpipe_dedupe"), ttl_field("eventpipe_leases"), ttl_field("eventpipe_receipts"),
]

# with_props(r, patch) is r with its properties replaced by patch, key by key.
with_props(r, patch) := object.union(object.remove(r, ["properties"]), {"properties": object.union(object.remove(r.properties, object.keys(patch)), patch)})

# without_prop(r, key) is r without the property key.
without_prop(r, key) := object.union(object.remove(r, ["properties"]), {"properties": object.remove(r.properties, [key])})

# replace(stack, old, new) swaps resource old for new.
replace(stack, old, new) := [x | some r in stack; x := pick(r, old, new)]

pick(r, old, new) := new if r.urn == old.urn

pick(r, old, new) := r if r.urn != old.urn

# drop(stack, old) removes resource old.
drop(stack, old) := [r | some r in stack; r.urn != old.urn]

# all_stack_findings is every stack-rule message for the stack in input.
all_stack_findings := ((((stack_deny_missing_dead_letter_policy | stack_deny_dead_letter_topic_is_source) | stack_deny_dead_letter_topic_unread) | stack_deny_dead_letter_publisher_grant_missing) | stack_deny_dead_letter_subscriber_grant_missing) | (stack_warn_dlq_retention_short | stack_warn_consumer_collection_without_ttl)

test_good_stack_has_no_stack_findings if {
	count(all_stack_findings) == 0 with input as {"resources": good_stack}
}

test_good_resources_have_no_resource_findings if {
	every r in good_stack {
		count(resource_findings) == 0 with input as r
	}
}

resource_findings := ((((deny_dead_letter_attempts_out_of_range | deny_retry_policy) | deny_push_without_oidc) | deny_push_endpoint_not_https) | (warn_subscription_expires | deny_subscription_expires)) | (warn_dead_letter_opt_out | deny_cloud_run_public_invoker)
