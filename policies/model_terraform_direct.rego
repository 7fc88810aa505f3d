package eventpipe.model

import rego.v1

# Direct references: most linking attributes name a resource of their own module instance
# (topic = google_pubsub_topic.orders.id) and nothing else. Their ends are known without
# the reference graph (model_terraform_references.rego), which then leaves them out: a
# plan of thousands of subscriptions written that way is linked in one pass.

# direct_links maps address + "|" + attribute to the planned instances an attribute names
# when its expression names nothing but resources of its own module instance that have one
# instance each (resource.name and traversals of it, resource.name.id): the commonest
# expression, whose ends the graph would only confirm. Such an attribute has no edge in
# the graph.
direct_links := {concat("|", [rc.address, attribute]): targets |
	some [rc, attribute, mi, _, _, refs] in linking_references
	targets := direct_targets(refs, mi)
}

# direct_targets(refs, mi) are the addresses of the resources refs name in module instance
# mi, when every reference is one of them (type.name, planned in mi without count or
# for_each) or a traversal of one (type.name.attribute...); undefined otherwise.
direct_targets(refs, mi) := sort([prefixed(mi, r) | some r in subjects]) if {
	subjects := {r | some r in refs; single_instance(mi, r)}
	count(subjects) > 0
	every r in refs {
		direct_reference(r, subjects)
	}
}

# single_instance holds when r (type.name) is planned in mi without an instance key: its
# one instance (a resource with count or for_each has keys on all of its instances).
single_instance(mi, r) if {
	planned_addresses[prefixed(mi, r)]
	not reserved_words[split(r, ".")[0]]
}

planned_addresses := {rc.address | some rc in planned_changes}

direct_reference(r, subjects) if subjects[r]

direct_reference(r, subjects) if {
	parts := split(r, ".")
	count(parts) > 2
	subjects[concat(".", [parts[0], parts[1]])]
}

# attribute_link(rc, attribute) is [exact, targets] for a linking attribute the references
# decide: a direct reference names its targets; any other is followed through the graph.
attribute_link(rc, attribute) := [exact, targets] if {
	targets := direct_links[concat("|", [rc.address, attribute])]
	exact := count(targets) == 1
	decided_by_references(exact, rc, attribute)
} else := [exact, targets] if {
	not direct_links[concat("|", [rc.address, attribute])]
	start := link_start(rc, attribute)
	reached := reached_from(start)
	not reached.U
	not constant_value(reached, rc, attribute)
	targets := sort([substring(n, 2, -1) | some n in reached; startswith(n, "r:")])
	exact := exactly_one(reached, targets)
	decided_by_references(exact, rc, attribute)
}
