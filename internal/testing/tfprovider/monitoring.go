package tfprovider

import (
	"fmt"
	"hash/fnv"
)

// Cloud Monitoring alert policies, as terraform-provider-google v7.45.0 declares them
// (google/services/monitoring/resource_monitoring_alert_policy.go).

func aggregations(name string) field {
	return list(name, optional, 0,
		str("alignment_period", optional),
		str("cross_series_reducer", optional),
		strList("group_by_fields", optional),
		str("per_series_aligner", optional),
	)
}

func trigger() field {
	return list("trigger", optional, 1,
		integer("count", optional),
		float("percent", optional),
	)
}

func alertConditions() field {
	return list("conditions", required, 0,
		str("display_name", required),
		list("condition_absent", optional, 1,
			str("duration", required),
			aggregations("aggregations"),
			str("filter", optional),
			trigger(),
		),
		list("condition_matched_log", optional, 1,
			str("filter", required),
			strMap("label_extractors", optional),
		),
		list("condition_monitoring_query_language", optional, 1,
			str("duration", required),
			str("query", required),
			str("evaluation_missing_data", optional),
			trigger(),
		),
		list("condition_prometheus_query_language", optional, 1,
			str("query", required),
			str("alert_rule", optional),
			boolean("disable_metric_validation", optional),
			str("duration", optional),
			str("evaluation_interval", optional),
			strMap("labels", optional),
			str("rule_group", optional),
		),
		list("condition_sql", optional, 1,
			str("query", required),
			list("boolean_test", optional, 1,
				str("column", required),
			),
			list("daily", optional, 1,
				integer("periodicity", required),
				list("execution_time", optional, 1,
					integer("hours", optional),
					integer("minutes", optional),
					integer("nanos", optional),
					integer("seconds", optional),
				),
			),
			list("hourly", optional, 1,
				integer("periodicity", required),
				integer("minute_offset", optional),
			),
			list("minutes", optional, 1,
				integer("periodicity", required),
			),
			list("row_count_test", optional, 1,
				str("comparison", required),
				integer("threshold", required),
			),
		),
		list("condition_threshold", optional, 1,
			str("comparison", required),
			str("duration", required),
			aggregations("aggregations"),
			aggregations("denominator_aggregations"),
			str("denominator_filter", optional),
			str("evaluation_missing_data", optional),
			str("filter", optional),
			list("forecast_options", optional, 1,
				str("forecast_horizon", required),
			),
			float("threshold_value", optional),
			trigger(),
		),
		str("name", computed),
	)
}

func monitoringAlertPolicy() *resourceType {
	return &resourceType{
		name: "google_monitoring_alert_policy",
		fields: append([]field{
			str("combiner", required),
			alertConditions(),
			str("display_name", required),
			list("alert_strategy", optional, 1,
				str("auto_close", optional),
				list("notification_channel_strategy", optional, 0,
					strList("notification_channel_names", optional),
					str("renotify_interval", optional),
				),
				strList("notification_prompts", optional),
				list("notification_rate_limit", optional, 1,
					str("period", optional),
				),
			),
			list("documentation", optional, 1,
				str("content", optional),
				list("links", optional, 0,
					str("display_name", optional),
					str("url", optional),
				),
				str("mime_type", optional).withDefault("text/markdown"),
				str("subject", optional),
			),
			boolean("enabled", optional).withDefault(true),
			strList("notification_channels", optional),
			str("severity", optional),
			strMap("user_labels", optional),
			list("creation_record", computed, 0,
				str("mutate_time", computed),
				str("mutated_by", computed),
			),
			str("name", computed),
		}, projectFields()...),
		timeouts: crudTimeouts,
		project:  true, deletionPolicy: "DELETE",
		id: func(v object) string { return text(v, "name") },
		created: func(v object, _ *providerConfig) {
			// The API numbers policies; the stand-in derives the number from the name.
			h := fnv.New32a()
			h.Write([]byte(text(v, "display_name")))
			name := fmt.Sprintf("projects/%s/alertPolicies/%d", text(v, "project"), h.Sum32())
			setUnknown(v, "name", name)
			if conds, ok := v["conditions"].([]any); ok {
				for i, c := range conds {
					if c, ok := c.(object); ok {
						setUnknown(c, "name", fmt.Sprintf("%s/conditions/%d", name, i+1))
					}
				}
			}
		},
	}
}
