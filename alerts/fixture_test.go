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

// mustPolicySet builds the PolicySet of t and c or fails the test.
func mustPolicySet(t *testing.T, tg Target, c Config) PolicySet {
	t.Helper()
	p, err := NewPolicySet(tg, c)
	if err != nil {
		t.Fatalf("NewPolicySet: %v", err)
	}
	return p
}
