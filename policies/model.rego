# METADATA
# title: eventpipe document model
# description: >-
#   Reads the document a check is given (pulumi preview --json, pulumi stack export,
#   terraform show -json of a saved plan) and normalises it onto the one model every rule
#   reads: resources with urn (a Pulumi URN or a Terraform address), type (pulumi-gcp's type
#   token), op, properties (pulumi-gcp's camelCase input names), dependencies,
#   propertyDependencies (the resources each property surely depends on, one of several
#   when there are several) and, from Terraform plans and audits' stack exports,
#   possibleDependencies (those a property may name); whether the document shows every resource (complete); the
#   subscriptions and topics it deletes or replaces; and the problems that make it unusable.
# scope: package
package eventpipe.model

import rego.v1

# format names the kind of document the input is, undefined for anything else.
format := "pulumi-preview" if {
	is_array(input.steps)
} else := "pulumi-stack-export" if {
	is_object(input.deployment)
} else := "terraform-plan" if {
	is_string(input.format_version)
	terraform_plan_keys
}

# terraform_plan_keys holds for `terraform show -json PLANFILE` output. A plan that changes
# nothing has no resource_changes, but it still has planned_values (state has "values").
terraform_plan_keys if "resource_changes" in object.keys(input)

terraform_plan_keys if "planned_values" in object.keys(input)

# resources is every managed resource the document leaves in place, in document order.
default resources := []

resources := preview_resources if {
	format == "pulumi-preview"
} else := export_resources if {
	format == "pulumi-stack-export"
} else := terraform_resources if {
	format == "terraform-plan"
}

# complete is false when the document leaves out resources that exist (a preview printed
# without --show-sames, a Terraform plan that errored or stopped early): a verdict that
# rests on a resource being absent is then not firm.
default complete := true

complete := false if {
	format == "pulumi-preview"
	not preview_complete
}

complete := false if {
	format == "terraform-plan"
	not terraform_complete
}

# incomplete says what a document that is not complete leaves out and the command that
# shows everything; "" for a complete document. Every output of eventpipe check prints it.
default incomplete := ""

incomplete := concat("", [
	"printed without --show-sames, the preview leaves out every unchanged resource: ",
	"for a firm verdict check `pulumi preview --json --show-sames` or `pulumi stack export`",
]) if {
	format == "pulumi-preview"
	not complete
	not unchanged_preview
}

# An unchanged stack's preview printed without --show-sames shows only the root stack: the
# change changes no resource, so it cannot introduce a violation. It passes, and says so.
incomplete := concat("", [
	"nothing changed: the preview changes no resource, so this change introduces no violation; ",
	"nothing was judged (printed without --show-sames, it leaves out every unchanged resource): ",
	"to judge the whole stack check `pulumi preview --json --show-sames` or `pulumi stack export`",
]) if {
	format == "pulumi-preview"
	unchanged_preview
}

incomplete := concat("", [
	"the plan is partial (terraform stopped on an error or deferred changes to a later run): ",
	"resolve that, then check `terraform show -json PLANFILE` of a new `terraform plan -out=PLANFILE`",
]) if {
	format == "terraform-plan"
	not complete
}

# unchanged_preview holds for a preview without --show-sames that shows no change at all:
# no resource to judge and nothing deleted.
unchanged_preview if {
	not preview_complete
	count(resources) == 0
	count(removals) == 0
}

# removals is every subscription and topic the document deletes or replaces, each as
# {"urn", "type", "action" ("delete" or "replace"), "properties"}: replacing or
# deleting either drops messages (a subscription's backlog; a topic's subscriptions are
# detached from it).
default removals := []

removals := preview_removals if {
	format == "pulumi-preview"
} else := terraform_removals if {
	format == "terraform-plan"
}

# drift is what an audit of a live estate against a stack (eventpipe audit --stack ENV)
# found different: one {"urn", "type", "message"} per declared resource that is missing
# live or whose live settings differ, from a stack export's eventpipeAudit.drift. Empty for
# every other document.
default drift := []

drift := input.eventpipeAudit.drift if {
	format == "pulumi-stack-export"
	is_array(input.eventpipeAudit.drift)
}

