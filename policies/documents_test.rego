package eventpipe.documents_test

import rego.v1

import data.eventpipe.fixtures_test as fx
import data.eventpipe.lib
import data.eventpipe.rules

# EP900: a document no rule can judge fails; EP000: expired and invalid waivers fail.

test_unusable_document_denied if {
	msgs := fx.messages(data.eventpipe.deny) with input as {"apiVersion": "v1", "kind": "ConfigMap"}
	msgs == {`EP900: top-level keys ["apiVersion", "kind"] match no known format: expected "steps" (pulumi preview --json), "deployment" (pulumi stack export), or "format_version" with "planned_values" (terraform show -json PLANFILE)`}
}

test_non_object_input_denied if {
	fx.ids(data.eventpipe.deny) == {"EP900"} with input as [1, 2]
	fx.messages(rules.deny_unusable_document) == {"EP900: the input is not a JSON object"} with input as "steps"
}

test_terraform_state_denied if {
	state := {"format_version": "1.0", "terraform_version": "1.9.8", "values": {"root_module": {}}}
	fx.ids(data.eventpipe.deny) == {"EP900"} with input as state
	some msg in fx.messages(data.eventpipe.deny) with input as state
	contains(msg, "Terraform state")
}

waiver(rule, urn, expires) := {"rule": rule, "urn": urn, "reason": "drained by the replay job", "expires": expires}

without_retry := fx.swap(fx.good_stack, fx.good_subscription, fx.without_prop(fx.good_subscription, "retryPolicy"))

test_live_waiver_suppresses_its_finding if {
	cfg := {"today": "2026-06-01", "waivers": [waiver("EP003", "urn:pulumi:prod::eventpipe::*::orders-*", "2026-06-01")]}
	count(fx.results(without_retry)) == 0 with data.config as cfg
	waived := data.eventpipe.waived with data.eventpipe.model.resources as without_retry with data.eventpipe.model.problems as [] with data.config as cfg
	[w.id | some w in waived] == ["EP003"]
	waived[0].waiver == waiver("EP003", "urn:pulumi:prod::eventpipe::*::orders-*", "2026-06-01")
}

test_waiver_for_another_rule_or_resource_does_not_apply if {
	other_rule := {"today": "2026-06-01", "waivers": [waiver("EP002", "*", "2027-01-01")]}
	fx.verdicts(without_retry) == {"deny:EP003"} with data.config as other_rule
	other_urn := {"today": "2026-06-01", "waivers": [waiver("EP003", "*::orders-pull", "2027-01-01")]}
	fx.verdicts(without_retry) == {"deny:EP003"} with data.config as other_urn
}

test_waiver_pattern_is_literal_apart_from_wildcards if {
	# A Terraform address has brackets and dots: they match themselves only.
	cfg := {"today": "2026-06-01", "waivers": [waiver("EP003", `module.a["x"].google_pubsub_subscription.?`, "2027-01-01")]}
	r := fx.with_props(fx.without_prop(fx.good_subscription, "retryPolicy"), {})
	tf := object.union(r, {"urn": `module.a["x"].google_pubsub_subscription.s`})
	"deny:EP003" in fx.verdicts([tf])
	not "deny:EP003" in fx.verdicts([tf]) with data.config as cfg
	looks_alike := object.union(r, {"urn": `module.a_"x"_.google_pubsub_subscription.s`})
	"deny:EP003" in fx.verdicts([looks_alike]) with data.config as cfg
}

test_expired_waiver_fails_and_stops_applying if {
	cfg := {"today": "2026-06-02", "waivers": [waiver("EP003", "urn:pulumi:prod::eventpipe::*::orders-*", "2026-06-01")]}
	fx.verdicts(without_retry) == {"deny:EP000", "deny:EP003"} with data.config as cfg
	msgs := fx.messages(rules.deny_expired_waiver) with data.config as cfg
	msgs == {"EP000: the waiver of EP003 for urn:pulumi:prod::eventpipe::*::orders-* expired on 2026-06-01 (reason given: drained by the replay job)"}
}

test_invalid_waiver_fails if {
	cfg := {"today": "2026-06-01", "waivers": [{"rule": "EP003", "urn": "*", "expires": "next year"}]}
	fx.verdicts(without_retry) == {"deny:EP000", "deny:EP003"} with data.config as cfg
}

test_waivers_judged_today_by_default if {
	today := time.format([time.now_ns(), "UTC", "2006-01-02"])
	lib.today == today
	count(lib.live_waivers) == 1 with data.config as {"waivers": [waiver("EP003", "*", "9999-12-31")]}
	count(lib.live_waivers) == 0 with data.config as {"waivers": [waiver("EP003", "*", "2000-01-01")]}
}
