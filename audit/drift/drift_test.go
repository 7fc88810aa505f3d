package drift

import (
	"strings"
	"testing"

	"cloud.google.com/go/firestore/apiv1/admin/adminpb"
	"cloud.google.com/go/iam/apiv1/iampb"
	"cloud.google.com/go/monitoring/apiv3/v2/monitoringpb"
	"cloud.google.com/go/run/apiv2/runpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/eventpipe/eventpipe/audit/inventory"
	"github.com/eventpipe/eventpipe/audit/model"
	"github.com/eventpipe/eventpipe/internal/testing/livetest"
)

// declaredSub is a subscription as a stack declares it (pulumi-gcp inputs).
func declaredSub() map[string]any {
	return map[string]any{
		"name": "orders-sub", "project": "p", "topic": "projects/p/topics/orders", "ackDeadlineSeconds": 60,
		"labels":           map[string]any{"team": "orders"},
		"expirationPolicy": map[string]any{"ttl": ""},
		"deadLetterPolicy": map[string]any{"deadLetterTopic": "projects/p/topics/orders.dlq"},
		"pushConfig": map[string]any{"pushEndpoint": "https://consumer-x-ew.a.run.app/push",
			"oidcToken": map[string]any{"serviceAccountEmail": "push@p.iam.gserviceaccount.com"}},
		"enableExactlyOnceDelivery": false,
	}
}

const runService = "projects/p/locations/europe-west1/services/consumer"

func declaredService() map[string]any {
	return map[string]any{"name": "consumer", "location": "europe-west1", "project": "p", "ingress": "INGRESS_TRAFFIC_INTERNAL_ONLY",
		"template": map[string]any{"serviceAccount": "run@p", "containers": []any{map[string]any{"name": "c", "image": "img@sha256:1",
			"livenessProbe": map[string]any{"httpGet": map[string]any{"path": "/healthz"}},
			"envs":          []any{map[string]any{"name": "A", "value": "1"}, map[string]any{"name": "B", "value": model.UnknownValue}}}}}}
}

// liveProject is the project as deployed from the declarations above, then changed by change.
func liveProject(t *testing.T, change func(p *inventory.Project)) *inventory.Project {
	t.Helper()
	sub := livetest.SubscriptionOf(t, "p", declaredSub())
	sub.DeadLetterPolicy.MaxDeliveryAttempts = 5 // what Pub/Sub reports for the default
	sub.Labels["goog-terraform-provisioned"] = "true"
	p := &inventory.Project{ID: "p", AlertPoliciesRead: true, TTLFieldsRead: true}
	p.Topics = append(p.Topics, livetest.TopicOf(t, "p", map[string]any{"name": "orders"}))
	p.Subscriptions = append(p.Subscriptions, sub)
	p.SetPolicy("projects/p/topics/orders.dlq", &iampb.Policy{Bindings: []*iampb.Binding{{Role: "roles/pubsub.publisher", Members: []string{"serviceAccount:agent"}}}})
	p.Services = []*runpb.Service{{Name: runService, Uri: "https://consumer-x-ew.a.run.app", Ingress: runpb.IngressTraffic_INGRESS_TRAFFIC_INTERNAL_ONLY,
		Template: &runpb.RevisionTemplate{ServiceAccount: "run@p", Containers: []*runpb.Container{{Name: "c", Image: "img@sha256:1", Env: []*runpb.EnvVar{
			{Name: "A", Values: &runpb.EnvVar_Value{Value: "1"}}, {Name: "B", Values: &runpb.EnvVar_Value{Value: "whatever"}},
			{Name: "EVENTPIPE_STORE", Values: &runpb.EnvVar_Value{Value: "firestore://p/(default)"}},
		}}}}}}
	p.AlertPolicies = []*monitoringpb.AlertPolicy{{Name: "projects/p/alertPolicies/1", DisplayName: "orders backlog"}}
	p.TTLFields = []*adminpb.Field{{Name: "projects/p/databases/(default)/collectionGroups/dedupe/fields/expireAt", TtlConfig: &adminpb.Field_TtlConfig{}}}
	change(p)
	return p
}

