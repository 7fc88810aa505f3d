package tfgen

import (
	"fmt"
	"strings"
)

// Planned values. A value is built as one tree in which unknown marks a value known only
// after apply and sensitive{v} a sensitive one; split turns it into the after,
// after_unknown and after_sensitive trees Terraform prints.

// unknownValue marks a value known only after apply.
type unknownValue struct{}

// sensitive marks a sensitive value.
type sensitive struct{ v any }

var unknown = unknownValue{}

// split returns the value as after prints it (present false: left out, as Terraform
// leaves unknown attributes out), and its after_unknown and after_sensitive marks: true
// for a marked value, the same shape of marks for a container, false for anything else.
func split(v any) (after any, present bool, unk, sens any) {
	switch x := v.(type) {
	case unknownValue:
		return nil, false, true, false
	case sensitive:
		a, p, u, _ := split(x.v)
		return a, p, u, true
	case map[string]any:
		a, u, s := map[string]any{}, map[string]any{}, map[string]any{}
		for k, e := range x {
			ea, ep, eu, es := split(e)
			if ep {
				a[k] = ea
			}
			if eu != false {
				u[k] = eu
			}
			if es != false {
				s[k] = es
			}
		}
		return a, true, u, s
	case []any:
		a, u, s := make([]any, len(x)), make([]any, len(x)), make([]any, len(x))
		for i, e := range x {
			a[i], _, u[i], s[i] = split(e)
		}
		return a, true, u, s
	}
	return v, true, false, false
}

// camelCase is the model's camel_case: every "_x" (x a lowercase letter or digit) becomes
// "X", left to right.
var camelCase = func() *strings.Replacer {
	var pairs []string
	for _, c := range "abcdefghijklmnopqrstuvwxyz0123456789" {
		pairs = append(pairs, "_"+string(c), strings.ToUpper(string(c)))
	}
	return strings.NewReplacer(pairs...)
}()

// renamed are the attributes the model renames beyond camelCase.
var renamed = map[string]string{"env": "envs", "traffic": "traffics"}

// modelName is the name the model gives an attribute name (not a map key).
func modelName(k string) string {
	if n, ok := renamed[k]; ok {
		return n
	}
	return camelCase.Replace(k)
}

// oddKeys are attribute names whose camelCase is easy to get wrong: doubled, leading and
// trailing underscores, digits, capitals. No two of them convert to the same name (two
// attributes of one object that did would make the Rego model fail on a conflict, which
// no real provider schema causes), and none converts to a name the schemas below use.
var oddKeys = []string{"a__b", "trailing_", "_lead", "x_9", "already_Upper", "UPPER_case", "snake_case_name", "plain", "k8s_v1_2", "env", "traffic"}

// nested builds an object nested depth levels deep under odd keys, lists and objects in
// turn, with a scalar, an unknown or a sensitive value at the bottom.
func (g *gen) nested(depth int) any {
	if depth == 0 {
		return weighted(g, []weight[any]{{"leaf", 4}, {unknown, 1}, {sensitive{"s3cr3t"}, 1}, {nil, 1}, {42, 1}, {true, 1}})
	}
	if g.chance(0.4) {
		n := 1 + g.r.IntN(2)
		out := make([]any, n)
		for i := range out {
			out[i] = g.nested(depth - 1)
		}
		return out
	}
	out := map[string]any{}
	used := map[string]bool{}
	for range 1 + g.r.IntN(3) {
		k := pick(g, oddKeys...)
		if used[modelName(k)] {
			continue
		}
		used[modelName(k)] = true
		out[k] = g.nested(depth - 1)
	}
	return out
}

// maybe returns v, or now and then an unknown or a null in its place.
func (g *gen) maybe(v any) any {
	switch {
	case g.chance(0.05):
		return unknown
	case g.chance(0.04):
		return nil
	}
	return v
}

func (g *gen) labels() any {
	switch {
	case g.chance(0.1):
		return nil
	case g.chance(0.05):
		return unknown
	case g.chance(0.05):
		return sensitive{map[string]any{"team": "core"}}
	}
	out := map[string]any{"eventpipe_role": pick(g, "consumer", "dlq", "events"), "goog-terraform-provisioned": "true"}
	if g.chance(0.3) {
		out["cost_center"] = "a_b" // a label name stays as it is
	}
	if g.chance(0.1) {
		out["team"] = unknown
	}
	return out
}