# problems lists why the input cannot be checked; empty for a usable document. A document
# that is not complete and shows nothing to judge (a partial Terraform plan that printed
# no change) is unusable: a pass of it would rest on nothing. (An unchanged stack's
# preview is not: nothing changed, see unchanged_preview.)
problems := document_problems if {
	count(document_problems) > 0
} else := array.concat(format_problems, nothing_shown)

default nothing_shown := []

nothing_shown := [concat("", ["it shows no resource to judge: ", incomplete])] if {
	not complete
	not unchanged_preview
	count(resources) == 0
	count(removals) == 0
}

document_problems contains "there is no input document" if not input

document_problems contains "the input is not a JSON object" if {
	input
	not is_object(input)
}

document_problems contains msg if {
	is_object(input)
	not format
	not terraform_state
	msg := sprintf("top-level keys %v match no known format: expected %s", [sort(object.keys(input)), expected_keys])
}

document_problems contains msg if {
	terraform_refresh_only
	msg := concat("", [
		"this is a refresh-only plan (terraform plan -refresh-only): it plans no change to any resource, ",
		"so it has nothing to judge, and its state is not what a change would make: ",
		"check the plan of the change instead, `terraform plan -out=PLANFILE`, then `terraform show -json PLANFILE`",
	])
}

document_problems contains msg if {
	terraform_state
	msg := concat("", [
		"this is Terraform state (terraform show -json without a plan file), not a plan: ",
		"run terraform plan -out=PLANFILE, then terraform show -json PLANFILE",
	])
}

# terraform_refresh_only holds for the plan `terraform plan -refresh-only` makes: no
# resource change at all while the state holds managed resources (a normal plan lists each
# of them, with action no-op when unchanged; a destroy plan, with delete).
terraform_refresh_only if {
	format == "terraform-plan"
	count([rc | some rc in object.get(input, "resource_changes", []); object.get(rc, "mode", "managed") == "managed"]) == 0
	some m in prior_state_modules
	some r in object.get(m, "resources", [])
	object.get(r, "mode", "managed") == "managed"
}

expected_keys := concat(", ", [
	`"steps" (pulumi preview --json)`,
	`"deployment" (pulumi stack export)`,
	`or "format_version" with "planned_values" (terraform show -json PLANFILE)`,
])

# terraform_state holds for `terraform show -json` of state rather than of a saved plan.
terraform_state if {
	is_object(input)
	is_string(input.format_version)
	not terraform_plan_keys
	"values" in object.keys(input)
}

default format_problems := []

format_problems := preview_problems if {
	format == "pulumi-preview"
} else := export_problems if {
	format == "pulumi-stack-export"
} else := terraform_problems if {
	format == "terraform-plan"
}

# unknown_value is what pulumi preview prints for a value known only after apply; the
# model uses it for Terraform's unknown values too.
unknown_value := "04da6b54-80e4-46f7-96ec-b56ff0331ba9"

# secret_value is what pulumi preview prints for a secret; the model uses it for stack
# export secrets and sensitive Terraform values too.
secret_value := "[secret]"

# last_segment(s, sep) is the part of s after its last sep.
last_segment(s, sep) := parts[count(parts) - 1] if {
	parts := split(s, sep)
}

# link_expression(r, property) describes, for a finding that cannot be decided, where the
# value of r's linking property (topic, deadLetterPolicy, subscription) comes from: in a
# Terraform plan the expression the configuration writes (or the dynamic block it does not
# show); in a Pulumi document a value known only after apply.
link_expression(r, property) := text if {
	format == "terraform-plan"
	text := terraform_link_expression(r.urn, property)
} else := "a value known only after the update"

# project_numbers maps each project ID whose number the document shows to that number:
# from a Terraform plan, the google_project data sources read while planning; from the
# stack export eventpipe audit writes of a live estate, eventpipeAudit.projectNumbers (the
# numbers the audit read). Pulumi previews and stack exports show none (a getProject invoke
# leaves no resource).
default project_numbers := {}

project_numbers := terraform_project_numbers if {
	format == "terraform-plan"
} else := audit_project_numbers if {
	format == "pulumi-stack-export"
}

audit_project_numbers := {id: n |
	some id, n in object.get(input, ["eventpipeAudit", "projectNumbers"], {})
	is_string(id)
	is_string(n)
	n != ""
}
