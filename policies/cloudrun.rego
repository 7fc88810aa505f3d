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

# METADATA
# title: Push service account cannot invoke the consumer
# description: >-
#   A push subscription signs each request with an OIDC token of
#   pushConfig.oidcToken.serviceAccountEmail. Cloud Run answers 403 unless that account may
#   invoke the service (roles/run.invoker on the service or its project), so every message
#   is nacked, retried and finally dead-lettered. Judged for push subscriptions whose
#   Cloud Run service the document shows, on the service's IAM members, bindings and
#   policies (an audit reads its live policy) and the project's; a grant the document
#   cannot show, a custom role or an unknown member gives no verdict.
# custom:
#   id: EP018
#   severity: high
#   needs_complete_stack: true
#   fix: >-
#     Grant roles/run.invoker on the Cloud Run service to
#     serviceAccount:<pushConfig.oidcToken.serviceAccountEmail> (a ServiceIamMember).
stack_deny_push_invoker_missing contains f if {
	m := lib.rule(rego.metadata.chain())
	some [s, svc, member] in push_targets
	not invoker_granted(svc, member)
	text := sprintf("%s pushes as %s, which may not invoke %s: Cloud Run rejects every push", [lib.display(s), member, lib.display(svc)])
	f := lib.finding(s, text, m)
}

# push_targets holds [subscription, Cloud Run service, member] for each push subscription
# that surely pushes to a service of the document, signed as member, when the service
# checks invokers.
push_targets contains [s, svc, member] if {
	some s in lib.subscriptions
	email := s.properties.pushConfig.oidcToken.serviceAccountEmail
	lib.known_string(email)
	email != ""
	services := {u | some u in object.get(s, ["propertyDependencies", "pushConfig"], []); run_services[u]}
	count(services) == 1
	some u in services
	svc := run_services[u]
	not svc.properties.invokerIamDisabled == true
	member := concat("", ["serviceAccount:", email])
}

run_services := {r.urn: r | some r in lib.resources_of(lib.run_service_type)}

# invoking_roles are the predefined roles that hold run.routes.invoke; any other role
# outside roles/ is a custom role that may hold it.
invoking_roles := {"roles/run.invoker", "roles/run.servicesInvoker", "roles/run.admin", "roles/run.developer", "roles/owner", "roles/editor"}

may_invoke(role) if invoking_roles[role]

may_invoke(role) if not startswith(role, "roles/")

may_invoke(role) if lib.unknown(role)

# invoker_granted(svc, member) holds when an IAM resource on svc, or on its project, may
# let member invoke it, or the document cannot show what one grants.
invoker_granted(svc, member) if {
	some u in {svc.urn, "*"}
	some m in {member, "*"}
	service_invokers[[u, m]]
}

invoker_granted(svc, member) if {
	some [project, m] in project_invokers
	m in {member, "*"}
	lib.same_project(project, lib.project_of(svc))
}

# service_invokers holds [service URN, member] for each member a Cloud Run IAM resource may
# let invoke the service, indexed once for every push subscription: the URN is "*" for a
# resource on a service the document cannot show, the member "*" for the public or a
# member the document cannot show.
service_invokers contains [u, invoker_key(member)] if {
	some t in run_iam_types
	some g in lib.resources_of(t)
	some binding in lib.bindings(g)
	may_invoke(binding[0])
	some member in binding[1]
	some u in grant_services(g)
}

# project_invokers holds [project, member] likewise for project-level IAM resources.
project_invokers contains [lib.project_of(g), invoker_key(member)] if {
	some t in project_iam_types
	some g in lib.resources_of(t)
	some binding in lib.bindings(g)
	may_invoke(binding[0])
	some member in binding[1]
}

project_iam_types := {lib.project_iam_member_type, lib.project_iam_binding_type, lib.project_iam_policy_type}

invoker_key(m) := "*" if public_members[m]

else := "*" if lib.unknown(m)

else := m

# grant_services(g) are the URNs of the services Cloud Run IAM resource g is on: linked to
# it, or named like it in its project; "*" when the document cannot show its service.
grant_services(g) := linked | named if {
	lib.known_string(g.properties.name)
	linked := {u | some u in object.get(g, ["propertyDependencies", "name"], []); run_services[u]}
	named := {u | some u in object.get(services_by_name, short_name(g.properties.name), []); not lib.apart(g, run_services[u])}
} else := {"*"}

services_by_name := {n: [u | some u, svc in run_services; short_name(svc.properties.name) == n] |
	some svc in run_services
	n := short_name(svc.properties.name)
}

# short_name(n) is a Cloud Run service name without its projects/P/locations/L/services/.
short_name(n) := parts[count(parts) - 1] if parts := split(n, "/")
