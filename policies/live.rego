package eventpipe.rules

import rego.v1

import data.eventpipe.lib
import data.eventpipe.model

# Rules on what an audit of a live estate finds beyond the resources themselves.

# METADATA
# title: Live settings differ from the stack
# description: >-
#   A resource the stack declares does not exist live, or its live settings differ from
#   the declared ones: someone changed it by hand (or another tool did), and the next
#   update will change it back or fail. eventpipe audit --stack ENV reports these in the
#   document it evaluates (eventpipeAudit.drift); other documents have none.
# custom:
#   id: EP200
#   severity: medium
#   fix: >-
#     Find who changed it (Cloud Audit Logs), then either run pulumi up to restore the
#     declared settings or change the stack to what is live if the change was meant.
deny_live_drift contains f if {
	m := lib.rule(rego.metadata.chain())
	some d in model.drift
	f := lib.finding(d, d.message, m)
}
