package tfmodel

import "strings"

// terraformTypes maps the google provider's resource types onto pulumi-gcp's type tokens
// (model_terraform.rego's terraform_types). Other types keep their name.
var terraformTypes = map[string]string{
	"google_pubsub_subscription":              "gcp:pubsub/subscription:Subscription",
	"google_pubsub_topic":                     "gcp:pubsub/topic:Topic",
	"google_pubsub_topic_iam_member":          "gcp:pubsub/topicIAMMember:TopicIAMMember",
	"google_pubsub_topic_iam_binding":         "gcp:pubsub/topicIAMBinding:TopicIAMBinding",
	"google_pubsub_topic_iam_policy":          "gcp:pubsub/topicIAMPolicy:TopicIAMPolicy",
	"google_pubsub_subscription_iam_member":   "gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember",
	"google_pubsub_subscription_iam_binding":  "gcp:pubsub/subscriptionIAMBinding:SubscriptionIAMBinding",
	"google_pubsub_subscription_iam_policy":   "gcp:pubsub/subscriptionIAMPolicy:SubscriptionIAMPolicy",
	"google_project_iam_member":               "gcp:projects/iAMMember:IAMMember",
	"google_project_iam_binding":              "gcp:projects/iAMBinding:IAMBinding",
	"google_project_iam_policy":               "gcp:projects/iAMPolicy:IAMPolicy",
	"google_cloud_run_v2_service":             "gcp:cloudrunv2/service:Service",
	"google_cloud_run_v2_service_iam_member":  "gcp:cloudrunv2/serviceIamMember:ServiceIamMember",
	"google_cloud_run_v2_service_iam_binding": "gcp:cloudrunv2/serviceIamBinding:ServiceIamBinding",
	"google_cloud_run_v2_service_iam_policy":  "gcp:cloudrunv2/serviceIamPolicy:ServiceIamPolicy",
	"google_firestore_field":                  "gcp:firestore/field:Field",
	"google_monitoring_alert_policy":          "gcp:monitoring/alertPolicy:AlertPolicy",
}

// pulumiType is the pulumi-gcp type token of a google provider type.
func pulumiType(t string) string {
	if p, ok := terraformTypes[t]; ok {
		return p
	}
	return t
}

// singleBlocks are the nested blocks (paths of pulumi names) that pulumi-gcp exposes as one
// object rather than a list (model_terraform_values.rego's single_blocks).
var singleBlocks = set(
	"deadLetterPolicy", "retryPolicy", "expirationPolicy", "pushConfig", "pushConfig.oidcToken",
	"pushConfig.noWrapper", "bigqueryConfig", "cloudStorageConfig", "cloudStorageConfig.avroConfig",
	"messageStoragePolicy", "schemaSettings", "ingestionDataSourceSettings",
	"template", "template.scaling", "template.vpcAccess", "scaling", "containers.resources",
	"containers.livenessProbe", "containers.startupProbe", "envs.valueSource", "valueSource.secretKeyRef",
	"ttlConfig", "indexConfig", "condition", "binaryAuthorization",
	"conditions.conditionThreshold", "conditions.conditionAbsent", "conditions.conditionMatchedLog",
	"conditions.conditionMonitoringQueryLanguage", "conditions.conditionPrometheusQueryLanguage",
	"conditionThreshold.trigger", "conditionAbsent.trigger", "documentation", "alertStrategy",
	"alertStrategy.notificationRateLimit",
)

// mapAttributes are the attributes whose keys are user data (label names), kept as they are.
var mapAttributes = set(
	"labels", "effectiveLabels", "terraformLabels", "pulumiLabels", "annotations",
	"effectiveAnnotations", "attributes", "limits", "userLabels",
)

// renamedAttributes are the attributes pulumi-gcp names differently from Terraform beyond
// camelCase: repeated blocks get plural names.
var renamedAttributes = map[string]string{"env": "envs", "traffic": "traffics"}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// maxDepth is how deep values are converted: a container below it becomes unknownValue,
// on which no rule decides (the Rego conversion is unrolled to this depth).
const maxDepth = 7

// properties converts a planned value of a resource of a type the rules judge to
// pulumi-gcp's shape (model_terraform_values.rego's terraform_properties): camelCase
// attribute names (map attributes' keys stay), null attributes absent, single nested
// blocks as objects (empty ones null), unknown values as unknownValue and sensitive ones
// as secretValue, without the id. Other types, and values that are not objects, get no
// properties.
func properties(typ string, after, unknown, sensitive any) map[string]any {
	obj, ok := after.(map[string]any)
	if _, known := terraformTypes[typ]; !known || !ok || unknown == true || sensitive == true {
		return map[string]any{}
	}
	props := convertObject(0, obj, unknown, sensitive, "")
	delete(props, "id")
	return props
}

// convertObject converts an object at depth (0: the planned object) whose path is p.
func convertObject(depth int, v map[string]any, u, s any, p string) map[string]any {
	uo, _ := u.(map[string]any)
	so, _ := s.(map[string]any)
	inMap := depth > 0 && mapAttributes[p[strings.LastIndexByte(p, '.')+1:]]
	name := func(k string) string {
		if inMap {
			return k
		}
		if r, ok := renamedAttributes[k]; ok {
			return r
		}
		return camelCase(k)
	}
	out := make(map[string]any, len(v))
	// Rego's object.union_n: the plain values, then the unknown, the sensitive and the
	// nested ones, a later part winning a name two keys convert to.
	var nested []string
	for k, x := range v {
		if uo[k] == true || so[k] == true {
			continue
		}
		if isContainer(x) {
			nested = append(nested, k)
			continue
		}
		if x != nil {
			out[name(k)] = x
		}
	}
	for k, x := range uo {
		if x == true {
			out[name(k)] = unknownValue
		}
	}
	for k, x := range so {
		if x == true && uo[k] != true {
			if val, ok := v[k]; ok && val != nil {
				out[name(k)] = secretValue
			}
		}
	}
	for _, k := range nested {
		n := name(k)
		child := n
		if p != "" {
			child = p + "." + n
		}
		out[n] = convertValue(depth+1, v[k], uo[k], so[k], child)
	}
	return out
}

// convertValue converts a value at depth (1 to maxDepth) whose path is p.
func convertValue(depth int, v, u, s any, p string) any {
	switch {
	case u == true:
		return unknownValue
	case s == true:
		return secretValue
	case depth == maxDepth && isContainer(v):
		return unknownValue
	}
	switch x := v.(type) {
	case map[string]any:
		return convertObject(depth, x, u, s, p)
	case []any:
		return convertBlock(depth, x, u, s, p)
	}
	return v
}

// convertBlock converts a list at depth: a single block as its one object (null when
// empty), a repeated block element by element under its name.
func convertBlock(depth int, v []any, u, s any, p string) any {
	if singleBlocks[p] {
		if len(v) == 0 {
			return nil
		}
		return convertValue(depth+1, v[0], at(u, 0), at(s, 0), p)
	}
	elem := p[strings.LastIndexByte(p, '.')+1:]
	out := make([]any, len(v))
	for i, e := range v {
		out[i] = convertValue(depth+1, e, at(u, i), at(s, i), elem)
	}
	return out
}

// at is the i-th element of a list of marks, nil when there is none (Rego's tf_at).
func at(x any, i int) any {
	if l, ok := x.([]any); ok && i < len(l) {
		return l[i]
	}
	return nil
}

func isContainer(x any) bool {
	switch x.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}
