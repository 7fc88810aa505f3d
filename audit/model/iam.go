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

// policyInputs is policyData for the policy read for name, or the unknown value when the
// audit could not read it.
func policyInputs(p *inventory.Project, name string) (string, bool) {
	if pol, ok := p.Policies[name]; ok {
		return PolicyData(pol), true
	}
	if p.HasGap(inventory.GapPolicy, name) {
		return UnknownValue, true
	}
	return "", false
}

// addPolicies adds the IAM policy resources of p's topics, subscriptions and Cloud Run
// services and of the project itself.
func (b *builder) addPolicies(p *inventory.Project) {
	for _, t := range p.Topics {
		if data, ok := policyInputs(p, t.GetName()); ok {
			b.add(p.ID, TypeTopicIAMPolicy, inventory.ShortName(t.GetName()), t.GetName(),
				map[string]any{"topic": t.GetName(), "project": p.ID, "policyData": data})
			b.link("topic", TypeTopic, t.GetName())
		}
	}
	for _, s := range p.Subscriptions {
		if data, ok := policyInputs(p, s.GetName()); ok {
			b.add(p.ID, TypeSubscriptionIAMPolicy, inventory.ShortName(s.GetName()), s.GetName(),
				map[string]any{"subscription": s.GetName(), "project": p.ID, "policyData": data})
			b.link("subscription", TypeSubscription, s.GetName())
		}
	}
	b.addServicePolicies(p)
	if data, ok := policyInputs(p, inventory.ProjectName(p.ID)); ok {
		b.add(p.ID, TypeProjectIAMPolicy, p.ID, inventory.ProjectName(p.ID),
			map[string]any{"project": p.ID, "policyData": data})
	}
}
