package eventpipe.live_test

import rego.v1

import data.eventpipe.fixtures_test as fx
import data.eventpipe.rules

# EP200: the differences an audit found between the live estate and the stack.

drifted_urn := "urn:pulumi:prod::eventpipe::eventpipe:index:Subscription$gcp:pubsub/subscription:Subscription::orders-push"

audited := {
	"version": 3,
	"deployment": {"resources": []},
	"eventpipeAudit": {"drift": [{
		"urn": drifted_urn,
		"type": "gcp:pubsub/subscription:Subscription",
		"message": "live Subscription projects/p/subscriptions/orders-push differs from the stack: deadLetterPolicy.maxDeliveryAttempts is 7 live, 5 in the stack",
	}]},
}

test_drift_denied_on_the_declared_resource if {
	found := data.eventpipe.deny with input as audited
	[[f.id, f.urn] | some f in found] == [["EP200", drifted_urn]]
	endswith(found[0].msg, "is 7 live, 5 in the stack")
}

test_drift_waivable_like_every_rule if {
	cfg := {"today": "2026-06-01", "waivers": [{"rule": "EP200", "urn": "urn:pulumi:prod::*", "reason": "tuned by hand during the incident", "expires": "2026-07-01"}]}
	count(data.eventpipe.deny) == 0 with input as audited with data.config as cfg
	[w.id | some w in data.eventpipe.waived] == ["EP200"] with input as audited with data.config as cfg
}

test_no_drift_without_an_audit if {
	count(rules.deny_live_drift) == 0 with input as {"version": 3, "deployment": {"resources": []}}
	count(rules.deny_live_drift) == 0 with input as {"steps": [], "eventpipeAudit": audited.eventpipeAudit}
}

test_malformed_drift_makes_the_document_unusable if {
	bad := object.union(audited, {"eventpipeAudit": {"drift": [{"urn": drifted_urn}]}})
	fx.ids(data.eventpipe.deny) == {"EP900"} with input as bad
}