// values returns the planned values of a resource instance of typ named name, in project,
// whose linking attributes are filled in by the caller.
func (g *gen) values(typ, name, project string) map[string]any {
	v := map[string]any{"id": unknown, "project": g.maybe(project)}
	switch typ {
	case topicType:
		v["name"] = name
		v["labels"] = g.labels()
		v["effective_labels"] = map[string]any{"goog-terraform-provisioned": "true"}
		v["message_retention_duration"] = g.maybe("86400s")
		v["kms_key_name"] = nil
		v["message_storage_policy"] = pick[any](g, []any{}, unknown, []any{map[string]any{"allowed_persistence_regions": []any{"europe-west1"}, "enforce_in_transit": false}})
		v["schema_settings"] = []any{}
		v["ingestion_data_source_settings"] = []any{}
	case subscriptionType:
		v["name"] = name
		v["labels"] = g.labels()
		v["ack_deadline_seconds"] = g.maybe(pick(g, 10, 60, 600))
		v["message_retention_duration"] = g.maybe("604800s")
		v["retain_acked_messages"] = pick[any](g, nil, false, true)
		v["enable_message_ordering"] = pick[any](g, nil, true)
		v["enable_exactly_once_delivery"] = pick[any](g, nil, false)
		v["filter"] = pick[any](g, nil, "", `attributes.type = "order"`)
		v["expiration_policy"] = []any{map[string]any{"ttl": pick(g, "", "2678400s")}}
		v["retry_policy"] = pick[any](g, []any{}, []any{map[string]any{"minimum_backoff": "10s", "maximum_backoff": g.maybe("600s")}}, unknown)
		v["bigquery_config"] = []any{}
		v["cloud_storage_config"] = []any{}
		v["message_transforms"] = []any{}
		v["push_config"] = g.pushConfig()
	case "google_pubsub_topic_iam_member", "google_pubsub_subscription_iam_member":
		v["role"] = pick(g, "roles/pubsub.publisher", "roles/pubsub.subscriber", "roles/pubsub.viewer")
		v["member"] = g.maybe(g.member())
		v["condition"] = []any{}
		v["etag"] = unknown
	case "google_pubsub_topic_iam_binding", "google_pubsub_subscription_iam_binding":
		v["role"] = pick(g, "roles/pubsub.publisher", "roles/pubsub.subscriber")
		v["members"] = g.maybe([]any{g.member(), g.maybe(g.member())})
		v["condition"] = []any{}
		v["etag"] = unknown
	case "google_pubsub_topic_iam_policy", "google_pubsub_subscription_iam_policy":
		v["policy_data"] = g.maybe(fmt.Sprintf(`{"bindings":[{"members":[%q],"role":"roles/pubsub.publisher"}]}`, g.member()))
		v["etag"] = unknown
	case "google_project_iam_member":
		v["project"] = project
		v["role"] = pick(g, "roles/pubsub.publisher", "roles/iam.serviceAccountTokenCreator", "roles/datastore.user")
		v["member"] = g.maybe(g.member())
		v["condition"] = pick[any](g, []any{}, []any{map[string]any{"title": "t", "expression": "true", "description": nil}})
	case "google_cloud_run_v2_service":
		v["name"] = name
		v["location"] = "europe-west1"
		v["labels"] = g.labels()
		v["annotations"] = pick[any](g, nil, map[string]any{"run.googleapis.com/ingress_status": "all"})
		v["ingress"] = pick(g, "INGRESS_TRAFFIC_ALL", "INGRESS_TRAFFIC_INTERNAL_ONLY")
		v["uri"] = unknown
		v["deletion_protection"] = false
		v["template"] = g.template()
		v["traffic"] = []any{map[string]any{"type": "TRAFFIC_TARGET_ALLOCATION_TYPE_LATEST", "percent": 100, "revision": "", "tag": ""}}
		v["binary_authorization"] = []any{}
	case "google_firestore_field":
		v["collection"] = pick(g, "events", "processed_messages")
		v["field"] = pick(g, "expire_at", "created_at")
		v["database"] = "(default)"
		v["ttl_config"] = pick[any](g, []any{}, []any{map[string]any{"state": unknown}})
		v["index_config"] = pick[any](g, []any{}, []any{map[string]any{"indexes": []any{map[string]any{"order": "ASCENDING", "query_scope": "COLLECTION", "array_config": ""}}}})
	case "google_monitoring_alert_policy":
		v["display_name"] = name
		v["combiner"] = "OR"
		v["enabled"] = true
		v["notification_channels"] = pick[any](g, []any{}, []any{"projects/acme-prod/notificationChannels/1"}, unknown)
		v["user_labels"] = pick[any](g, nil, map[string]any{"snake_key": "v"})
		v["documentation"] = pick[any](g, []any{}, []any{map[string]any{"content": "runbook", "mime_type": "text/markdown", "subject": ""}})
		v["alert_strategy"] = pick[any](g, []any{}, []any{map[string]any{"auto_close": "1800s", "notification_rate_limit": []any{map[string]any{"period": "300s"}}, "notification_prompts": []any{"OPENED"}}})
		v["conditions"] = []any{g.condition()}
	case "random_id":
		v["byte_length"] = 4
		v["hex"] = unknown
		v["keepers"] = map[string]any{"a_b": "1"}
	case "google_storage_bucket":
		v["name"] = name
		v["location"] = "EU"
		v["labels"] = g.labels()
		v["lifecycle_rule"] = []any{map[string]any{"action": []any{map[string]any{"type": "Delete", "storage_class": ""}}, "condition": []any{map[string]any{"age": 30, "matches_prefix": []any{}}}}}
	}
	if g.chance(0.03) {
		// A made-up attribute nested beyond the model's depth.
		v["x_nested"] = g.nested(6 + g.r.IntN(7))
		g.trace.features["deep-value"] = true
	}
	if g.chance(0.04) {
		k := pick(g, oddKeys...)
		taken := false
		for name := range v {
			taken = taken || modelName(name) == modelName(k)
		}
		if !taken {
			v[k] = g.nested(g.r.IntN(3))
			g.trace.features["camel-edge"] = true
		}
	}
	if g.chance(0.02) {
		v["timeouts"] = nil
	}
	return v
}

