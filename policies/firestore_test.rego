package eventpipe

import rego.v1

test_ttl_policies_present_pass if {
	count(stack_warn_consumer_collection_without_ttl) == 0 with input as stack_with(good_stack)
}

test_ttl_policy_missing_warns if {
	s := drop(good_stack, ttl_field("eventpipe_leases"))
	msgs := stack_warn_consumer_collection_without_ttl with input as stack_with(s)
	msgs == {sprintf(`%s: Service 'orders-consumer' stores records in Firestore collection "eventpipe_leases" (database "(default)") without a TTL policy on expireAt`, [consumer_service.urn])}
}

test_ttl_config_nil_warns if {
	broken := object.union(object.remove(ttl_field("eventpipe_dedupe"), ["properties"]), {"properties": object.remove(ttl_field("eventpipe_dedupe").properties, ["ttlConfig"])})
	s := replace(good_stack, ttl_field("eventpipe_dedupe"), broken)
	count(stack_warn_consumer_collection_without_ttl) == 1 with input as stack_with(s)
}

test_collection_prefix_from_env if {
	envs := [{"name": "EVENTPIPE_STORE", "value": "firestore://acme-prod/(default)"}, {"name": "EVENTPIPE_COLLECTION_PREFIX", "value": "ops_"}]
	svc := with_props(consumer_service, {"template": {"containers": [{"image": "i", "envs": envs}]}})
	count(stack_warn_consumer_collection_without_ttl) == 3 with input as stack_with(replace(good_stack, consumer_service, svc))
}

test_non_firestore_store_pass if {
	svc := with_props(consumer_service, {"template": {"containers": [{"image": "i", "envs": [{"name": "EVENTPIPE_STORE", "value": "postgres://db/x"}]}]}})
	count(stack_warn_consumer_collection_without_ttl) == 0 with input as stack_with([svc])
}

test_unknown_field_collection_no_verdict if {
	blind := with_props(ttl_field("eventpipe_dedupe"), {"collection": unknown_value})
	count(stack_warn_consumer_collection_without_ttl) == 0 with input as stack_with(replace(good_stack, ttl_field("eventpipe_dedupe"), blind))
}
