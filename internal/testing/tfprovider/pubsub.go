package tfprovider

import (
	"fmt"
	"math/big"
	"slices"
	"strings"
)

// Pub/Sub topics, subscriptions and their IAM, as terraform-provider-google v7.45.0
// declares them (google/services/pubsub: resource_pubsub_topic.go,
// resource_pubsub_subscription.go, iam_pubsub_topic.go, iam_pubsub_subscription.go;
// google/tpgiamresource for the IAM member, binding and policy fields).

// messageTransforms is the message_transforms block topics and subscriptions share.
func messageTransforms() field {
	return list("message_transforms", optional, 0,
		list("ai_inference", optional, 1,
			str("endpoint", required),
			str("service_account_email", optional),
			list("unstructured_inference", optional, 1,
				strMap("parameters", optional),
			),
		),
		boolean("disabled", optional).withDefault(false),
		list("javascript_udf", optional, 1,
			str("code", required),
			str("function_name", required),
		),
	)
}

// labelFields are the labels a labelled resource declares and the two maps SetLabelsDiff
// plans from them.
func labelFields() []field {
	return []field{
		strMap("labels", optional),
		strMap("effective_labels", computed),
		strMap("terraform_labels", computed),
	}
}

// projectFields are the project a resource lives in (the provider's when unset) and what
// destroying it does (deletion_policy), which most resources declare last.
func projectFields() []field {
	return []field{
		str("project", optional|computed|forceNew),
		str("deletion_policy", optional|computed),
	}
}

var crudTimeouts = []string{"create", "update", "delete"}

func pubsubTopic() *resourceType {
	fields := []field{
		str("name", required|forceNew),
		list("ingestion_data_source_settings", optional, 1,
			list("aws_kinesis", optional, 1,
				str("aws_role_arn", required),
				str("consumer_arn", required),
				str("gcp_service_account", required),
				str("stream_arn", required),
			),
			list("aws_msk", optional, 1,
				str("aws_role_arn", required),
				str("cluster_arn", required),
				str("gcp_service_account", required),
				str("topic", required),
			),
			list("azure_event_hubs", optional, 1,
				str("client_id", optional),
				str("event_hub", optional),
				str("gcp_service_account", optional),
				str("namespace", optional),
				str("resource_group", optional),
				str("subscription_id", optional),
				str("tenant_id", optional),
			),
			list("cloud_storage", optional, 1,
				str("bucket", required),
				list("avro_format", optional, 1),
				str("match_glob", optional),
				str("minimum_object_create_time", optional),
				list("pubsub_avro_format", optional, 1),
				list("text_format", optional, 1,
					str("delimiter", optional).withDefault("\n"),
				),
			),
			list("confluent_cloud", optional, 1,
				str("bootstrap_server", required),
				str("gcp_service_account", required),
				str("identity_pool_id", required),
				str("topic", required),
				str("cluster_id", optional),
			),
			list("platform_logs_settings", optional, 1,
				str("severity", optional).withDefault("SEVERITY_UNSPECIFIED"),
			),
		),
		str("kms_key_name", optional),
		str("message_retention_duration", optional),
		list("message_storage_policy", optional|computed, 1,
			strSet("allowed_persistence_regions", required),
			boolean("enforce_in_transit", optional),
		),
		messageTransforms(),
		list("schema_settings", optional, 1,
			str("schema", required),
			str("encoding", optional).withDefault("ENCODING_UNSPECIFIED"),
			str("first_revision_id", optional),
			str("last_revision_id", optional),
		),
		strMap("tags", optional|forceNew),
	}
	return &resourceType{
		name:     "google_pubsub_topic",
		fields:   slices.Concat(fields, projectFields(), labelFields()),
		timeouts: crudTimeouts,
		labels:   true, project: true, deletionPolicy: "DELETE",
		id: func(v object) string {
			return fmt.Sprintf("projects/%s/topics/%s", text(v, "project"), text(v, "name"))
		},
		created: func(v object, _ *providerConfig) {
			setUnknown(v, "message_storage_policy", []any{})
		},
	}
}

// pubsubTopicData is the google_pubsub_topic data source (data_source_pubsub_topic.go):
// the resource's fields, all computed (DatasourceSchemaFromResourceSchema), but name
// (required) and project (optional). Reading it returns the topic as it exists.
func pubsubTopicData() *resourceType {
	var fields []field
	for _, f := range pubsubTopic().fields {
		switch f.name {
		case "name":
			f.opts = required
		case "project":
			f.opts = optional
		default:
			f = computedOnly(f)
		}
		fields = append(fields, f)
	}
	return &resourceType{
		name:   "google_pubsub_topic",
		fields: fields,
		read: func(v object, p *providerConfig) error {
			project, err := dataProject(v, "project", p)
			if err != nil {
				return err
			}
			v["project"] = project
			v["id"] = fmt.Sprintf("projects/%s/topics/%s", project, text(v, "name"))
			v["labels"], v["terraform_labels"], v["effective_labels"] = object{}, object{}, object{}
			return nil
		},
	}
}

// computedOnly is f as a data source declares a field of its resource: computed, without
// a default, its nested fields alike (DatasourceSchemaFromResourceSchema).
func computedOnly(f field) field {
	f.opts, f.def = computed, nil
	nested := make([]field, len(f.fields))
	for i, n := range f.fields {
		nested[i] = computedOnly(n)
	}
	f.fields = nested
	return f
}

