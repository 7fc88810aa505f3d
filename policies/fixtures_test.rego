# Shared fixtures for the rule tests: one healthy pipeline in the model's form (source
# topic, push subscription with DLQ, DLQ topic and subscription, both service-agent grants,
# consumer, TTL fields), and helpers that break it one way at a time.
package eventpipe.fixtures_test

import rego.v1

import data.eventpipe.lib

agent := "serviceAccount:service-123456789@gcp-sa-pubsub.iam.gserviceaccount.com"

urn(t, name) := sprintf("urn:pulumi:prod::eventpipe::%s::%s", [t, name])

good_subscription := {
	"type": lib.subscription_type,
	"urn": urn(lib.subscription_type, "orders-push"),
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
	"type": lib.topic_type, "urn": urn(lib.topic_type, "orders"),
	"properties": {"name": "orders", "project": "acme-prod"},
}

dlq_topic := {
	"type": lib.topic_type, "urn": urn(lib.topic_type, "orders-push.dlq"),
	"properties": {"name": "orders-push.dlq", "project": "acme-prod"},
}

dlq_subscription := {
	"type": lib.subscription_type,
	"urn": urn(lib.subscription_type, "orders-push.dlq-sub"),
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
	"type": lib.topic_iam_member_type, "urn": urn(lib.topic_iam_member_type, "orders-push.dlq-publisher"),
	"properties": {"topic": "projects/acme-prod/topics/orders-push.dlq", "role": "roles/pubsub.publisher", "member": agent},
}

subscriber_grant := {
	"type": lib.subscription_iam_member_type, "urn": urn(lib.subscription_iam_member_type, "orders-push-subscriber"),
	"properties": {"subscription": "orders-push", "role": "roles/pubsub.subscriber", "member": agent},
}

consumer_service := {
	"type": lib.run_service_type, "urn": urn(lib.run_service_type, "orders-consumer"),
	"properties": {"name": "orders-consumer", "template": {"containers": [{"image": "img", "envs": [
		{"name": "EVENTPIPE_STORE", "value": "firestore://acme-prod/(default)"},
		{"name": "EVENTPIPE_ENV", "value": "prod"},
	]}]}},
}

ttl_field(collection) := {
	"type": lib.firestore_field_type, "urn": urn(lib.firestore_field_type, collection),
	"properties": {"collection": collection, "field": "expireAt", "database": "(default)", "ttlConfig": {}},
}

# Alert policies shaped like the alerts component's output: threshold filters and PromQL
# queries naming subscription_id.
alert_policy(name, conditions) := {
	"type": lib.alert_policy_type,
	"urn": urn(lib.alert_policy_type, name),
	"properties": {"displayName": name, "combiner": "OR", "severity": "WARNING", "conditions": conditions},
}

threshold_on(metric, sub) := {"displayName": "c", "conditionThreshold": {
	"filter": sprintf(`metric.type="pubsub.googleapis.com/subscription/%s" AND resource.type="pubsub_subscription" AND resource.labels.subscription_id="%s"`, [metric, sub]),
	"comparison": "COMPARISON_GT",
	"duration": "300s",
}}

promql_on(metric, sub) := {"displayName": "c", "conditionPrometheusQueryLanguage": {"query": sprintf(`deriv(pubsub_googleapis_com:subscription_%s{monitored_resource="pubsub_subscription",subscription_id="%s"}[10m]) > 0`, [metric, sub])}}

# dlq_alert watches the DLQ subscription's undelivered messages: the dead letters of
# orders-push, and the DLQ subscription's own backlog.
dlq_alert := alert_policy("orders-orders-push-dlq-warning", [threshold_on("num_undelivered_messages", "orders-push.dlq-sub")])

backlog_alert := alert_policy("orders-orders-push-backlog-age-warning", [threshold_on("oldest_unacked_message_age", "orders-push")])

good_stack := [
	source_topic, dlq_topic, good_subscription, dlq_subscription, publisher_grant, subscriber_grant,
	consumer_service, ttl_field("eventpipe_dedupe"), ttl_field("eventpipe_leases"), ttl_field("eventpipe_receipts"),
	dlq_alert, backlog_alert,
]

# with_props(r, patch) is r with its properties replaced by patch, key by key.
with_props(r, patch) := object.union(object.remove(r, ["properties"]), {"properties": object.union(object.remove(r.properties, object.keys(patch)), patch)})

# without_prop(r, key) is r without the property key.
without_prop(r, key) := object.union(object.remove(r, ["properties"]), {"properties": object.remove(r.properties, [key])})

# with_links(r, links) is r with propertyDependencies links.
with_links(r, links) := object.union(r, {"propertyDependencies": links})

# swap(stack, old, new) swaps resource old for new.
swap(stack, old, new) := [pick(r, old, new) | some r in stack]

pick(r, old, new) := new if r.urn == old.urn

pick(r, old, new) := r if r.urn != old.urn

# drop(stack, old) removes resource old.
drop(stack, old) := [r | some r in stack; r.urn != old.urn]

# messages(results) is the msg of each result.
messages(results) := {f.msg | some f in results}

# ids(results) is the id of each result.
ids(results) := {f.id | some f in results}

# results(stack) is every result of every rule on a stack in the model's form, as the
# eventpipe package reports them (deny, then warn), with an empty document otherwise.
results(stack) := array.concat(denied, warned) if {
	denied := data.eventpipe.deny with data.eventpipe.model.resources as stack with data.eventpipe.model.problems as []
	warned := data.eventpipe.warn with data.eventpipe.model.resources as stack with data.eventpipe.model.problems as []
}

# verdicts(stack) is "level:id" for each result on a stack.
verdicts(stack) := {v |
	denied := data.eventpipe.deny with data.eventpipe.model.resources as stack with data.eventpipe.model.problems as []
	warned := data.eventpipe.warn with data.eventpipe.model.resources as stack with data.eventpipe.model.problems as []
	some v in ({concat(":", ["deny", f.id]) | some f in denied} | {concat(":", ["warn", f.id]) | some f in warned})
}
