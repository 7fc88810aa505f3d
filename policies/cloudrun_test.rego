package eventpipe.cloudrun_test

import rego.v1

import data.eventpipe.fixtures_test as fx
import data.eventpipe.lib
import data.eventpipe.rules

invoker(member) := {
	"type": lib.run_iam_member_type, "urn": fx.urn(lib.run_iam_member_type, "invoker"),
	"properties": {"name": "orders-consumer", "location": "europe-west1", "role": "roles/run.invoker", "member": member},
}

public_invokers(r) := found if {
	found := rules.deny_cloud_run_public_invoker with data.eventpipe.model.resources as [r]
}

test_service_account_invoker_pass if {
	count(public_invokers(invoker("serviceAccount:push@acme-prod.iam.gserviceaccount.com"))) == 0
}

test_all_users_invoker_deny if {
	fx.messages(public_invokers(invoker("allUsers"))) == {"EP010: ServiceIamMember 'invoker' grants roles/run.invoker to allUsers"}
}

test_all_authenticated_users_invoker_deny if {
	count(public_invokers(invoker("allAuthenticatedUsers"))) == 1
}

test_public_binding_deny if {
	binding := {"type": lib.run_iam_binding_type, "urn": "u", "properties": {"role": "roles/run.invoker", "members": ["allUsers"]}}
	count(public_invokers(binding)) == 1
}

test_public_authoritative_policy_deny if {
	policy := {"type": lib.run_iam_policy_type, "urn": "u", "properties": {"policyData": json.marshal({"bindings": [{"role": "roles/run.invoker", "members": ["allUsers"]}]})}}
	count(public_invokers(policy)) == 1
}

test_public_viewer_is_not_invoker_pass if {
	count(public_invokers(fx.with_props(invoker("allUsers"), {"role": "roles/run.viewer"}))) == 0
}

test_unknown_role_no_verdict if {
	count(public_invokers(fx.with_props(invoker("allUsers"), {"role": lib.unknown_value}))) == 0
}

test_invoker_iam_disabled_deny if {
	count(public_invokers(fx.with_props(fx.consumer_service, {"invokerIamDisabled": true}))) == 1
	count(public_invokers(fx.consumer_service)) == 0
}

# EP018 stack_deny_push_invoker_missing: the push subscription's service account may
# invoke the Cloud Run service it pushes to.

push_account := "serviceAccount:push@acme-prod.iam.gserviceaccount.com"

linked_push := fx.with_links(fx.good_subscription, {"pushConfig": [fx.consumer_service.urn]})

pushing_stack(grants) := array.concat(fx.swap(fx.good_stack, fx.good_subscription, linked_push), grants)

service_policy(bindings) := {
	"type": lib.run_iam_policy_type, "urn": fx.urn(lib.run_iam_policy_type, "orders-consumer"),
	"properties": {"name": "orders-consumer", "location": "europe-west1", "project": "acme-prod", "policyData": json.marshal({"bindings": bindings})},
	"propertyDependencies": {"name": [fx.consumer_service.urn]},
}

project_invoker(project) := {
	"type": lib.project_iam_policy_type, "urn": sprintf("urn:project-policy:%s", [project]),
	"properties": {"project": project, "policyData": json.marshal({"bindings": [{"role": "roles/run.invoker", "members": [push_account]}]})},
}

located(svc) := fx.with_props(svc, {"project": "acme-prod"})

test_push_invoker_granted_pass if {
	count(fx.results(pushing_stack([invoker(push_account)]))) == 0
	count(fx.results(pushing_stack([service_policy([{"role": "roles/run.invoker", "members": [push_account]}])]))) == 0
}

test_push_invoker_missing_deny if {
	fx.messages(rules.stack_deny_push_invoker_missing) == {"EP018: Subscription 'orders-push' pushes as serviceAccount:push@acme-prod.iam.gserviceaccount.com, which may not invoke Service 'orders-consumer': Cloud Run rejects every push"} with data.eventpipe.model.resources as pushing_stack([])
	fx.verdicts(pushing_stack([invoker("serviceAccount:someone-else@acme-prod.iam.gserviceaccount.com")])) == {"deny:EP018"}
}

test_live_service_policy_without_the_push_account_deny if {
	fx.verdicts(pushing_stack([service_policy([{"role": "roles/run.viewer", "members": [push_account]}])])) == {"deny:EP018"}
}

test_unreadable_or_custom_grants_no_verdict if {
	unread := object.union(service_policy([]), {"properties": {"policyData": lib.unknown_value}})
	count(fx.results(pushing_stack([unread]))) == 0
	custom := service_policy([{"role": "projects/acme-prod/roles/pushInvoker", "members": [push_account]}])
	count(fx.results(pushing_stack([custom]))) == 0
	count(fx.results(pushing_stack([invoker(lib.unknown_value)]))) == 0
}

test_project_invoker_covers_its_project_only if {
	svc := located(fx.consumer_service)
	mine := fx.swap(pushing_stack([project_invoker("acme-prod")]), fx.consumer_service, svc)
	count(fx.results(mine)) == 0
	theirs := fx.swap(pushing_stack([project_invoker("acme-dev")]), fx.consumer_service, svc)
	fx.verdicts(theirs) == {"deny:EP018"}
}

test_unlinked_push_or_open_service_no_verdict if {
	# Without a link to a service of the document, where it pushes is not known.
	count(fx.results(array.concat(fx.good_stack, []))) == 0
	open := fx.with_props(fx.consumer_service, {"invokerIamDisabled": true})
	not "deny:EP018" in fx.verdicts(fx.swap(pushing_stack([]), fx.consumer_service, open))
}
