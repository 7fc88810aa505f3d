package eventpipe

import rego.v1

invoker(member) := {
	"type": run_iam_member_type, "urn": urn(run_iam_member_type, "invoker"), "name": "invoker",
	"properties": {"name": "orders-consumer", "location": "europe-west1", "role": "roles/run.invoker", "member": member},
}

test_service_account_invoker_pass if {
	count(deny_cloud_run_public_invoker) == 0 with input as invoker("serviceAccount:push@acme-prod.iam.gserviceaccount.com")
}

test_all_users_invoker_deny if {
	deny_cloud_run_public_invoker == {"ServiceIamMember 'invoker' grants roles/run.invoker to allUsers"} with input as invoker("allUsers")
}

test_all_authenticated_users_invoker_deny if {
	count(deny_cloud_run_public_invoker) == 1 with input as invoker("allAuthenticatedUsers")
}

test_public_binding_deny if {
	binding := {"type": run_iam_binding_type, "urn": "u", "name": "b", "properties": {"role": "roles/run.invoker", "members": ["allUsers"]}}
	count(deny_cloud_run_public_invoker) == 1 with input as binding
}

test_public_viewer_is_not_invoker_pass if {
	r := with_props(invoker("allUsers"), {"role": "roles/run.viewer"})
	count(deny_cloud_run_public_invoker) == 0 with input as r
}

test_invoker_iam_disabled_deny if {
	count(deny_cloud_run_public_invoker) == 1 with input as with_props(consumer_service, {"invokerIamDisabled": true})
	count(deny_cloud_run_public_invoker) == 0 with input as consumer_service
}
