package eventpipe.rules

import rego.v1

import data.eventpipe.lib

# Rules on the Cloud Run consumer's exposure.

public_members := {"allUsers", "allAuthenticatedUsers"}

run_iam_types := {lib.run_iam_member_type, lib.run_iam_binding_type, lib.run_iam_policy_type}

# METADATA
# title: Cloud Run consumer invokable by the public
# description: >-
#   Granting roles/run.invoker to allUsers or allAuthenticatedUsers (or disabling the
#   invoker IAM check) lets anyone on the internet call the consumer and forge Pub/Sub
#   pushes or callbacks. Only the push service account needs to invoke it.
# custom:
#   id: EP010
#   severity: critical
#   fix: >-
#     Remove the public member and grant roles/run.invoker only to the push service account;
#     keep invokerIamDisabled unset.
deny_cloud_run_public_invoker contains f if {
	m := lib.rule(rego.metadata.chain())
	some [r, text] in public_invokers
	f := lib.finding(r, text, m)
}

# public_invokers pairs each resource that opens a service to the public with why.
public_invokers contains [g, text] if {
	some t in run_iam_types
	some g in lib.resources_of(t)
	some binding in lib.bindings(g)
	binding[0] == "roles/run.invoker"
	some member in binding[1]
	public_members[member]
	text := sprintf("%s grants roles/run.invoker to %s", [lib.display(g), member])
}

public_invokers contains [svc, text] if {
	some svc in lib.resources_of(lib.run_service_type)
	svc.properties.invokerIamDisabled == true
	text := sprintf("%s disables the invoker IAM check: anyone can call it", [lib.display(svc)])
}
