package main

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	"cloud.google.com/go/firestore/apiv1/admin/adminpb"
	"cloud.google.com/go/iam/apiv1/iampb"
	"cloud.google.com/go/monitoring/apiv3/v2/monitoringpb"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/run/apiv2/runpb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/eventpipe/eventpipe/audit/inventory"
	"github.com/eventpipe/eventpipe/audit/model"
)

const runService = "projects/shop/locations/europe-west1/services/orders-consumer"

// servedProject is the shop project as a full live read finds it: the clean topology's
// topics and subscriptions with their policies, the Cloud Run service orders-sub pushes
// to (invocable by the push account only, storing records in Firestore), the TTL policies
// of its collections, and alert policies on orders-sub's dead letters and backlog.
func servedProject() *inventory.Project {
	tp := cleanTopology()
	p := &inventory.Project{ID: shop, Number: "123456789012", AlertPoliciesRead: true, TTLFieldsRead: true}
	p.Topics = []*pubsubpb.Topic{{Name: topicName("orders")}, {Name: topicName("orders.dlq")}}
	p.Subscriptions = []*pubsubpb.Subscription{tp.sub, tp.dlqSub}
	p.SetPolicy(topicName("orders"), &iampb.Policy{})
	p.SetPolicy(topicName("orders.dlq"), &iampb.Policy{Bindings: []*iampb.Binding{{Role: "roles/pubsub.publisher", Members: []string{agent}}}})
	p.SetPolicy(subName("orders-sub"), &iampb.Policy{Bindings: []*iampb.Binding{{Role: "roles/pubsub.subscriber", Members: []string{agent}}}})
	p.SetPolicy(subName("orders.dlq-sub"), &iampb.Policy{})
	p.SetPolicy(inventory.ProjectName(shop), &iampb.Policy{})
	p.Services = []*runpb.Service{{
		Name: runService, Uri: "https://orders-consumer-abc123-ew.a.run.app",
		Ingress: runpb.IngressTraffic_INGRESS_TRAFFIC_ALL,
		Template: &runpb.RevisionTemplate{Containers: []*runpb.Container{{
			Name: "consumer", Image: "europe-west1-docker.pkg.dev/shop/consumer@sha256:0",
			Env: []*runpb.EnvVar{{Name: "EVENTPIPE_STORE", Values: &runpb.EnvVar_Value{Value: "firestore://shop/(default)"}}},
		}}},
	}}
	p.SetPolicy(runService, &iampb.Policy{Bindings: []*iampb.Binding{{Role: "roles/run.invoker", Members: []string{"serviceAccount:push@shop.iam.gserviceaccount.com"}}}})
	for _, c := range []string{"dedupe", "leases", "receipts"} {
		p.TTLFields = append(p.TTLFields, &adminpb.Field{
			Name:      "projects/shop/databases/(default)/collectionGroups/eventpipe_" + c + "/fields/expireAt",
			TtlConfig: &adminpb.Field_TtlConfig{State: adminpb.Field_TtlConfig_ACTIVE},
		})
	}
	p.AlertPolicies = []*monitoringpb.AlertPolicy{
		alertPolicy("1", "dead_letter_message_count", "orders-sub"),
		alertPolicy("2", "oldest_unacked_message_age", "orders-sub"),
		alertPolicy("3", "oldest_unacked_message_age", "orders.dlq-sub"),
	}
	return p
}

func alertPolicy(id, metric, sub string) *monitoringpb.AlertPolicy {
	return &monitoringpb.AlertPolicy{
		Name: "projects/shop/alertPolicies/" + id, DisplayName: metric + " of " + sub,
		Conditions: []*monitoringpb.AlertPolicy_Condition{{
			DisplayName: metric,
			Condition: &monitoringpb.AlertPolicy_Condition_ConditionThreshold{ConditionThreshold: &monitoringpb.AlertPolicy_Condition_MetricThreshold{
				Filter:   `metric.type="pubsub.googleapis.com/subscription/` + metric + `" AND resource.type="pubsub_subscription" AND resource.labels.subscription_id="` + sub + `"`,
				Duration: durationpb.New(5 * time.Minute),
			}},
		}},
	}
}

