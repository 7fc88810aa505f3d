# METADATA
# title: eventpipe
# description: >-
#   The entry every runtime evaluates: eventpipe check, conftest (--namespace eventpipe) and
#   opa eval (data.eventpipe.deny, data.eventpipe.warn). deny and warn hold one object per
#   finding: msg ("EP001: ..."), id, severity, fix, urn, type, and note when the finding
#   rests on a document that leaves out unchanged resources (a deny with a note is a
#   warning). waived holds the
#   findings a live waiver suppresses, with the waiver; summary describes the document.
#   Configuration comes from data.config (see lib.rego).
# scope: package
package eventpipe

import rego.v1

import data.eventpipe.lib
import data.eventpipe.model
import data.eventpipe.rules

# METADATA
# description: Every finding that fails the check.
# entrypoint: true
deny := denies if {
	count(lib.live_waivers) == 0
} else := [f | some f in denies; not lib.waiver_of(f)]

# METADATA
# description: Every advisory finding, with the denies a note turns into warnings.
# entrypoint: true
warn := warnings if {
	count(lib.live_waivers) == 0
} else := [f | some f in warnings; not lib.waiver_of(f)]

# waived is every finding a live waiver suppresses, with the waiver.
waived := [object.union(f, {"waiver": object.remove(w, ["pattern"])}) |
	count(lib.live_waivers) > 0
	some f in array.concat(denies, warnings)
	w := lib.waiver_of(f)
]

# summary describes the document: its format, whether it shows every resource (and, when
# not, what it leaves out and what to run instead), how many resources were judged, and
# the problems that make it unusable.
summary := {
	"format": document_format,
	"complete": model.complete,
	"incomplete": model.incomplete,
	"resources": count(model.resources),
	"problems": model.problems,
}

default document_format := ""

document_format := model.format

# denies and warnings are the findings of the sets named deny_*/stack_deny_* and
# warn_*/stack_warn_* of package eventpipe.rules; a deny with a note is a warning.
denies := [f |
	some name, found in rules
	regex.match(`^(stack_)?deny_`, name)
	some f in found
	not f.note
]

warnings := array.concat(
	[f |
		some name, found in rules
		regex.match(`^(stack_)?warn_`, name)
		some f in found
	],
	[f |
		some name, found in rules
		regex.match(`^(stack_)?deny_`, name)
		some f in found
		f.note
	],
)
