package model

import (
	"strings"

	"cloud.google.com/go/firestore/apiv1/admin/adminpb"
	"cloud.google.com/go/monitoring/apiv3/v2/monitoringpb"

	"github.com/eventpipe/eventpipe/audit/inventory"
)

// unreadName is the URN name of the placeholder that stands for data an audit could not
// read (alert policies, Firestore TTL fields): the rules see its settings as unknown and
// give no verdict that needs them.
const unreadName = "unread"

// addAlertPolicies adds p's alert policies, or, when they could not be read, one policy
// whose conditions are unknown.
func (b *builder) addAlertPolicies(p *inventory.Project) {
	if !p.AlertPoliciesRead {
		b.add(p.ID, TypeAlertPolicy, unreadName, "", map[string]any{
			"displayName": "alert policies the audit could not read", "project": p.ID, "conditions": UnknownValue,
		})
		return
	}
	for _, ap := range p.AlertPolicies {
		b.add(p.ID, TypeAlertPolicy, inventory.ShortName(ap.GetName()), ap.GetName(), alertPolicyInputs(p.ID, ap))
	}
}

func alertPolicyInputs(project string, ap *monitoringpb.AlertPolicy) map[string]any {
	in := map[string]any{
		"displayName": ap.GetDisplayName(),
		"project":     project,
		"combiner":    ap.GetCombiner().String(),
		// An unset enabled flag means enabled.
		"enabled": ap.GetEnabled() == nil || ap.GetEnabled().GetValue(),
	}
	if len(ap.GetNotificationChannels()) > 0 {
		in["notificationChannels"] = ap.GetNotificationChannels()
	}
	putLabels(in, "userLabels", ap.GetUserLabels())
	conditions := make([]any, 0, len(ap.GetConditions()))
	for _, c := range ap.GetConditions() {
		cm := map[string]any{"displayName": c.GetDisplayName()}
		switch {
		case c.GetConditionThreshold() != nil:
			t := c.GetConditionThreshold()
			ct := map[string]any{"filter": t.GetFilter(), "comparison": t.GetComparison().String(), "thresholdValue": t.GetThresholdValue()}
			if t.GetDenominatorFilter() != "" {
				ct["denominatorFilter"] = t.GetDenominatorFilter()
			}
			putDuration(ct, "duration", t.GetDuration())
			cm["conditionThreshold"] = ct
		case c.GetConditionAbsent() != nil:
			a := c.GetConditionAbsent()
			ca := map[string]any{"filter": a.GetFilter()}
			putDuration(ca, "duration", a.GetDuration())
			cm["conditionAbsent"] = ca
		case c.GetConditionPrometheusQueryLanguage() != nil:
			q := c.GetConditionPrometheusQueryLanguage()
			cq := map[string]any{"query": q.GetQuery()}
			putDuration(cq, "duration", q.GetDuration())
			cm["conditionPrometheusQueryLanguage"] = cq
		case c.GetConditionMonitoringQueryLanguage() != nil:
			q := c.GetConditionMonitoringQueryLanguage()
			cq := map[string]any{"query": q.GetQuery()}
			putDuration(cq, "duration", q.GetDuration())
			cm["conditionMonitoringQueryLanguage"] = cq
		case c.GetConditionMatchedLog() != nil:
			cm["conditionMatchedLog"] = map[string]any{"filter": c.GetConditionMatchedLog().GetFilter()}
		}
		conditions = append(conditions, cm)
	}
	in["conditions"] = conditions
	return in
}

// addTTLFields adds p's Firestore TTL policies, or, when they could not be read, one field
// whose collection and name are unknown.
func (b *builder) addTTLFields(p *inventory.Project) {
	if !p.TTLFieldsRead {
		b.add(p.ID, TypeField, unreadName, "", map[string]any{
			"project": p.ID, "collection": UnknownValue, "field": UnknownValue, "ttlConfig": map[string]any{},
		})
		return
	}
	for _, f := range p.TTLFields {
		if in, ok := fieldInputs(p.ID, f); ok {
			b.add(p.ID, TypeField, fieldURNName(in), f.GetName(), in)
		}
	}
}

// fieldInputs are a Firestore field's inputs when it has a working TTL policy. A field
// name is projects/P/databases/D/collectionGroups/C/fields/F.
func fieldInputs(project string, f *adminpb.Field) (map[string]any, bool) {
	ttl := f.GetTtlConfig()
	if ttl == nil || ttl.GetState() == adminpb.Field_TtlConfig_NEEDS_REPAIR {
		return nil, false
	}
	parts := splitName(f.GetName())
	db, group, field := parts["databases"], parts["collectionGroups"], parts["fields"]
	if group == "" || field == "" {
		return nil, false
	}
	if db == "" {
		db = "(default)"
	}
	return map[string]any{"project": project, "database": db, "collection": group, "field": field, "ttlConfig": map[string]any{}}, true
}

func fieldURNName(in map[string]any) string {
	return in["database"].(string) + "/" + in["collection"].(string) + "/" + in["field"].(string)
}

// splitName maps the collection segments of a resource name to their ids:
// projects/p/databases/d → {projects: p, databases: d}.
func splitName(name string) map[string]string {
	out := map[string]string{}
	var key string
	for i, seg := range strings.Split(name, "/") {
		if i%2 == 0 {
			key = seg
		} else {
			out[key] = seg
		}
	}
	return out
}
