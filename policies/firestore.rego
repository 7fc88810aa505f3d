package eventpipe.rules

import rego.v1

import data.eventpipe.lib

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
#   fix: >-
#     Add a firestore Field resource for each collection on field expireAt with a non-nil
#     ttlConfig (the eventpipe Firestore TTL component does this).
stack_warn_consumer_collection_without_ttl contains f if {
	m := lib.rule(rego.metadata.chain())
	not unknown_ttl_policy
	some svc in lib.resources_of(lib.run_service_type)
	env := service_env(svc)
	store := env.EVENTPIPE_STORE
	lib.known_string(store)
	startswith(store, "firestore://")
	prefix := object.get(env, "EVENTPIPE_COLLECTION_PREFIX", "eventpipe_")
	lib.known_string(prefix)
	database := firestore_database(store)
	some suffix in consumer_collections
	collection := concat("", [prefix, suffix])
	not ttl_policies[[collection, database]]
	text := sprintf("%s stores records in Firestore collection %q (database %q) without a TTL policy on expireAt", [lib.display(svc), collection, database])
	f := lib.finding(svc, text, m)
}

# service_env(svc) maps the env var names of every container of svc to their values.
service_env(svc) := {e.name: object.get(e, "value", "") |
	some c in object.get(lib.prop(svc, ["template"]), "containers", [])
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

ttl_fields := lib.resources_of(lib.firestore_field_type)

# ttl_policies holds [collection, database] for every TTL policy on expireAt, indexed once
# so each service's collections are looked up, not searched for among every field.
ttl_policies contains [lib.prop(f, ["collection"]), field_database(f)] if {
	some f in ttl_fields
	lib.prop(f, ["field"]) == "expireAt"
	is_object(lib.prop(f, ["ttlConfig"]))
}

field_database(f) := db if {
	db := lib.prop(f, ["database"])
	lib.known_string(db)
} else := "(default)"

# unknown_ttl_policy holds when a Field's collection or field is not shown by the plan.
unknown_ttl_policy if {
	some f in ttl_fields
	lib.unknown(lib.prop(f, ["collection"]))
}

unknown_ttl_policy if {
	some f in ttl_fields
	lib.unknown(lib.prop(f, ["field"]))
}
