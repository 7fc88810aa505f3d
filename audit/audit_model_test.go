package audit

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
	"github.com/eventpipe/eventpipe/policies/check"
)

const (
	shop       = "shop"
	agent      = "serviceAccount:service-123456789012@gcp-sa-pubsub.iam.gserviceaccount.com"
	runService = "projects/shop/locations/europe-west1/services/orders-consumer"
)

func topicName(id string) string { return "projects/" + shop + "/topics/" + id }
func subName(id string) string   { return "projects/" + shop + "/subscriptions/" + id }

// servedProject is the shop project as a full live read finds it: topic orders read by
// orders-sub, which pushes with OIDC, retries with backoff, never expires and dead-letters
// to orders.dlq, read by orders.dlq-sub; their policies; the Cloud Run service orders-sub pushes
// to (invocable by the push account only, storing records in Firestore), the TTL policies
// of its collections, and alert policies on orders-sub's dead letters and backlog.
func servedProject() *inventory.Project {
	p := &inventory.Project{ID: shop, Number: "123456789012", AlertPoliciesRead: true, TTLFieldsRead: true}
	p.Topics = []*pubsubpb.Topic{{Name: topicName("orders")}, {Name: topicName("orders.dlq")}}
	retry := &pubsubpb.RetryPolicy{MinimumBackoff: durationpb.New(10 * time.Second), MaximumBackoff: durationpb.New(600 * time.Second)}
	p.Subscriptions = []*pubsubpb.Subscription{{
		Name: subName("orders-sub"), Topic: topicName("orders"), AckDeadlineSeconds: 60,
		DeadLetterPolicy: &pubsubpb.DeadLetterPolicy{DeadLetterTopic: topicName("orders.dlq"), MaxDeliveryAttempts: 10},
		RetryPolicy:      retry, ExpirationPolicy: &pubsubpb.ExpirationPolicy{},
		PushConfig: &pubsubpb.PushConfig{
			PushEndpoint:         "https://orders-consumer-abc123-ew.a.run.app/pubsub/push",
			AuthenticationMethod: &pubsubpb.PushConfig_OidcToken_{OidcToken: &pubsubpb.PushConfig_OidcToken{ServiceAccountEmail: "push@shop.iam.gserviceaccount.com"}},
		},
	}, {
		Name: subName("orders.dlq-sub"), Topic: topicName("orders.dlq"), AckDeadlineSeconds: 60,
		RetryPolicy: retry, ExpirationPolicy: &pubsubpb.ExpirationPolicy{},
		MessageRetentionDuration: durationpb.New(7 * 24 * time.Hour),
	}}
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
			run, err := check.Start(context.Background(), "audit", check.Options{Env: tc.env})
			if err != nil {
				t.Fatal(err)
			}
			ev, err := Evaluate(context.Background(), run, doc, "test", func(string) (string, int) { return "", 0 })
			if err != nil {
				t.Fatal(err)
			}
			findings := ev.Findings
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
