package tfprovider

import "fmt"

// Firestore fields (TTL policies and single-field indexes), as terraform-provider-google
// v7.45.0 declares them (google/services/firestore/resource_firestore_field.go).

func firestoreField() *resourceType {
	return &resourceType{
		name: "google_firestore_field",
		fields: append([]field{
			str("collection", required|forceNew),
			str("field", required|forceNew),
			str("database", optional|forceNew).withDefault("(default)"),
			list("index_config", optional, 1,
				set("indexes", optional,
					str("array_config", optional),
					str("order", optional),
					str("query_scope", optional).withDefault("COLLECTION"),
				),
			),
			list("ttl_config", optional, 1,
				str("expiration_offset", optional|computed|forceNew),
				str("state", computed),
			),
			str("name", computed),
			boolean("skip_wait", optional).withDefault(false),
		}, projectFields()...),
		timeouts: crudTimeouts,
		project:  true, deletionPolicy: "DELETE",
		id: func(v object) string { return text(v, "name") },
		created: func(v object, _ *providerConfig) {
			setUnknown(v, "name", fmt.Sprintf("projects/%s/databases/%s/collectionGroups/%s/fields/%s",
				text(v, "project"), text(v, "database"), text(v, "collection"), text(v, "field")))
			if ttl, ok := v["ttl_config"].([]any); ok && len(ttl) == 1 {
				if t, ok := ttl[0].(object); ok {
					setUnknown(t, "state", "ACTIVE")
				}
			}
		},
	}
}
