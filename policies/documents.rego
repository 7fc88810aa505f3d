package eventpipe.rules

import rego.v1

import data.eventpipe.lib
import data.eventpipe.model

# Rules on the check itself: a document it cannot read and waivers it cannot honour fail
# the check, so neither passes silently.

# METADATA
# title: Document cannot be checked
# description: >-
#   The input is not a pulumi preview --json document, a pulumi stack export or a
#   terraform show -json plan, or part of it is malformed: no rule could judge it, and a
#   check of it must not pass.
# custom:
#   id: EP900
#   severity: critical
#   fix: >-
#     Check the output of pulumi preview --json --show-sames, pulumi stack export or
#     terraform show -json PLANFILE.
deny_unusable_document contains f if {
	m := lib.rule(rego.metadata.chain())
	some problem in model.problems
	f := lib.finding({"urn": "", "type": "", "name": ""}, problem, m)
}

# METADATA
# title: Expired or invalid waiver
# description: >-
#   A waiver in config.waivers has passed its expiry date, or lacks a rule id, URN pattern,
#   reason or expiry date (YYYY-MM-DD). Waivers are temporary by design: an expired or
#   invalid one fails the check until it is renewed, fixed or removed.
# custom:
#   id: EP000
#   severity: high
#   fix: >-
#     Fix the waived finding and delete the waiver, or renew it with a new expiry date and a
#     current reason.
deny_expired_waiver contains f if {
	m := lib.rule(rego.metadata.chain())
	some [urn, text] in lib.waiver_problems
	f := lib.finding({"urn": urn, "type": "", "name": ""}, text, m)
}
