package tfprovider

import (
	"fmt"
	"slices"
	"strings"
)

// Cloud Run v2 services and their IAM, as terraform-provider-google v7.45.0 declares them
// (google/services/cloudrunv2: resource_cloud_run_v2_service.go,
// iam_cloud_run_v2_service.go).

// probe is a container's liveness or startup probe, whose unset settings have defaults.
func probe(name string, o opts, tcpPort opts) field {
	return list(name, o, 1,
		integer("failure_threshold", optional).withDefault(3),
		list("grpc", optional, 1,
			integer("port", optional|computed),
			str("service", optional),
		),
		list("http_get", optional, 1,
			list("http_headers", optional, 0,
				str("name", required),
				str("value", optional).withDefault(""),
			),
			str("path", optional).withDefault("/"),
			integer("port", optional|computed),
		),
		integer("initial_delay_seconds", optional).withDefault(0),
		integer("period_seconds", optional).withDefault(10),
		list("tcp_socket", optional, 1,
			integer("port", tcpPort),
		),
		integer("timeout_seconds", optional).withDefault(1),
	)
}

// conditionFields is a service's conditions or terminal_condition: computed only, so an
// attribute holding a list of objects.
func conditionFields(name string) field {
	return list(name, computed, 0,
		str("execution_reason", computed),
		str("last_transition_time", computed),
		str("message", computed),
		str("reason", computed),
		str("revision_reason", computed),
		str("severity", computed),
		str("state", computed),
		str("type", computed),
	)
}

func volumeMounts() field {
	return list("volume_mounts", optional, 0,
		str("mount_path", required),
		str("name", required),
		str("sub_path", optional),
	)
}

func cloudRunContainers() field {
	return list("containers", optional, 0,
		str("image", required),
		strList("args", optional),
		str("base_image_uri", optional),
		strList("command", optional),
		strList("depends_on", optional),
		set("env", optional,
			str("name", required),
			str("value", optional).withDefault(""),
			list("value_source", optional, 1,
				list("secret_key_ref", optional, 1,
					str("secret", required),
					str("version", optional),
				),
			),
		),
		probe("liveness_probe", optional, required),
		str("name", optional),
		list("ports", optional|computed, 1,
			integer("container_port", optional),
			str("name", optional|computed),
		),
		list("readiness_probe", optional, 1,
			integer("failure_threshold", optional|computed),
			list("grpc", optional, 1,
				integer("port", optional|computed),
				str("service", optional),
			),
			list("http_get", optional, 1,
				str("path", optional|computed),
				integer("port", optional|computed),
			),
			integer("period_seconds", optional|computed),
			integer("success_threshold", optional|computed),
			integer("timeout_seconds", optional|computed),
		),
		list("resources", optional|computed, 1,
			boolean("cpu_idle", optional),
			strMap("limits", optional|computed),
			boolean("startup_cpu_boost", optional),
		),
		boolean("sandbox_launcher", optional),
		probe("startup_probe", optional|computed, optional|computed),
		volumeMounts(),
		str("working_dir", optional),
		list("build_info", computed, 0,
			str("function_target", computed),
			str("source_location", computed),
		),
	)
}

func cloudRunTemplate() field {
	return list("template", required, 1,
		strMap("annotations", optional),
		cloudRunContainers(),
		str("encryption_key", optional),
		str("execution_environment", optional),
		boolean("gpu_zonal_redundancy_disabled", optional),
		boolean("health_check_disabled", optional),
		strMap("labels", optional),
		integer("max_instance_request_concurrency", optional|computed),
		list("node_selector", optional, 1,
			str("accelerator", required),
		),
		str("revision", optional),
		list("sandboxes", optional, 1,
			list("templates", optional, 0,
				str("image", required),
				str("name", required),
				strList("args", optional),
				strList("command", optional),
				set("env", optional,
					str("name", required),
					str("value", optional).withDefault(""),
				),
				volumeMounts(),
				str("working_dir", optional),
			),
		),
		list("scaling", optional|computed, 1,
			integer("max_instance_count", optional|computed),
			integer("min_instance_count", optional),
		),
		str("service_account", optional|computed),
		boolean("session_affinity", optional),
		str("timeout", optional|computed),
		list("volumes", optional, 0,
			str("name", required),
			list("cloud_sql_instance", optional, 1,
				strSet("instances", optional),
			),
			list("empty_dir", optional, 1,
				str("medium", optional).withDefault("MEMORY"),
				str("size_limit", optional),
			),
			list("gcs", optional, 1,
				str("bucket", required),
				strList("mount_options", optional),
				boolean("read_only", optional),
			),
			list("nfs", optional, 1,
				str("path", required),
				str("server", required),
				boolean("read_only", optional),
			),
			list("secret", optional, 1,
				str("secret", required),
				integer("default_mode", optional),
				list("items", optional, 0,
					str("path", required),
					integer("mode", optional),
					str("version", optional),
				),
			),
		),
		list("vpc_access", optional, 1,
			str("connector", optional),
			str("egress", optional|computed),
			list("network_interfaces", optional, 0,
				str("network", optional|computed),
				str("subnetwork", optional|computed),
				strList("tags", optional),
			),
		),
	)
}

