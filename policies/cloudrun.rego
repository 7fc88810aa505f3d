package eventpipe

import rego.v1

# Rules on the Cloud Run consumer's exposure.

public_members := {"allUsers", "allAuthenticatedUsers"}

# METADATA
# title: Cloud Run consumer invokable by the public
# description: >-
#   Granting roles/run.invoker to allUsers or allAuthenticatedUsers (or disabling the
#   invoker IAM check) lets anyone on the internet call the consumer and forge Pub/Sub
#   pushes or callbacks. Only the push service account needs to invoke it.
# custom:
#   id: EP010
#   severity: critical
#   fix: Remove the public member and grant roles/run.invoker only to the push service account; keep invokerIamDisabled unset.
deny_cloud_run_public_invoker contains msg if {
	input.type == "gcp:cloudrunv2/serviceIamMember:ServiceIamMember"
	role_is(input, "roles/run.invoker")
	member := input.properties.member
	member in public_members
	msg := sprintf("%s grants roles/run.invoker to %s", [display(input), member])
}

deny_cloud_run_public_invoker contains msg if {
	input.type == "gcp:cloudrunv2/serviceIamBinding:ServiceIamBinding"
	role_is(input, "roles/run.invoker")
	some member in input.properties.members
	member in public_members
	msg := sprintf("%s grants roles/run.invoker to %s", [display(input), member])
}

deny_cloud_run_public_invoker contains msg if {
	input.type == "gcp:cloudrunv2/service:Service"
	input.properties.invokerIamDisabled == true
	msg := sprintf("%s disables the invoker IAM check: anyone can call it", [display(input)])
}
