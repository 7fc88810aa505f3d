package alerts

import "testing"

// testTarget is a pipeline with one push subscription that dead-letters and
// one pull subscription that opted out of a DLQ.
func testTarget() Target {
	return Target{
		Project:  "acme-prod",
		Pipeline: "orders",
		Env:      "prod",
		Team:     "payments",
		Service:  "orders-consumer",
		Subscriptions: []Subscription{
			{Name: "orders-push", Topic: "projects/acme-prod/topics/orders", DLQSubscription: "orders-push-dlq", DLQTopic: "orders-push.dlq", Push: true},
			{Name: "orders-audit", Topic: "projects/acme-prod/topics/orders"},
		},
		Channels: Channels{
			Critical: []string{"projects/acme-prod/notificationChannels/111"},
			Warning:  []string{"projects/acme-prod/notificationChannels/222"},
		},
	}
}

// mustPlan builds the plan of t and c or fails the test.
func mustPlan(t *testing.T, tg Target, c Config) Plan {
	t.Helper()
	p, err := NewPlan(tg, c)
	if err != nil {
		t.Fatalf("NewPlan: %v", err)
	}
	return p
}
