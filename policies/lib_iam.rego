package eventpipe.lib

import rego.v1

import data.eventpipe.model

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

# agent_grants is [scope, role, grant, agents] for each role an IAM resource grants a
# Pub/Sub service agent (or a member the plan cannot show): agents are the members granted
# that may be one, unknown_value standing for every member the plan cannot show.
agent_grants := [[scope, role, g, agents] |
	some t, scope in grant_scopes
	some g in resources_of(t)
	some binding in bindings(g)
	agents := agent_members(binding[1])
	count(agents) > 0
	role := binding[0]
]

agent_members(members) := {unknown_value} if unknown(members)

else := {agent_member_value(m) | some m in members; pubsub_agent(m)}

agent_member_value(m) := unknown_value if unknown(m)

else := m

# project_agent(n) is the IAM member of the Pub/Sub service agent of the project numbered n.
project_agent(n) := sprintf("serviceAccount:service-%s@gcp-sa-pubsub.iam.gserviceaccount.com", [n])

# dead_letter_agent(s) is the member Pub/Sub dead-letters for subscription s as: the
# service agent of s's project ("The Cloud Pub/Sub service account associated with the
# enclosing subscription's parent project ... must have permission to Publish() to this
# topic" and to Acknowledge on s). Undefined when the document does not show the number of
# s's project: any project's agent is then accepted.
dead_letter_agent(s) := project_agent(model.project_numbers[project_of(s)])

# agent_may_act(agents, s) holds when a grant to agents may let s's dead-letter agent act:
# they include it, or a member the plan cannot show, or the agent is not known.
agent_may_act(agents, s) if {
	not dead_letter_agent(s)
	count(agents) > 0
}

agent_may_act(agents, s) if dead_letter_agent(s) in agents

agent_may_act(agents, _) if unknown_value in agents

# agent_note(s) says, for a finding on s's grants, which agent the rule asked for.
agent_note(s) := concat("", [
	"; Pub/Sub dead-letters as the service agent of the subscription's project ", project_of(s), ", ",
	dead_letter_agent(s), ", and grants to other projects' agents do not count",
]) if {
	dead_letter_agent(s)
} else := concat("", [
	"; the document does not show the number of the subscription's project ", project_label(s),
	", so a grant to any project's Pub/Sub agent would have been accepted",
])

project_label(s) := p if {
	p := project_of(s)
	p != ""
} else := "(the provider's default)"

# role_is(role, want) holds when role is want, or the plan cannot show it.
role_is(role, want) if role == want

role_is(role, _) if unknown(role)

# agent_grant_links lists [link, agents] for the grants of role to a service agent on scope.
agent_grant_links(scope, role, property, kind) := [[link_of(g, property, kind), a[3]] |
	some a in agent_grants
	a[0] == scope
	role_is(a[1], role)
	g := a[2]
]

link_of(g, property, "topics") := topic_link(g, property)

link_of(g, property, "subscriptions") := subscription_link(g, property)

# project_agent_grants(role) are [grant, agents] for the project-level IAM resources that
# grant role (or a role the document cannot show) to a service agent.
project_agent_grants(role) := [[a[2], a[3]] |
	some a in agent_grants
	a[0] == "project"
	role_is(a[1], role)
]

project_publisher_grants := project_agent_grants("roles/pubsub.publisher")

project_subscriber_grants := project_agent_grants("roles/pubsub.subscriber")

# project_grant_covers(grants, r, s) holds when one of the project-level grants may cover
# resource r for subscription s's dead-letter agent: it is on r's project, or the document
# cannot show either project, and it may grant that agent. A grant on one project never
# covers another project's resources.
project_grant_covers(grants, r, s) if {
	some [g, agents] in grants
	not apart(g, r)
	agent_may_act(agents, s)
}

publisher_links := agent_grant_links("topic", "roles/pubsub.publisher", "topic", "topics")

subscriber_links := agent_grant_links("subscription", "roles/pubsub.subscriber", "subscription", "subscriptions")

# publisher_grants are the [topic, agent] pairs of the grants that let a service agent
# (unknown_value: a member the plan cannot show) publish to a topic; publisher_topics those
# topics. unknown_publisher holds when some publisher grant is on a topic the plan cannot
# show. subscriber_grants, subscriber_subscriptions and unknown_subscriber alike.
publisher_grants := {[t, m] | some [l, ms] in publisher_links; some t in l.targets; some m in ms}

publisher_topics := {p[0] | some p in publisher_grants}

unknown_publisher if {
	some [l, _] in publisher_links
	anything(l)
}

subscriber_grants := {[u, m] | some [l, ms] in subscriber_links; some u in l.targets; some m in ms}

subscriber_subscriptions := {p[0] | some p in subscriber_grants}

unknown_subscriber if {
	some [l, _] in subscriber_links
	anything(l)
}

# may_publish(t, s) holds when s's dead-letter agent may publish to topic t through a
# grant on t; may_acknowledge(s), when it may acknowledge on s through a grant on s.
may_publish(t, s) := granted_to(publisher_grants, publisher_topics, t, s)

may_acknowledge(s) := granted_to(subscriber_grants, subscriber_subscriptions, s.urn, s)

# granted_to holds when grants (with their targets) let s's dead-letter agent act on x: any
# agent's grant when the document does not show the agent, else its own or an unknown
# member's.
granted_to(_, targets, x, s) if {
	not dead_letter_agent(s)
	targets[x]
}

granted_to(grants, _, x, s) if grants[[x, dead_letter_agent(s)]]

granted_to(grants, _, x, _) if grants[[x, unknown_value]]
