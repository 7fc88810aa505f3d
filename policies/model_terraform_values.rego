package eventpipe.model

import rego.v1

# terraform_properties converts a planned value to pulumi-gcp's shape: camelCase attribute
# names (the names of map attributes such as labels stay as they are), single nested blocks
# (lists of at most one object) as objects, empty ones absent, unknown values (after_unknown)
# as unknown_value and sensitive ones as secret_value. The id is not an input. Rego has no
# recursion, so the conversion is unrolled to 8 nested objects and lists (tf_value_0 to
# tf_value_7): a container deeper than that becomes unknown_value, on which no rule decides.

terraform_properties(after, unknown, sensitive) := object.remove(v, ["id"]) if {
	v := tf_value_0(after, unknown, sensitive, "")
	is_object(v)
} else := {}

# single_blocks are the nested blocks (paths of pulumi names) that pulumi-gcp exposes as
# one object rather than a list.
single_blocks := {
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
}

# map_attributes are the attributes whose keys are user data (label names), kept as they are.
map_attributes := {
	"labels", "effectiveLabels", "terraformLabels", "pulumiLabels", "annotations",
	"effectiveAnnotations", "attributes", "limits", "userLabels",
}

# renamed_attributes are the attributes pulumi-gcp names differently from Terraform, beyond
# camelCase: repeated blocks get plural names.
renamed_attributes := {"env": "envs", "traffic": "traffics"}

tf_name(path, key) := key if {
	map_attributes[last_segment(path, ".")]
} else := renamed_attributes[key] if {
	renamed_attributes[key]
} else := camel_case(key)

camel_case(s) := s if {
	not contains(s, "_")
} else := concat("", [parts[0], concat("", [capitalised(p) | some p in array.slice(parts, 1, count(parts))])]) if {
	parts := split(s, "_")
}

capitalised(p) := concat("", [upper(substring(p, 0, 1)), substring(p, 1, -1)])

tf_child(path, name) := name if path == ""

else := concat(".", [path, name])

# tf_element_path is the path the elements of a repeated block are known by: its name.
tf_element_path(path) := last_segment(path, ".")

tf_keys(v, unknown) := object.keys(v) | {k | is_object(unknown); some k, x in unknown; x == true}

tf_at(x, k) := x[k] if {
	is_object(x)
} else := x[k] if {
	is_array(x)
	k < count(x)
} else := null

# tf_leaf holds when a value is converted without looking inside: unknown, sensitive or a
# scalar. tf_leaf_value is what it becomes.
tf_leaf(_, true, _)

tf_leaf(_, _, true)

tf_leaf(v, unknown, sensitive) if {
	not is_object(v)
	not is_array(v)
}

tf_leaf_value(v, unknown, sensitive) := unknown_value if {
	unknown == true
} else := secret_value if {
	sensitive == true
} else := v

# Each tf_value_N converts one level and hands the next to tf_value_N+1.

tf_value_0(v, u, s, p) := tf_leaf_value(v, u, s) if {
	tf_leaf(v, u, s)
} else := {n: tf_value_1(tf_at(v, k), tf_at(u, k), tf_at(s, k), tf_child(p, n)) | some k in tf_keys(v, u); n := tf_name(p, k)} if {
	is_object(v)
} else := tf_value_1(tf_at(v, 0), tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_1(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_1(v, u, s, p) := tf_leaf_value(v, u, s) if {
	tf_leaf(v, u, s)
} else := {n: tf_value_2(tf_at(v, k), tf_at(u, k), tf_at(s, k), tf_child(p, n)) | some k in tf_keys(v, u); n := tf_name(p, k)} if {
	is_object(v)
} else := tf_value_2(tf_at(v, 0), tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_2(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_2(v, u, s, p) := tf_leaf_value(v, u, s) if {
	tf_leaf(v, u, s)
} else := {n: tf_value_3(tf_at(v, k), tf_at(u, k), tf_at(s, k), tf_child(p, n)) | some k in tf_keys(v, u); n := tf_name(p, k)} if {
	is_object(v)
} else := tf_value_3(tf_at(v, 0), tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_3(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_3(v, u, s, p) := tf_leaf_value(v, u, s) if {
	tf_leaf(v, u, s)
} else := {n: tf_value_4(tf_at(v, k), tf_at(u, k), tf_at(s, k), tf_child(p, n)) | some k in tf_keys(v, u); n := tf_name(p, k)} if {
	is_object(v)
} else := tf_value_4(tf_at(v, 0), tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_4(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_4(v, u, s, p) := tf_leaf_value(v, u, s) if {
	tf_leaf(v, u, s)
} else := {n: tf_value_5(tf_at(v, k), tf_at(u, k), tf_at(s, k), tf_child(p, n)) | some k in tf_keys(v, u); n := tf_name(p, k)} if {
	is_object(v)
} else := tf_value_5(tf_at(v, 0), tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_5(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_5(v, u, s, p) := tf_leaf_value(v, u, s) if {
	tf_leaf(v, u, s)
} else := {n: tf_value_6(tf_at(v, k), tf_at(u, k), tf_at(s, k), tf_child(p, n)) | some k in tf_keys(v, u); n := tf_name(p, k)} if {
	is_object(v)
} else := tf_value_6(tf_at(v, 0), tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_6(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_6(v, u, s, p) := tf_leaf_value(v, u, s) if {
	tf_leaf(v, u, s)
} else := {n: tf_value_7(tf_at(v, k), tf_at(u, k), tf_at(s, k), tf_child(p, n)) | some k in tf_keys(v, u); n := tf_name(p, k)} if {
	is_object(v)
} else := tf_value_7(tf_at(v, 0), tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_7(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

# tf_value_7 is the last level: containers below it are not shown.
tf_value_7(v, u, s, p) := tf_leaf_value(v, u, s) if {
	tf_leaf(v, u, s)
} else := unknown_value
