package model

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"cloud.google.com/go/iam/apiv1/iampb"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/eventpipe/eventpipe/audit/inventory"
	"github.com/eventpipe/eventpipe/internal/testing/ruletest"
	"github.com/eventpipe/eventpipe/policies/evaluate"
	"github.com/eventpipe/eventpipe/policies/plan"
)

// crossProjectDLQ is a subscription of project app dead-lettering to a topic of project dlq:
// the grants Pub/Sub needs (publisher on the dead-letter topic, subscriber on the
// subscription) go to publisherAgent and subscriberAgent, which are project IDs whose
// Pub/Sub service agents are meant. numbers says whether the audit read the projects'
// numbers.
func crossProjectDLQ(publisherAgent, subscriberAgent string, numbers bool) *inventory.Inventory {
	number := map[string]string{"app": "111111111111", "dlq": "222222222222"}
	agent := func(project string) string {
		return "serviceAccount:service-" + number[project] + "@gcp-sa-pubsub.iam.gserviceaccount.com"
	}
	app := &inventory.Project{ID: "app", AlertPoliciesRead: true, TTLFieldsRead: true}
	dlq := &inventory.Project{ID: "dlq", AlertPoliciesRead: true, TTLFieldsRead: true}
	if numbers {
		app.Number, dlq.Number = number["app"], number["dlq"]
	}
	app.Topics = []*pubsubpb.Topic{{Name: "projects/app/topics/orders"}}
	app.Subscriptions = []*pubsubpb.Subscription{{
		Name: "projects/app/subscriptions/orders-sub", Topic: "projects/app/topics/orders",
		DeadLetterPolicy: &pubsubpb.DeadLetterPolicy{DeadLetterTopic: "projects/dlq/topics/orders.dlq", MaxDeliveryAttempts: 5},
	}}
	app.SetPolicy("projects/app/topics/orders", &iampb.Policy{})
	app.SetPolicy("projects/app/subscriptions/orders-sub", &iampb.Policy{Bindings: []*iampb.Binding{{Role: "roles/pubsub.subscriber", Members: []string{agent(subscriberAgent)}}}})
	app.SetPolicy(inventory.ProjectName("app"), &iampb.Policy{})
	dlq.Topics = []*pubsubpb.Topic{{Name: "projects/dlq/topics/orders.dlq"}}
	dlq.Subscriptions = []*pubsubpb.Subscription{{Name: "projects/dlq/subscriptions/orders.dlq-sub", Topic: "projects/dlq/topics/orders.dlq"}}
	dlq.SetPolicy("projects/dlq/topics/orders.dlq", &iampb.Policy{Bindings: []*iampb.Binding{{Role: "roles/pubsub.publisher", Members: []string{agent(publisherAgent)}}}})
	dlq.SetPolicy("projects/dlq/subscriptions/orders.dlq-sub", &iampb.Policy{})
	dlq.SetPolicy(inventory.ProjectName("dlq"), &iampb.Policy{})
	return &inventory.Inventory{Projects: []*inventory.Project{app, dlq}}
}

// TestDeadLetterGrantsNameTheSubscriptionProjectsAgent holds the audit to the rule Pub/Sub
// dead-letters by: as the service agent of the subscription's project. For every choice
// of the agent each grant names (the subscription's project's or the dead-letter topic's
// project's) and whether the audit read the projects' numbers, EP006 (publisher on the
// dead-letter topic) and EP007 (subscriber on the subscription) deny exactly the grant to
// the wrong project's agent when the numbers are known; without them any project's agent
// is accepted (and the finding would say so).
func TestDeadLetterGrantsNameTheSubscriptionProjectsAgent(t *testing.T) {
	e := ruletest.Engine(t, nil)
	sub := URNOf("app", TypeSubscription, "orders-sub")
	for _, publisher := range []string{"app", "dlq"} {
		for _, subscriber := range []string{"app", "dlq"} {
			for _, numbers := range []bool{true, false} {
				var want []string
				if numbers && publisher != "app" {
					want = append(want, "EP006 "+sub)
				}
				if numbers && subscriber != "app" {
					want = append(want, "EP007 "+sub)
				}
				name := fmt.Sprintf("publisher %s, subscriber %s, numbers %v", publisher, subscriber, numbers)
				t.Run(name, func(t *testing.T) {
					parts := Build(crossProjectDLQ(publisher, subscriber, numbers)).Split()
					if len(parts) != 1 {
						t.Fatalf("%d groups, want the two projects in one", len(parts))
					}
					if numbers && len(parts[0].ProjectNumbers) != 2 {
						t.Fatalf("the group carries the numbers %v, want both projects'", parts[0].ProjectNumbers)
					}
					data, err := parts[0].JSON()
					if err != nil {
						t.Fatal(err)
					}
					p, err := plan.Parse(data, "audit.json")
					if err != nil {
						t.Fatal(err)
					}
					fs, err := e.Evaluate(context.Background(), p)
					if err != nil {
						t.Fatal(err)
					}
					var got []string
					for _, f := range fs {
						if f.Rule.ID == "EP006" || f.Rule.ID == "EP007" {
							if f.Level != evaluate.Deny {
								t.Errorf("%s on %s is a %s, want a deny: %s", f.Rule.ID, f.URN, f.Level, f.Message)
							}
							got = append(got, f.Rule.ID+" "+f.URN)
						}
					}
					slices.Sort(got)
					if !slices.Equal(got, want) {
						t.Fatalf("EP006/EP007 findings %v, want %v", got, want)
					}
				})
			}
		}
	}
}