func cloudRunService() *resourceType {
	fields := []field{
		str("location", required|forceNew),
		str("name", required|forceNew),
		cloudRunTemplate(),
		strMap("annotations", optional),
		list("binary_authorization", optional, 1,
			str("breakglass_justification", optional),
			str("policy", optional),
			boolean("use_default", optional),
		),
		list("build_config", optional, 1,
			str("base_image", optional),
			boolean("enable_automatic_updates", optional),
			strMap("environment_variables", optional),
			str("function_target", optional),
			str("image_uri", optional),
			str("service_account", optional),
			str("source_location", optional),
			str("worker_pool", optional),
			str("name", computed),
		),
		str("client", optional),
		str("client_version", optional),
		strList("custom_audiences", optional),
		boolean("default_uri_disabled", optional),
		str("description", optional),
		boolean("iap_enabled", optional),
		str("ingress", optional|computed),
		boolean("invoker_iam_disabled", optional),
		str("launch_stage", optional|computed),
		list("multi_region_settings", optional, 1,
			strList("regions", optional),
			str("multi_region_id", computed),
		),
		list("scaling", optional|computed, 1,
			integer("manual_instance_count", optional|computed),
			integer("max_instance_count", optional|computed),
			integer("min_instance_count", optional|computed),
			str("scaling_mode", optional),
		),
		strMap("tags", optional|forceNew),
		list("traffic", optional|computed, 0,
			integer("percent", optional|computed),
			str("revision", optional),
			str("tag", optional),
			str("type", optional),
		),
		conditionFields("conditions"),
		str("create_time", computed),
		str("creator", computed),
		str("delete_time", computed),
		strMap("effective_annotations", computed),
		str("etag", computed),
		str("expire_time", computed),
		str("generation", computed),
		str("last_modifier", computed),
		str("latest_created_revision", computed),
		str("latest_ready_revision", computed),
		str("observed_generation", computed),
		boolean("reconciling", computed),
		conditionFields("terminal_condition"),
		list("traffic_statuses", computed, 0,
			integer("percent", computed),
			str("revision", computed),
			str("tag", computed),
			str("type", computed),
			str("uri", computed),
		),
		str("uid", computed),
		str("update_time", computed),
		str("uri", computed),
		strList("urls", computed),
		boolean("deletion_protection", optional).withDefault(true),
	}
	return &resourceType{
		name:     "google_cloud_run_v2_service",
		fields:   slices.Concat(fields, projectFields(), labelFields()),
		timeouts: crudTimeouts,
		labels:   true, annotations: true, project: true, deletionPolicy: "DELETE",
		id: func(v object) string {
			return fmt.Sprintf("projects/%s/locations/%s/services/%s", text(v, "project"), text(v, "location"), text(v, "name"))
		},
		created: func(v object, _ *providerConfig) {
			uri := fmt.Sprintf("https://%s-%s.%s.run.app", text(v, "name"), projectNumber(text(v, "project")), text(v, "location"))
			setUnknown(v, "uri", uri)
			setUnknown(v, "urls", []any{uri})
			setUnknown(v, "ingress", "INGRESS_TRAFFIC_ALL")
			setUnknown(v, "launch_stage", "GA")
		},
	}
}

func cloudRunIAM() []*resourceType {
	return iamResources("google_cloud_run_v2_service",
		[]field{
			str("project", optional|computed|forceNew),
			str("location", optional|computed|forceNew),
			str("name", required|forceNew),
		},
		func(v object, p *providerConfig) string {
			name := text(v, "name")
			if strings.HasPrefix(name, "projects/") {
				return name
			}
			location := text(v, "location")
			if location == "" {
				location = p.region
			}
			return fmt.Sprintf("projects/%s/locations/%s/services/%s", projectOf(v, p), location, name)
		}, true)
}