func (g *gen) member() string {
	return pick(g,
		"serviceAccount:service-123456789012@gcp-sa-pubsub.iam.gserviceaccount.com",
		"serviceAccount:service-210987654321@gcp-sa-pubsub.iam.gserviceaccount.com",
		"serviceAccount:worker@acme-prod.iam.gserviceaccount.com",
		"user:ops@example.com")
}

func (g *gen) pushConfig() any {
	switch g.r.IntN(5) {
	case 0:
		return unknown
	case 1, 2:
		return []any{}
	}
	pc := map[string]any{
		"push_endpoint": g.maybe("https://worker-abc-ew.a.run.app/push"),
		"attributes":    pick[any](g, map[string]any{}, map[string]any{"x-goog-version": "v1"}),
		"no_wrapper":    pick[any](g, []any{}, []any{map[string]any{"write_metadata": true}}),
	}
	switch g.r.IntN(4) {
	case 0:
		pc["oidc_token"] = []any{}
	case 1:
		pc["oidc_token"] = unknown
	default:
		pc["oidc_token"] = []any{map[string]any{
			"service_account_email": g.maybe("invoker@acme-prod.iam.gserviceaccount.com"),
			"audience":              pick[any](g, "", sensitive{"https://worker"}, sensitive{nil}),
		}}
	}
	return []any{pc}
}

func (g *gen) template() any {
	if g.chance(0.05) {
		return unknown
	}
	var envs []any
	for i := range g.r.IntN(4) {
		e := map[string]any{"name": fmt.Sprintf("VAR_%d", i), "value": g.maybe("v"), "value_source": []any{}}
		switch g.r.IntN(4) {
		case 0:
			e["value"] = sensitive{"hunter2"}
		case 1:
			e["value"] = ""
			e["value_source"] = []any{map[string]any{"secret_key_ref": []any{map[string]any{"secret": "db-password", "version": "latest"}}}}
		}
		envs = append(envs, e)
	}
	container := map[string]any{
		"image":     g.maybe("europe-docker.pkg.dev/acme-prod/eventpipe/consumer:1"),
		"env":       pick[any](g, envs, []any{}),
		"resources": []any{map[string]any{"limits": map[string]any{"cpu": "1", "memory": "512Mi"}, "cpu_idle": true, "startup_cpu_boost": false}},
		"ports":     []any{map[string]any{"container_port": 8080, "name": "http1"}},
		"args":      []any{},
	}
	if len(envs) > 0 {
		container["env"] = envs
	}
	return []any{map[string]any{
		"service_account":                  g.maybe("worker@acme-prod.iam.gserviceaccount.com"),
		"max_instance_request_concurrency": 80,
		"scaling":                          []any{map[string]any{"min_instance_count": pick(g, 0, 1), "max_instance_count": pick(g, 10, 100)}},
		"vpc_access":                       []any{},
		"containers":                       []any{container},
		"labels":                           nil,
	}}
}

func (g *gen) condition() any {
	threshold := map[string]any{
		"filter":          `resource.type = "pubsub_subscription" AND metric.type = "pubsub.googleapis.com/subscription/oldest_unacked_message_age"`,
		"duration":        "300s",
		"comparison":      "COMPARISON_GT",
		"threshold_value": pick[any](g, 600, 0.5),
		"aggregations": []any{map[string]any{
			"alignment_period":     "60s",
			"per_series_aligner":   "ALIGN_MAX",
			"cross_series_reducer": "",
			"group_by_fields":      []any{"resource.label.subscription_id"},
		}},
		"trigger": []any{map[string]any{"count": 1, "percent": nil}},
	}
	return map[string]any{
		"display_name":                        "backlog",
		"condition_threshold":                 []any{threshold},
		"condition_absent":                    []any{},
		"condition_matched_log":               []any{},
		"condition_monitoring_query_language": []any{},
	}
}
