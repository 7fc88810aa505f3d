package model

import (
	"encoding/json"

	"cloud.google.com/go/iam/apiv1/iampb"
	crm "google.golang.org/api/cloudresourcemanager/v1"

	"github.com/eventpipe/eventpipe/audit/inventory"
)

// PolicyData is an IAM policy as pulumi-gcp's policyData holds it: the JSON of the
// policy's bindings (and audit configs), encoded the way the provider reads a policy back
// (encoding/json of the Cloud Resource Manager API's Policy type), so the same policy
// reads the same in a stack export and in an audit.
func PolicyData(p *iampb.Policy) string {
	out := crm.Policy{}
	for _, b := range p.GetBindings() {
		nb := &crm.Binding{Role: b.GetRole(), Members: b.GetMembers()}
		if c := b.GetCondition(); c != nil {
			nb.Condition = &crm.Expr{Expression: c.GetExpression(), Title: c.GetTitle(), Description: c.GetDescription(), Location: c.GetLocation()}
		}
		out.Bindings = append(out.Bindings, nb)
	}
	for _, ac := range p.GetAuditConfigs() {
		nac := &crm.AuditConfig{Service: ac.GetService()}
		for _, l := range ac.GetAuditLogConfigs() {
			nac.AuditLogConfigs = append(nac.AuditLogConfigs, &crm.AuditLogConfig{LogType: l.GetLogType().String(), ExemptedMembers: l.GetExemptedMembers()})
		}
		out.AuditConfigs = append(out.AuditConfigs, nac)
	}
	data, _ := json.Marshal(&out) // only strings and slices of them: it cannot fail
	return string(data)
}

// addPolicies adds the IAM policy resources of p's topics, subscriptions and Cloud Run
// services and of the project itself.
func (b *builder) addPolicies(p *inventory.Project) {
	for _, t := range p.Topics {
		b.addPolicy(p, TypeTopicIAMPolicy, t.GetName(), "topic", TypeTopic, map[string]any{"topic": t.GetName()})
	}
	for _, s := range p.Subscriptions {
		b.addPolicy(p, TypeSubscriptionIAMPolicy, s.GetName(), "subscription", TypeSubscription, map[string]any{"subscription": s.GetName()})
	}
	for _, svc := range p.Services {
		name := svc.GetName()
		b.addPolicy(p, TypeServiceIAMPolicy, name, "name", TypeService,
			map[string]any{"name": inventory.ShortName(name), "location": inventory.LocationOf(name)})
	}
	b.addPolicy(p, TypeProjectIAMPolicy, inventory.ProjectName(p.ID), "", "", map[string]any{})
}

// addPolicy adds the IAM policy resource of type typ for the resource name, with inputs
// in, the project and the policyData read for it (unknown when the audit could not read
// it), linked by property to the resource of type of; nothing when the inventory has no
// policy for name.
func (b *builder) addPolicy(p *inventory.Project, typ, name, property, of string, in map[string]any) {
	if pol, ok := p.Policies[name]; ok {
		in["policyData"] = PolicyData(pol)
	} else if p.HasGap(inventory.GapPolicy, name) {
		in["policyData"] = UnknownValue
	} else {
		return
	}
	in["project"] = p.ID
	b.add(p.ID, typ, inventory.ShortName(name), name, in)
	if property != "" {
		b.link(property, of, name)
	}
}
