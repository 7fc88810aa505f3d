package eventpipe.firestore_test

import rego.v1

import data.eventpipe.fixtures_test as fx
import data.eventpipe.lib
import data.eventpipe.rules

ttl_warnings(s) := found if {
	found := rules.stack_warn_consumer_collection_without_ttl with data.eventpipe.model.resources as s
}

test_ttl_policy_missing_warns if {
	s := fx.drop(fx.good_stack, fx.ttl_field("eventpipe_leases"))
	fx.messages(ttl_warnings(s)) == {`EP014: Service 'orders-consumer' stores records in Firestore collection "eventpipe_leases" (database "(default)") without a TTL policy on expireAt`}
	fx.verdicts(s) == {"warn:EP014"}
}

test_ttl_config_nil_warns if {
	s := fx.swap(fx.good_stack, fx.ttl_field("eventpipe_dedupe"), fx.without_prop(fx.ttl_field("eventpipe_dedupe"), "ttlConfig"))
	count(ttl_warnings(s)) == 1
}

test_collection_prefix_from_env if {
	envs := [{"name": "EVENTPIPE_STORE", "value": "firestore://acme-prod/(default)"}, {"name": "EVENTPIPE_COLLECTION_PREFIX", "value": "ops_"}]
	svc := fx.with_props(fx.consumer_service, {"template": {"containers": [{"image": "i", "envs": envs}]}})
	count(ttl_warnings(fx.swap(fx.good_stack, fx.consumer_service, svc))) == 3
}

test_named_database if {
	svc := fx.with_props(fx.consumer_service, {"template": {"containers": [{"image": "i", "envs": [{"name": "EVENTPIPE_STORE", "value": "firestore://acme-prod/events"}]}]}})
	count(ttl_warnings(fx.swap(fx.good_stack, fx.consumer_service, svc))) == 3
}

test_non_firestore_store_pass if {
	svc := fx.with_props(fx.consumer_service, {"template": {"containers": [{"image": "i", "envs": [{"name": "EVENTPIPE_STORE", "value": "postgres://db/x"}]}]}})
	count(ttl_warnings([svc])) == 0
}

test_unknown_field_collection_no_verdict if {
	blind := fx.with_props(fx.ttl_field("eventpipe_dedupe"), {"collection": lib.unknown_value})
	count(ttl_warnings(fx.swap(fx.good_stack, fx.ttl_field("eventpipe_dedupe"), blind))) == 0
}