func declared() []Resource {
	svc := declaredService()
	envs := svc["template"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	envs["envs"] = append(envs["envs"].([]any), map[string]any{"name": "EVENTPIPE_STORE", "value": "firestore://p/(default)"})
	return []Resource{
		{URN: "urn:sub", Type: model.TypeSubscription, Inputs: declaredSub()},
		{URN: "urn:topic", Type: model.TypeTopic, Inputs: map[string]any{"name": "orders", "project": "p"}},
		{URN: "urn:grant", Type: typeTopicMember, Inputs: map[string]any{"topic": "orders.dlq", "project": "p", "role": "roles/pubsub.publisher", "member": "serviceAccount:agent"}},
		{URN: "urn:svc", Type: model.TypeService, Inputs: svc},
		{URN: "urn:alert", Type: model.TypeAlertPolicy, Inputs: map[string]any{"displayName": "orders backlog", "project": "p"}},
		{URN: "urn:ttl", Type: model.TypeField, Inputs: map[string]any{"project": "p", "collection": "dedupe", "field": "expireAt", "ttlConfig": map[string]any{}}},
		{URN: "urn:elsewhere", Type: model.TypeTopic, Inputs: map[string]any{"name": "x", "project": "not-audited"}},
	}
}

func TestCompare(t *testing.T) {
	cases := []struct {
		name   string
		change func(p *inventory.Project)
		want   []string // "urn message-part"
	}{
		{name: "as declared (defaults, extra labels, unknown values aside)", change: func(*inventory.Project) {}},
		{name: "dead-letter attempts changed", want: []string{"urn:sub deadLetterPolicy.maxDeliveryAttempts is 20 live, absent in the stack"},
			change: func(p *inventory.Project) { p.Subscriptions[0].DeadLetterPolicy.MaxDeliveryAttempts = 20 }},
		{name: "dead-letter policy removed", want: []string{`urn:sub deadLetterPolicy.deadLetterTopic is absent live, "projects/p/topics/orders.dlq" in the stack`},
			change: func(p *inventory.Project) { p.Subscriptions[0].DeadLetterPolicy = nil }},
		{name: "retry policy added by hand", want: []string{`urn:sub retryPolicy.maximumBackoff is "600s" live, absent in the stack; retryPolicy.minimumBackoff is "10s" live, absent in the stack`},
			change: func(p *inventory.Project) {
				p.Subscriptions[0].RetryPolicy = livetest.SubscriptionOf(t, "p", map[string]any{"name": "x", "topic": "t",
					"retryPolicy": map[string]any{"minimumBackoff": "10s", "maximumBackoff": "600s"}}).RetryPolicy
			}},
		{name: "declared label changed", want: []string{`urn:sub labels.team is "payments" live, "orders" in the stack`},
			change: func(p *inventory.Project) { p.Subscriptions[0].Labels["team"] = "payments" }},
		{name: "expires after 31 days", want: []string{`urn:sub expirationPolicy.ttl is absent live, "" in the stack`},
			change: func(p *inventory.Project) { p.Subscriptions[0].ExpirationPolicy = nil }},
		{name: "subscription deleted", want: []string{"urn:sub Subscription projects/p/subscriptions/orders-sub is declared in the stack but does not exist live"},
			change: func(p *inventory.Project) { p.Subscriptions = nil }},
		{name: "grant removed", want: []string{"urn:grant TopicIAMMember projects/p/topics/orders.dlq roles/pubsub.publisher serviceAccount:agent is declared"},
			change: func(p *inventory.Project) { p.Policies["projects/p/topics/orders.dlq"] = &iampb.Policy{} }},
		{name: "grant not readable", change: func(p *inventory.Project) { delete(p.Policies, "projects/p/topics/orders.dlq") }},
		{name: "service ingress and environment changed", want: []string{`urn:svc ingress is "INGRESS_TRAFFIC_ALL" live, "INGRESS_TRAFFIC_INTERNAL_ONLY" in the stack; template.containers.c.envs.A is "2" live, "1" in the stack`},
			change: func(p *inventory.Project) {
				p.Services[0].Ingress = runpb.IngressTraffic_INGRESS_TRAFFIC_ALL
				p.Services[0].Template.Containers[0].Env[0].Values = &runpb.EnvVar_Value{Value: "2"}
			}},
		{name: "service not read", change: func(p *inventory.Project) { p.Services = nil; p.TTLFields = nil }},
		{name: "alert policy deleted", want: []string{"urn:alert AlertPolicy alert policy orders backlog is declared"},
			change: func(p *inventory.Project) { p.AlertPolicies = nil }},
		{name: "alert policy disabled", want: []string{"urn:alert enabled is false live, true in the stack"},
			change: func(p *inventory.Project) { p.AlertPolicies[0].Enabled = wrapperspb.Bool(false) }},
		{name: "alert policies not read", change: func(p *inventory.Project) { p.AlertPolicies, p.AlertPoliciesRead = nil, false }},
		{name: "TTL policy removed", want: []string{"urn:ttl Field projects/p/databases/(default)/collectionGroups/dedupe/fields/expireAt (TTL policy) is declared"},
			change: func(p *inventory.Project) { p.TTLFields = nil }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inv := &inventory.Inventory{Projects: []*inventory.Project{liveProject(t, tc.change)}}
			diffs := Compare(declared(), model.Build(inv), inv)
			if len(diffs) != len(tc.want) {
				t.Fatalf("%d differences, want %d: %+v", len(diffs), len(tc.want), diffs)
			}
			for i, d := range diffs {
				urn, text, _ := strings.Cut(tc.want[i], " ")
				if d.URN != urn || !strings.Contains(d.Message(), text) {
					t.Errorf("difference %s: %s\nwant %s: …%s…", d.URN, d.Message(), urn, text)
				}
			}
		})
	}
}