// TestAuditModelOfServicesAlertsAndTTL evaluates the rules on the model of live data the
// Pub/Sub emulator cannot serve (Cloud Run services and their IAM, alert policies,
// Firestore TTL policies): the complete project passes, and each break yields its rule.
func TestAuditModelOfServicesAlertsAndTTL(t *testing.T) {
	cases := []struct {
		name   string
		env    string
		change func(p *inventory.Project)
		want   []string
		urn    string
	}{
		{name: "complete", change: func(*inventory.Project) {}},
		{name: "complete, strict environment", env: "prod", change: func(*inventory.Project) {}},
		{name: "public invoker", want: []string{"deny:EP010"}, urn: model.URNOf(shop, model.TypeServiceIAMPolicy, "orders-consumer"), change: func(p *inventory.Project) {
			p.Policies[runService].Bindings[0].Members = append(p.Policies[runService].Bindings[0].Members, "allUsers")
		}},
		{name: "push account may not invoke", want: []string{"deny:EP018"}, urn: model.URNOf(shop, model.TypeSubscription, "orders-sub"), change: func(p *inventory.Project) {
			p.Policies[runService].Bindings[0].Members = []string{"serviceAccount:deployer@shop.iam.gserviceaccount.com"}
		}},
		{name: "push account may invoke project-wide", change: func(p *inventory.Project) {
			p.Policies[runService].Bindings = nil
			p.Policies[inventory.ProjectName(shop)].Bindings = []*iampb.Binding{{Role: "roles/run.invoker", Members: []string{"serviceAccount:push@shop.iam.gserviceaccount.com"}}}
		}},
		{name: "service policy not read", change: func(p *inventory.Project) {
			delete(p.Policies, runService)
			p.AddGap(inventory.GapPolicy, runService, "denied")
		}},
		{name: "invoker check disabled", want: []string{"deny:EP010"}, urn: model.URNOf(shop, model.TypeService, "orders-consumer"), change: func(p *inventory.Project) {
			p.Services[0].InvokerIamDisabled = true
		}},
		{name: "collection without TTL", want: []string{"warn:EP014"}, change: func(p *inventory.Project) { p.TTLFields = p.TTLFields[:2] }},
		{name: "TTL policies not read", change: func(p *inventory.Project) { p.TTLFields, p.TTLFieldsRead = nil, false }},
		{name: "no dead-letter alert", want: []string{"warn:EP102"}, change: func(p *inventory.Project) { p.AlertPolicies = p.AlertPolicies[1:] }},
		{name: "no alerts, strict environment", env: "prod", want: []string{"deny:EP101", "deny:EP103", "deny:EP103"}, change: func(p *inventory.Project) {
			p.AlertPolicies = nil
		}},
		{name: "alert policies not read", env: "prod", change: func(p *inventory.Project) { p.AlertPolicies, p.AlertPoliciesRead = nil, false }},
		{name: "project policy not read", change: func(p *inventory.Project) {
			delete(p.Policies, inventory.ProjectName(shop))
			p.AddGap(inventory.GapPolicy, inventory.ProjectName(shop), "denied")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := servedProject()
			tc.change(p)
			doc := model.Build(&inventory.Inventory{Projects: []*inventory.Project{p}})
			run, err := startPolicyRun(context.Background(), "audit", policyFlags{now: time.Now}, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			ev, err := evaluateAudit(context.Background(), run, doc, "test", func(string) (string, int) { return "", 0 })
			if err != nil {
				t.Fatal(err)
			}
			findings := ev.findings
			var got []string
			for _, f := range findings {
				got = append(got, string(f.Level)+":"+f.Rule.ID)
				if tc.urn != "" && f.URN != tc.urn {
					t.Errorf("finding on %s, want %s", f.URN, tc.urn)
				}
			}
			sort.Strings(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("findings %v, want %v\n%+v", got, tc.want, findings)
			}
		})
	}
}
