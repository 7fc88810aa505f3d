package eventpipe.model

import rego.v1

# terraform_properties converts a planned value of a resource of the types the rules judge
# (terraform_types; others get no properties) to pulumi-gcp's shape: camelCase attribute
# names (the names of map attributes such as labels stay as they are), null attributes
# absent (as unset inputs are), single nested blocks (lists of at most one object) as
# objects, empty ones null, unknown values (after_unknown) as unknown_value and sensitive
# ones as secret_value. The id is not an input. Rego has no recursion, so the conversion is
# unrolled to 8 nested objects and lists (tf_object_0, then tf_value_1 to tf_value_7): a
# container deeper than that becomes unknown_value, on which no rule decides. It runs for every
# attribute of every planned resource, so each object is converted in a few passes over
# its keys with builtins (object.remove drops the unknown, sensitive and nested ones at once)
# and its names are converted once per set of names (tf_names), not once per attribute.

terraform_properties(type, after, unknown, sensitive) := object.remove(tf_object_0(after, unknown, sensitive), ["id"]) if {
	terraform_types[type]
	is_object(after)
	unknown != true
	sensitive != true
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

containers := {"object", "array"}

tf_at(x, k) := x[k] if {
	is_object(x)
} else := x[k] if {
	is_array(x)
	k < count(x)
} else := null

tf_as_object(x) := x if is_object(x)

else := {}

# tf_names maps the attribute names of an object to the names they convert to: one call per
# set of names (OPA caches it), shared by every object with the same attributes.
tf_names(keys, in_map) := {k: tf_name(in_map, k) | some k in keys}

# Each tf_value_N converts a value at depth N; tf_object_N and tf_block_N convert the
# objects and lists there and hand their elements to tf_value_N+1. In tf_object_N, unknown
# are the keys after_unknown marks, sensitive those after_sensitive marks that have a value
# (and are not unknown), nested the objects and lists neither marks, and the scalars left
# are copied as they are (null ones dropped).

# tf_object_0 converts the planned object itself (its path is "", not a map attribute):
# the conversion whose calls seldom repeat (nested blocks repeat from resource to resource,
# and OPA caches those calls), so it is where the time goes.
tf_object_0(v, u, s) := object.union_n([
	{names[k]: x | some k, x in object.remove(v, skipped); x != null},
	{names[k]: unknown_value | some k in unknown},
	{names[k]: secret_value | some k in sensitive},
	{n: tf_value_1(v[k], object.get(uo, k, null), object.get(so, k, null), n) |
		some k in nested
		n := names[k]
	},
]) if {
	uo := tf_as_object(u)
	so := tf_as_object(s)
	unknown := {k | some k, x in uo; x == true}
	names := tf_names(object.keys(v) | unknown, false)
	sensitive := {k | some k, x in so; x == true; v[k] != null} - unknown
	nested := {k | some k, x in v; containers[type_name(x)]} - (unknown | sensitive)
	skipped := (nested | unknown) | {k | some k, x in so; x == true}
}

tf_value_1(v, u, s, p) := unknown_value if {
	u == true
} else := secret_value if {
	s == true
} else := tf_object_1(v, u, s, p) if {
	is_object(v)
} else := tf_block_1(v, u, s, p) if {
	is_array(v)
} else := v

tf_object_1(v, u, s, p) := object.union_n([
	{names[k]: x | some k, x in object.remove(v, skipped); x != null},
	{names[k]: unknown_value | some k in unknown},
	{names[k]: secret_value | some k in sensitive},
	{n: tf_value_2(v[k], object.get(uo, k, null), object.get(so, k, null), tf_child(p, n)) |
		some k in nested
		n := names[k]
	},
]) if {
	uo := tf_as_object(u)
	so := tf_as_object(s)
	unknown := {k | some k, x in uo; x == true}
	names := tf_names(object.keys(v) | unknown, tf_in_map(p))
	sensitive := {k | some k, x in so; x == true; v[k] != null} - unknown
	nested := {k | some k, x in v; containers[type_name(x)]} - (unknown | sensitive)
	skipped := (nested | unknown) | {k | some k, x in so; x == true}
}

tf_block_1(v, u, s, p) := tf_value_2(v[0], tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_2(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_2(v, u, s, p) := unknown_value if {
	u == true
} else := secret_value if {
	s == true
} else := tf_object_2(v, u, s, p) if {
	is_object(v)
} else := tf_block_2(v, u, s, p) if {
	is_array(v)
} else := v

tf_object_2(v, u, s, p) := object.union_n([
	{names[k]: x | some k, x in object.remove(v, skipped); x != null},
	{names[k]: unknown_value | some k in unknown},
	{names[k]: secret_value | some k in sensitive},
	{n: tf_value_3(v[k], object.get(uo, k, null), object.get(so, k, null), tf_child(p, n)) |
		some k in nested
		n := names[k]
	},
]) if {
	uo := tf_as_object(u)
	so := tf_as_object(s)
	unknown := {k | some k, x in uo; x == true}
	names := tf_names(object.keys(v) | unknown, tf_in_map(p))
	sensitive := {k | some k, x in so; x == true; v[k] != null} - unknown
	nested := {k | some k, x in v; containers[type_name(x)]} - (unknown | sensitive)
	skipped := (nested | unknown) | {k | some k, x in so; x == true}
}

tf_block_2(v, u, s, p) := tf_value_3(v[0], tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_3(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_3(v, u, s, p) := unknown_value if {
	u == true
} else := secret_value if {
	s == true
} else := tf_object_3(v, u, s, p) if {
	is_object(v)
} else := tf_block_3(v, u, s, p) if {
	is_array(v)
} else := v

tf_object_3(v, u, s, p) := object.union_n([
	{names[k]: x | some k, x in object.remove(v, skipped); x != null},
	{names[k]: unknown_value | some k in unknown},
	{names[k]: secret_value | some k in sensitive},
	{n: tf_value_4(v[k], object.get(uo, k, null), object.get(so, k, null), tf_child(p, n)) |
		some k in nested
		n := names[k]
	},
]) if {
	uo := tf_as_object(u)
	so := tf_as_object(s)
	unknown := {k | some k, x in uo; x == true}
	names := tf_names(object.keys(v) | unknown, tf_in_map(p))
	sensitive := {k | some k, x in so; x == true; v[k] != null} - unknown
	nested := {k | some k, x in v; containers[type_name(x)]} - (unknown | sensitive)
	skipped := (nested | unknown) | {k | some k, x in so; x == true}
}

tf_block_3(v, u, s, p) := tf_value_4(v[0], tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_4(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_4(v, u, s, p) := unknown_value if {
	u == true
} else := secret_value if {
	s == true
} else := tf_object_4(v, u, s, p) if {
	is_object(v)
} else := tf_block_4(v, u, s, p) if {
	is_array(v)
} else := v

tf_object_4(v, u, s, p) := object.union_n([
	{names[k]: x | some k, x in object.remove(v, skipped); x != null},
	{names[k]: unknown_value | some k in unknown},
	{names[k]: secret_value | some k in sensitive},
	{n: tf_value_5(v[k], object.get(uo, k, null), object.get(so, k, null), tf_child(p, n)) |
		some k in nested
		n := names[k]
	},
]) if {
	uo := tf_as_object(u)
	so := tf_as_object(s)
	unknown := {k | some k, x in uo; x == true}
	names := tf_names(object.keys(v) | unknown, tf_in_map(p))
	sensitive := {k | some k, x in so; x == true; v[k] != null} - unknown
	nested := {k | some k, x in v; containers[type_name(x)]} - (unknown | sensitive)
	skipped := (nested | unknown) | {k | some k, x in so; x == true}
}

tf_block_4(v, u, s, p) := tf_value_5(v[0], tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_5(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_5(v, u, s, p) := unknown_value if {
	u == true
} else := secret_value if {
	s == true
} else := tf_object_5(v, u, s, p) if {
	is_object(v)
} else := tf_block_5(v, u, s, p) if {
	is_array(v)
} else := v

tf_object_5(v, u, s, p) := object.union_n([
	{names[k]: x | some k, x in object.remove(v, skipped); x != null},
	{names[k]: unknown_value | some k in unknown},
	{names[k]: secret_value | some k in sensitive},
	{n: tf_value_6(v[k], object.get(uo, k, null), object.get(so, k, null), tf_child(p, n)) |
		some k in nested
		n := names[k]
	},
]) if {
	uo := tf_as_object(u)
	so := tf_as_object(s)
	unknown := {k | some k, x in uo; x == true}
	names := tf_names(object.keys(v) | unknown, tf_in_map(p))
	sensitive := {k | some k, x in so; x == true; v[k] != null} - unknown
	nested := {k | some k, x in v; containers[type_name(x)]} - (unknown | sensitive)
	skipped := (nested | unknown) | {k | some k, x in so; x == true}
}

tf_block_5(v, u, s, p) := tf_value_6(v[0], tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_6(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

tf_value_6(v, u, s, p) := unknown_value if {
	u == true
} else := secret_value if {
	s == true
} else := tf_object_6(v, u, s, p) if {
	is_object(v)
} else := tf_block_6(v, u, s, p) if {
	is_array(v)
} else := v

tf_object_6(v, u, s, p) := object.union_n([
	{names[k]: x | some k, x in object.remove(v, skipped); x != null},
	{names[k]: unknown_value | some k in unknown},
	{names[k]: secret_value | some k in sensitive},
	{n: tf_value_7(v[k], object.get(uo, k, null), object.get(so, k, null), tf_child(p, n)) |
		some k in nested
		n := names[k]
	},
]) if {
	uo := tf_as_object(u)
	so := tf_as_object(s)
	unknown := {k | some k, x in uo; x == true}
	names := tf_names(object.keys(v) | unknown, tf_in_map(p))
	sensitive := {k | some k, x in so; x == true; v[k] != null} - unknown
	nested := {k | some k, x in v; containers[type_name(x)]} - (unknown | sensitive)
	skipped := (nested | unknown) | {k | some k, x in so; x == true}
}

tf_block_6(v, u, s, p) := tf_value_7(v[0], tf_at(u, 0), tf_at(s, 0), p) if {
	single_blocks[p]
	count(v) > 0
} else := null if {
	single_blocks[p]
} else := [tf_value_7(e, tf_at(u, i), tf_at(s, i), tf_element_path(p)) | some i, e in v]

# tf_value_7 is the last level: containers below it are not shown.
tf_value_7(v, u, s, p) := unknown_value if {
	u == true
} else := secret_value if {
	s == true
} else := unknown_value if {
	containers[type_name(v)]
} else := v
