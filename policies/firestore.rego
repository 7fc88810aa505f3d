package eventpipe

import rego.v1

# Rules on the consumer's Firestore collections.

# consumer_collections are the suffixes of the consumer's expiring collections.
consumer_collections := ["dedupe", "leases", "receipts"]

# METADATA
# title: Consumer collection without a Firestore TTL policy
# description: >-
#   The consumer's dedupe, lease and receipt records carry an expireAt timestamp; without a
#   Firestore TTL policy on that field the collections grow forever (storage, index bloat
#   and cost). A Cloud Run service whose EVENTPIPE_STORE is firestore://PROJECT/DATABASE
#   uses the collections EVENTPIPE_COLLECTION_PREFIX (default eventpipe_) + dedupe, leases,
#   receipts.
# custom:
#   id: EP014
#   severity: low
#   fix: Add a firestore Field resource for each collection on field expireAt with a non-nil ttlConfig (the eventpipe Firestore TTL component does this).
stack_warn_consumer_collection_without_ttl contains msg if {
	some svc in resources_of(run_service_type)
	env := service_env(svc)
	store := env.EVENTPIPE_STORE
	known_string(store)
	startswith(store, "firestore://")
	prefix := object.get(env, "EVENTPIPE_COLLECTION_PREFIX", "eventpipe_")
	known_string(prefix)
	database := firestore_database(store)
	some suffix in consumer_collections
	collection := concat("", [prefix, suffix])
	not ttl_policy(collection, database)
	not unknown_ttl_policy
	msg := finding(svc, sprintf("%s stores records in Firestore collection %q (database %q) without a TTL policy on expireAt", [display(svc), collection, database]))
}

# service_env(svc) maps the env var names of every container of svc to their values.
service_env(svc) := {e.name: object.get(e, "value", "") |
	some c in object.get(prop(svc, ["template"]), "containers", [])
	some e in object.get(c, "envs", [])
	is_string(e.name)
}

# firestore_database("firestore://PROJECT/DATABASE") is DATABASE ("(default)" when absent).
firestore_database(store) := db if {
	parts := split(trim_prefix(store, "firestore://"), "/")
	count(parts) > 1
	db := parts[1]
	db != ""
} else := "(default)"

ttl_fields := resources_of(firestore_field_type)

# ttl_policies holds [collection, database] for every TTL policy on expireAt, indexed once
# so each service's collections are looked up, not searched for among every field.
ttl_policies := {[prop(f, ["collection"]), field_database(f)] |
	some f in ttl_fields
	prop(f, ["field"]) == "expireAt"
	is_object(prop(f, ["ttlConfig"]))
}

ttl_policy(collection, database) if ttl_policies[[collection, database]]

field_database(f) := db if {
	db := prop(f, ["database"])
	known_string(db)
} else := "(default)"

# unknown_ttl_policy holds when a Field's collection or field is not shown by the plan.
unknown_ttl_policy if {
	some f in ttl_fields
	unknown(prop(f, ["collection"]))
}

unknown_ttl_policy if {
	some f in ttl_fields
	unknown(prop(f, ["field"]))
}