func pubsubSubscription() *resourceType {
	fields := []field{
		str("name", required|forceNew),
		str("topic", required|forceNew),
		integer("ack_deadline_seconds", optional|computed),
		list("bigquery_config", optional, 1,
			str("table", required),
			boolean("drop_unknown_fields", optional),
			str("service_account_email", optional),
			boolean("use_table_schema", optional),
			boolean("use_topic_schema", optional),
			boolean("write_metadata", optional),
		),
		list("cloud_storage_config", optional, 1,
			str("bucket", required),
			list("avro_config", optional, 1,
				boolean("use_topic_schema", optional),
				boolean("write_metadata", optional),
			),
			str("filename_datetime_format", optional),
			str("filename_prefix", optional),
			str("filename_suffix", optional),
			integer("max_bytes", optional),
			str("max_duration", optional).withDefault("300s"),
			integer("max_messages", optional),
			str("service_account_email", optional),
			list("text_config", optional|computed, 1,
				str("state", computed),
			),
			str("state", computed),
		),
		list("dead_letter_policy", optional, 1,
			str("dead_letter_topic", optional),
			integer("max_delivery_attempts", optional),
		),
		boolean("enable_exactly_once_delivery", optional),
		boolean("enable_message_ordering", optional|forceNew),
		list("expiration_policy", optional|computed, 1,
			str("ttl", required),
		),
		str("filter", optional|forceNew),
		str("message_retention_duration", optional).withDefault("604800s"),
		messageTransforms(),
		list("push_config", optional, 1,
			str("push_endpoint", required),
			strMap("attributes", optional),
			list("no_wrapper", optional, 1,
				boolean("write_metadata", required),
			),
			list("oidc_token", optional, 1,
				str("service_account_email", required),
				str("audience", optional),
			),
		),
		boolean("retain_acked_messages", optional),
		list("retry_policy", optional, 1,
			str("maximum_backoff", optional|computed),
			str("minimum_backoff", optional|computed),
		),
		strMap("tags", optional|forceNew),
	}
	return &resourceType{
		name:     "google_pubsub_subscription",
		fields:   slices.Concat(fields, projectFields(), labelFields()),
		timeouts: crudTimeouts,
		labels:   true, project: true, deletionPolicy: "DELETE",
		id: func(v object) string {
			return fmt.Sprintf("projects/%s/subscriptions/%s", text(v, "project"), text(v, "name"))
		},
		created: func(v object, _ *providerConfig) {
			// The API's defaults: a 10 s ack deadline, expiry after 31 idle days, and a
			// retry policy's unset backoffs at 10 s and 600 s.
			setUnknown(v, "ack_deadline_seconds", big.NewFloat(10))
			setUnknown(v, "expiration_policy", []any{object{"ttl": "2678400s"}})
			if rp, ok := v["retry_policy"].([]any); ok && len(rp) == 1 {
				if p, ok := rp[0].(object); ok {
					setUnknown(p, "minimum_backoff", "10s")
					setUnknown(p, "maximum_backoff", "600s")
				}
			}
		},
	}
}

// iamFields are the parent's fields an IAM resource of kind ("member", "binding" or
// "policy") adds its own to, as tpgiamresource declares them.
func iamFields(kind string, parent ...field) []field {
	condition := list("condition", optional|forceNew, 1,
		str("expression", required|forceNew),
		str("title", required|forceNew),
		str("description", optional|forceNew),
	)
	var own []field
	switch kind {
	case "member":
		own = []field{str("role", required|forceNew), str("member", required|forceNew), condition}
	case "binding":
		own = []field{str("role", required|forceNew), strSet("members", required), condition}
	case "policy":
		own = []field{str("policy_data", required)}
	}
	return append(append(own, str("etag", computed)), parent...)
}

// iamID is the id the real provider gives an IAM resource of kind on the resource
// named resourceID.
func iamID(kind, resourceID string, v object) string {
	switch kind {
	case "member":
		return resourceID + "/" + text(v, "role") + "/" + text(v, "member")
	case "binding":
		return resourceID + "/" + text(v, "role")
	}
	return resourceID
}

// iamResources returns the member, binding and policy resources on a parent type:
// prefix_iam_member and so on, with the parent's fields and the parent's resource name
// (from the applied values and the provider's project).
func iamResources(prefix string, parent []field, resourceID func(v object, p *providerConfig) string, project bool) []*resourceType {
	var out []*resourceType
	for _, kind := range []string{"member", "binding", "policy"} {
		out = append(out, &resourceType{
			name:   prefix + "_iam_" + kind,
			fields: iamFields(kind, parent...),
			created: func(v object, p *providerConfig) {
				if project {
					setUnknown(v, "project", p.project)
				}
				setUnknown(v, "etag", "BwXhqDP3ZMA=")
				setUnknown(v, "id", iamID(kind, resourceID(v, p), v))
			},
		})
	}
	return out
}

// qualified returns ref ("NAME" or "projects/P/COLLECTION/NAME") as
// projects/P/COLLECTION/NAME, P being project when ref does not name one.
func qualified(ref, collection, project string) string {
	if strings.HasPrefix(ref, "projects/") {
		return ref
	}
	return fmt.Sprintf("projects/%s/%s/%s", project, collection, ref)
}

func projectOf(v object, p *providerConfig) string {
	if s := text(v, "project"); s != "" {
		return s
	}
	return p.project
}

func pubsubIAM() []*resourceType {
	topic := iamResources("google_pubsub_topic",
		[]field{str("project", optional|computed|forceNew), str("topic", required|forceNew)},
		func(v object, p *providerConfig) string {
			return qualified(text(v, "topic"), "topics", projectOf(v, p))
		}, true)
	subscription := iamResources("google_pubsub_subscription",
		[]field{str("subscription", required|forceNew), str("project", optional|computed|forceNew)},
		func(v object, p *providerConfig) string {
			return qualified(text(v, "subscription"), "subscriptions", projectOf(v, p))
		}, true)
	return append(topic, subscription...)
}
