package eventpipe.model

import rego.v1

# terraform_properties converts a planned value of a resource of the types the rules judge
# (terraform_types; others get no properties) to pulumi-gcp's shape: camelCase attribute
# names (the names of map attributes such as labels stay as they are), null attributes
# absent (as unset inputs are), single nested blocks (lists of at most one object) as
# objects, empty ones absent, unknown values (after_unknown) as unknown_value and sensitive
# ones as secret_value. The id is not an input. Rego has no recursion, so the conversion is
# unrolled to 8 nested objects and lists (tf_value_0 to tf_value_7): a container deeper than
# that becomes unknown_value, on which no rule decides. Scalars are copied without a call
# per attribute: the conversion runs for every attribute of every planned resource.

terraform_properties(type, after, unknown, sensitive) := object.remove(v, ["id"]) if {
	terraform_types[type]
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

# tf_in_map is whether path is a map attribute, whose keys stay as they are.
tf_in_map(path) if map_attributes[last_segment(path, ".")]

else := false

tf_name(true, key) := key

tf_name(false, key) := object.get(renamed_attributes, key, camel_case(key))

# camel_case converts snake_case to camelCase in one replacement of every "_x" by "X"
# (a name without "_" is its own).
camel_case(s) := strings.replace_n(camel_replacements, s) if contains(s, "_")

else := s

camel_replacements := {concat("", ["_", c]): upper(c) | some c in split("abcdefghijklmnopqrstuvwxyz0123456789", "")}

tf_child(path, name) := name if path == ""

else := concat(".", [path, name])

# tf_element_path is the path the elements of a repeated block are known by: its name.
tf_element_path(path) := last_segment(path, ".")

# tf_scalars are the attributes of object v copied as they are: scalars neither null,
# unknown nor sensitive. tf_nested are the others' names: objects, lists, and values
# unknown (absent from v) or sensitive.
tf_scalars(v, u, s, in_map) := {tf_name(in_map, k): x |
	some k, x in v
	x != null
	not is_object(x)
	not is_array(x)
	not u[k] == true
	not s[k] == true
}

tf_nested(v, u, s) := ({k | some k, x in v; containers[type_name(x)]} | tf_unknown_keys(u)) | tf_sensitive_keys(s, v)

containers := {"object", "array"}

# tf_unknown_keys are the keys after_unknown (u) marks true; tf_sensitive_keys those
# after_sensitive (s) marks true that have a value in v.
tf_unknown_keys(u) := {k | some k, x in u; x == true} if {
	is_object(u)
	count(u) > 0
} else := set()

tf_sensitive_keys(s, v) := {k | some k, x in s; x == true; v[k] != null} if {
	is_object(s)
	count(s) > 0
} else := set()

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
} else := object.union(tf_scalars(v, u, s, in_map), {n: tf_value_1(tf_at(v, k), tf_at(u, k), tf_at(s, k), tf_child(p, n)) |
	some k in tf_nested(v, u, s)
	n := tf_name(in_map, k)
}) if {
	is_object(v)
	in_map := tf_in_map(p)
} else := tf_value_1(tf_at(v, 0), tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_1(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_1(v, u, s, p) := tf_leaf_value(v, u, s) if {
	tf_leaf(v, u, s)
} else := object.union(tf_scalars(v, u, s, in_map), {n: tf_value_2(tf_at(v, k), tf_at(u, k), tf_at(s, k), tf_child(p, n)) |
	some k in tf_nested(v, u, s)
	n := tf_name(in_map, k)
}) if {
	is_object(v)
	in_map := tf_in_map(p)
} else := tf_value_2(tf_at(v, 0), tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_2(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_2(v, u, s, p) := tf_leaf_value(v, u, s) if {
	tf_leaf(v, u, s)
} else := object.union(tf_scalars(v, u, s, in_map), {n: tf_value_3(tf_at(v, k), tf_at(u, k), tf_at(s, k), tf_child(p, n)) |
	some k in tf_nested(v, u, s)
	n := tf_name(in_map, k)
}) if {
	is_object(v)
	in_map := tf_in_map(p)
} else := tf_value_3(tf_at(v, 0), tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_3(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_3(v, u, s, p) := tf_leaf_value(v, u, s) if {
	tf_leaf(v, u, s)
} else := object.union(tf_scalars(v, u, s, in_map), {n: tf_value_4(tf_at(v, k), tf_at(u, k), tf_at(s, k), tf_child(p, n)) |
	some k in tf_nested(v, u, s)
	n := tf_name(in_map, k)
}) if {
	is_object(v)
	in_map := tf_in_map(p)
} else := tf_value_4(tf_at(v, 0), tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_4(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_4(v, u, s, p) := tf_leaf_value(v, u, s) if {
	tf_leaf(v, u, s)
} else := object.union(tf_scalars(v, u, s, in_map), {n: tf_value_5(tf_at(v, k), tf_at(u, k), tf_at(s, k), tf_child(p, n)) |
	some k in tf_nested(v, u, s)
	n := tf_name(in_map, k)
}) if {
	is_object(v)
	in_map := tf_in_map(p)
} else := tf_value_5(tf_at(v, 0), tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_5(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_5(v, u, s, p) := tf_leaf_value(v, u, s) if {
	tf_leaf(v, u, s)
} else := object.union(tf_scalars(v, u, s, in_map), {n: tf_value_6(tf_at(v, k), tf_at(u, k), tf_at(s, k), tf_child(p, n)) |
	some k in tf_nested(v, u, s)
	n := tf_name(in_map, k)
}) if {
	is_object(v)
	in_map := tf_in_map(p)
} else := tf_value_6(tf_at(v, 0), tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_6(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_6(v, u, s, p) := tf_leaf_value(v, u, s) if {
	tf_leaf(v, u, s)
} else := object.union(tf_scalars(v, u, s, in_map), {n: tf_value_7(tf_at(v, k), tf_at(u, k), tf_at(s, k), tf_child(p, n)) |
	some k in tf_nested(v, u, s)
	n := tf_name(in_map, k)
}) if {
	is_object(v)
	in_map := tf_in_map(p)
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
