package eventpipe.lib

import rego.v1

# IAM grants to the Pub/Sub service agent: members, bindings and authoritative policies.

# pubsub_agent(member) holds for the Pub/Sub service agent, or a member the plan cannot show.
pubsub_agent(member) if regex.match(`^serviceAccount:service-[0-9]+@gcp-sa-pubsub\.iam\.gserviceaccount\.com$`, member)

pubsub_agent(member) if unknown(member)

# grant_scopes maps each IAM member, binding and policy type to the scope it grants on.
grant_scopes := {
	project_iam_member_type: "project",
	project_iam_binding_type: "project",
	project_iam_policy_type: "project",
	topic_iam_member_type: "topic",
	topic_iam_binding_type: "topic",
	topic_iam_policy_type: "topic",
	subscription_iam_member_type: "subscription",
	subscription_iam_binding_type: "subscription",
	subscription_iam_policy_type: "subscription",
}

# bindings(g) lists the [role, members] an IAM resource grants: a member resource one
# member, a binding its members, an authoritative policy each binding of its policyData.
# A value the plan cannot show stays unknown_value.
bindings(g) := [[prop(g, ["role"]), [prop(g, ["member"])]]] if {
	g.properties.member
} else := [[prop(g, ["role"]), members]] if {
	members := g.properties.members
	is_array(members)
} else := [[prop(g, ["role"]), [unknown_value]]] if {
	unknown(g.properties.members)
} else := [[object.get(b, "role", unknown_value), object.get(b, "members", [unknown_value])] | some b in policy.bindings] if {
	policy := json.unmarshal(g.properties.policyData)
	is_object(policy)
} else := [[unknown_value, [unknown_value]]] if {
	# An authoritative policy whose data the plan cannot show (or cannot read) may grant anything.
	g.properties.policyData
}

# agent_grants is [scope, role, grant] for each role an IAM resource grants the Pub/Sub
# service agent (or a member the plan cannot show).
agent_grants := [[scope, role, g] |
	some t, scope in grant_scopes
	some g in resources_of(t)
	some binding in bindings(g)
	grants_agent(binding[1])
	role := binding[0]
]

grants_agent(members) if unknown(members)

grants_agent(members) if {
	some m in members
	pubsub_agent(m)
}

# role_is(role, want) holds when role is want, or the plan cannot show it.
role_is(role, want) if role == want

role_is(role, _) if unknown(role)

# agent_grant_links lists the links of the grants of role to the service agent on scope.
agent_grant_links(scope, role, property, kind) := [link_of(g, property, kind) |
	some a in agent_grants
	a[0] == scope
	role_is(a[1], role)
	g := a[2]
]

link_of(g, property, "topics") := topic_link(g, property)

link_of(g, property, "subscriptions") := subscription_link(g, property)

# project_agent_grants(role) are the project-level IAM resources that grant role (or a
# role the document cannot show) to the service agent.
project_agent_grants(role) := [a[2] |
	some a in agent_grants
	a[0] == "project"
	role_is(a[1], role)
]

project_publisher_grants := project_agent_grants("roles/pubsub.publisher")

project_subscriber_grants := project_agent_grants("roles/pubsub.subscriber")

# project_grant_covers(grants, r) holds when one of the project-level grants may cover
# resource r: it is on r's project, or the document cannot show either project. A grant on
# one project never covers another project's resources.
project_grant_covers(grants, r) if {
	some g in grants
	not apart(g, r)
}

publisher_links := agent_grant_links("topic", "roles/pubsub.publisher", "topic", "topics")

subscriber_links := agent_grant_links("subscription", "roles/pubsub.subscriber", "subscription", "subscriptions")

# publisher_topics are the topics on which the service agent may publish; unknown_publisher
# holds when some publisher grant is on a topic the plan cannot show.
publisher_topics := {t | some l in publisher_links; some t in l.targets}

unknown_publisher if {
	some l in publisher_links
	anything(l)
}

subscriber_subscriptions := {s | some l in subscriber_links; some s in l.targets}

unknown_subscriber if {
	some l in subscriber_links
	anything(l)
}
