package eventpipe.model

import rego.v1

# Pulumi documents: `pulumi preview --json` (with or without --show-sames, and the offline
# render, which has its shape) and `pulumi stack export` (also the shape eventpipe's Pulumi
# analyzer builds from AnalyzeStack requests). Both print resource states as
# {urn, type, custom, inputs, parent, dependencies, propertyDependencies}; inputs already use
# the camelCase names and nesting the rules read.

# unjudged_ops are the preview operations whose state is not judged as a resource of the
# stack: the resource no longer exists afterwards (or, deleted with retainOnDelete, no
# longer belongs to the stack), it is read with .get() (it exists outside the stack; the
# discard ops drop such a read resource from the state), or the step repeats the new state
# a "replace" step of the same URN shows.
unjudged_ops := {
	"delete", "delete-replaced", "discard", "discard-replaced", "read-discard", "remove-pending-replace",
	"read", "read-replacement", "create-replacement", "import-replacement",
}

replacement_ops := {"create-replacement", "import-replacement"}

# removal_ops maps each preview operation that deletes or replaces a resource in the cloud
# to what happens to it.
removal_ops := {
	"delete": "delete", "replace": "replace", "create-replacement": "replace", "delete-replaced": "replace",
	"import-replacement": "replace",
}

# stateful_types hold messages: replacing or deleting one loses them.
stateful_types := {"gcp:pubsub/subscription:Subscription", "gcp:pubsub/topic:Topic"}

replaced_urns := {st.urn | some st in special_steps; st.op == "replace"}

# special_steps are the steps that replace or delete a resource: one pass finds them all.
special_steps := [st | some st in input.steps; removal_ops[st.op]]

# preview_resources are the new states of the managed resources (component resources and
# the stack itself have custom false; resources read with .get() are external), plus those
# of replacement steps without a "replace" step of their own. Written inline, without helper
# functions, because it runs once per resource.
preview_resources := array.concat(
	[r |
		some st in input.steps
		not unjudged_ops[st.op]
		state := st.newState
		not state.custom == false
		not state.external == true
		r := {
			"urn": st.urn,
			"type": state.type,
			"op": st.op,
			"properties": object.get(state, "inputs", {}),
			"dependencies": object.get(state, "dependencies", []),
			"propertyDependencies": object.get(state, "propertyDependencies", {}),
		}
	],
	[r |
		some st in special_steps
		replacement_ops[st.op]
		not replaced_urns[st.urn]
		state := st.newState
		not state.custom == false
		not state.external == true
		r := {
			"urn": st.urn,
			"type": state.type,
			"op": st.op,
			"properties": object.get(state, "inputs", {}),
			"dependencies": object.get(state, "dependencies", []),
			"propertyDependencies": object.get(state, "propertyDependencies", {}),
		}
	],
)

# preview_complete holds unless the preview left out unchanged resources: without
# --show-sames, pulumi prints only the root stack's step with op "same", while the change
# summary counts every unchanged resource.
preview_complete if {
	printed := count([st | some st in input.steps; st.op == "same"])
	object.get(input, ["changeSummary", "same"], 0) <= printed
}

preview_problems := [msg |
	some i, st in input.steps
	not well_formed_steps[i]
	msg := sprintf("steps[%d]: a preview step needs \"op\", \"urn\" and a new state with a \"type\" (is this pulumi preview --json output?)", [i])
]

# well_formed_steps are the indexes of the steps with an op, a URN and a new state with a
# type, or no new state (a delete names no resource to judge).
well_formed_steps := {i | some i, st in input.steps; is_string(st.op); is_string(st.urn); is_string(st.newState.type)} | {i |
	some i, st in input.steps
	is_string(st.op)
	is_string(st.urn)
	not st.newState
}

preview_removal_steps := [st |
	some st in special_steps
	removal_ops[st.op]
	stateful_types[removal_state(st).type]
	not retained(st)
]

