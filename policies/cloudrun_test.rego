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