# retained(st) holds for a delete step of a resource with retainOnDelete: the engine prints
# op "delete" but never calls the provider's Delete, so the resource stays in the cloud
# (a subscription with its backlog) and only leaves the stack. Not a removal. A
# replacement of such a resource still is one: its readers move to the new resource.
retained(st) if {
	st.op == "delete"
	st.oldState.retainOnDelete == true
}

preview_removals := [removal |
	some urn in {st.urn | some st in preview_removal_steps}
	steps := [st | some st in preview_removal_steps; st.urn == urn]
	actions := {removal_ops[st.op] | some st in steps}
	state := removal_state(steps[0])
	removal := {
		"urn": urn,
		"type": state.type,
		"action": removal_action(actions),
		"properties": object.get(state, "inputs", {}),
	}
]

# removal_state is the state a removal starts from (oldState), or the state the step shows.
removal_state(st) := st.oldState if {
	is_object(st.oldState)
} else := st.newState if {
	is_object(st.newState)
}

removal_action(actions) := "replace" if "replace" in actions

else := "delete"

# ---- stack exports -----------------------------------------------------------------------

# export_resources are the managed resources of a stack export (see preview_resources),
# without those pending deletion, with Pulumi's state encoding of secrets replaced by
# secret_value.
export_resources := array.concat(
	[r |
		some i, state in export_states
		not state.delete == true
		not state.custom == false
		not state.external == true
		not secret_states[i]
		r := {
			"urn": state.urn,
			"type": state.type,
			"op": "",
			"properties": object.get(state, "inputs", {}),
			"dependencies": object.get(state, "dependencies", []),
			"propertyDependencies": object.get(state, "propertyDependencies", {}),
			"possibleDependencies": object.get(state, "possibleDependencies", {}),
		}
	],
	[r |
		some i in secret_states
		state := export_states[i]
		not state.delete == true
		not state.custom == false
		not state.external == true
		r := {
			"urn": state.urn,
			"type": state.type,
			"op": "",
			"properties": unsecret(object.get(state, "inputs", {})),
			"dependencies": object.get(state, "dependencies", []),
			"propertyDependencies": object.get(state, "propertyDependencies", {}),
			"possibleDependencies": object.get(state, "possibleDependencies", {}),
		}
	],
)

export_states := object.get(input.deployment, "resources", [])

# secret_states are the indexes of the states whose inputs hold a secret.
secret_states := {i | some i, state in export_states; contains(json.marshal(object.get(state, "inputs", {})), secret_signature)}

export_problems := array.concat(
	array.concat(
		[msg |
			not is_number(object.get(input, "version", null))
			msg := `a stack export has a "version" (3); this document has none: produce one with pulumi stack export`
		],
		[msg |
			some i, state in object.get(input.deployment, "resources", [])
			not valid_state(state)
			msg := sprintf("deployment.resources[%d]: a resource state needs \"urn\" and \"type\"", [i])
		],
	),
	[msg |
		some i, d in object.get(object.get(input, "eventpipeAudit", {}), "drift", [])
		not valid_drift(d)
		msg := sprintf("eventpipeAudit.drift[%d]: a difference needs string \"urn\", \"type\" and \"message\"", [i])
	],
)

valid_drift(d) if {
	is_string(d.urn)
	is_string(d.type)
	is_string(d.message)
}

valid_state(state) if {
	is_string(state.urn)
	is_string(state.type)
}

# secret_signature marks a secret in Pulumi state: {"4dabf...": "1b47...", "ciphertext": ...}.
secret_signature := "4dabf18193072939515e22adb298388d"

# unsecret(v) is v with every secret in Pulumi's state encoding replaced by secret_value, as
# pulumi preview prints secrets.
unsecret(v) := secret_value if {
	v[secret_signature]
} else := json.patch(v, [{"op": "replace", "path": path, "value": secret_value} | some path in secret_paths(v)])

# secret_paths(v) are the paths of the secrets in v.
secret_paths(v) := [path |
	# The path is this comprehension's output, which walk-no-path does not see.
	# regal ignore:walk-no-path
	walk(v, [path, x])
	x[secret_signature]
]
