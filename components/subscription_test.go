package components_test

import (
	"context"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/render"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// subscriptionPlan declares only subscription key of the base pipeline; push
// subscriptions target a fixed service.
func subscriptionPlan(t *testing.T, st *spec.Stack, key string) *render.Plan {
	t.Helper()
	p := st.Pipelines["orders"]
	sp := p.Subscriptions[key]
	plan := runMocked(t, st, func(ctx *pulumi.Context) error {
		args := &components.SubscriptionArgs{Stack: st, Pipeline: p, Spec: sp, Topic: pulumi.String("projects/acme-dev/topics/orders")}
		if sp.Push() {
			args.Push = &components.PushTarget{
				Endpoint: pulumi.String("https://orders-consumer-123456789012.europe-west1.run.app/pubsub/push"),
				Audience: p.Consumer.Audience, Service: pulumi.String("orders-consumer"), Location: st.Region,
			}
		} else {
			args.Subscribers = map[string]pulumi.StringInput{"consumer": pulumi.String("serviceAccount:" + consumerEmail)}
		}
		_, err := components.NewSubscription(ctx, sp.Name, args)
		return err
	})
	return plan
}

func TestPushSubscription(t *testing.T) {
	plan := subscriptionPlan(t, loadStack(t, baseStack), "main")
	want := map[string]int{tSub: 2, tTopic: 1, tTopicIAM: 1, tSubIAM: 1, tAccount: 1, tAccountIAM: 1, tServiceIAM: 1}
	if got := countByType(plan); !equalJSON(got, want) {
		t.Fatalf("resources = %v, want %v", got, want)
	}
	comp := plan.StepsOfType(components.TypeSubscription)
	if len(comp) != 1 {
		t.Fatalf("want one Subscription component, got %d", len(comp))
	}
	for _, s := range plan.Steps {
		if s.NewState.Custom && s.NewState.Type != "pulumi:providers:gcp" && s.NewState.Parent != comp[0].URN {
			t.Errorf("%s is not parented to the component", s.URN)
		}
	}

	sub := one(t, plan, tSub, "orders-main")
	dlqTopic := one(t, plan, tTopic, "orders-main-dlq")
	dlqSub := one(t, plan, tSub, "orders-main-dlq")
	checks := []struct {
		what      string
		got, want any
	}{
		{"subscription name", input(sub, "name"), "orders-main"},
		{"topic", input(sub, "topic"), "projects/acme-dev/topics/orders"},
		{"ack deadline = consumer request timeout", input(sub, "ackDeadlineSeconds"), float64(60)},
		{"max delivery attempts", input(sub, "deadLetterPolicy.maxDeliveryAttempts"), float64(5)},
		{"dead letter topic", input(sub, "deadLetterPolicy.deadLetterTopic"), "projects/acme-dev/topics/orders-main.dlq"},
		{"min backoff", input(sub, "retryPolicy.minimumBackoff"), "10s"},
		{"max backoff", input(sub, "retryPolicy.maximumBackoff"), "600s"},
		{"never expires", input(sub, "expirationPolicy.ttl"), ""},
		{"retention", input(sub, "messageRetentionDuration"), "604800s"},
		{"exactly once off for push", input(sub, "enableExactlyOnceDelivery"), false},
		{"push endpoint", input(sub, "pushConfig.pushEndpoint"), "https://orders-consumer-123456789012.europe-west1.run.app/pubsub/push"},
		{"oidc account", input(sub, "pushConfig.oidcToken.serviceAccountEmail"), pushEmail},
		{"oidc audience", input(sub, "pushConfig.oidcToken.audience"), "acme-dev/orders/pubsub-push"},
		{"labels role", input(sub, "labels.eventpipe_role"), "source"},
		{"labels pipeline", input(sub, "labels.eventpipe_pipeline"), "orders"},
		{"labels env", input(sub, "labels.eventpipe_env"), "dev"},
		{"dlq topic name", input(dlqTopic, "name"), "orders-main.dlq"},
		{"dlq topic role", input(dlqTopic, "labels.eventpipe_role"), "dlq"},
		{"dlq sub topic", input(dlqSub, "topic"), "projects/acme-dev/topics/orders-main.dlq"},
		{"dlq sub never expires", input(dlqSub, "expirationPolicy.ttl"), ""},
		{"dlq sub retention 14d", input(dlqSub, "messageRetentionDuration"), "1209600s"},
		{"dlq sub has no dlq", input(dlqSub, "deadLetterPolicy"), nil},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %#v, want %#v", c.what, c.got, c.want)
		}
	}
	if deps := sub.PropertyDependencies["deadLetterPolicy"]; len(deps) != 1 || !strings.HasSuffix(deps[0], "Topic::orders-main-dlq") {
		t.Errorf("deadLetterPolicy must be linked to the DLQ topic by URN: %v", deps)
	}

	grants := []struct {
		typ, name, targetKey, target, role, member string
	}{
		{tTopicIAM, "orders-main-dlq-agent-publisher", "topic", "orders-main.dlq", components.RolePublisher, agentMember},
		{tSubIAM, "orders-main-agent-subscriber", "subscription", "orders-main", components.RoleSubscriber, agentMember},
		{tAccountIAM, "orders-main-push-agent-token-creator", "serviceAccountId", "projects/acme-dev/serviceAccounts/" + pushEmail, components.RoleTokenCreator, agentMember},
		{tServiceIAM, "orders-main-push-invoker", "name", "orders-consumer", components.RoleRunInvoker, "serviceAccount:" + pushEmail},
	}
	for _, g := range grants {
		s := one(t, plan, g.typ, g.name)
		if input(s, g.targetKey) != g.target || input(s, "role") != g.role || input(s, "member") != g.member {
			t.Errorf("%s: %s=%v role=%v member=%v; want %s %s %s", g.name, g.targetKey, input(s, g.targetKey), input(s, "role"), input(s, "member"), g.target, g.role, g.member)
		}
	}
	account := one(t, plan, tAccount, "orders-main-push")
	if input(account, "accountId") != "orders-main-push" {
		t.Errorf("push account id = %v", input(account, "accountId"))
	}
}

func TestPullSubscription(t *testing.T) {
	plan := subscriptionPlan(t, loadStack(t, baseStack), "work")
	want := map[string]int{tSub: 2, tTopic: 1, tTopicIAM: 1, tSubIAM: 2}
	if got := countByType(plan); !equalJSON(got, want) {
		t.Fatalf("resources = %v, want %v", got, want)
	}
	sub := one(t, plan, tSub, "orders-work")
	if input(sub, "enableExactlyOnceDelivery") != true || input(sub, "pushConfig") != nil || input(sub, "ackDeadlineSeconds") != float64(60) {
		t.Errorf("pull subscription inputs: %v", sub.Inputs)
	}
	grant := one(t, plan, tSubIAM, "orders-work-consumer-subscriber")
	if input(grant, "member") != "serviceAccount:"+consumerEmail || input(grant, "role") != components.RoleSubscriber {
		t.Errorf("consumer grant = %v", grant.Inputs)
	}
}

func TestSubscriptionDeadLetterOptOut(t *testing.T) {
	doc := strings.Replace(baseStack, "          delivery: pull\n", "          delivery: pull\n          deadLetter:\n            optOut: true\n            reason: Replayed from the warehouse\n", 1)
	plan := subscriptionPlan(t, loadStack(t, doc), "work")
	want := map[string]int{tSub: 1, tSubIAM: 1}
	if got := countByType(plan); !equalJSON(got, want) {
		t.Fatalf("resources = %v, want %v (no DLQ topic, DLQ subscription or agent grants)", got, want)
	}
	sub := one(t, plan, tSub, "orders-work")
	if input(sub, "deadLetterPolicy") != nil {
		t.Error("opt-out still has a dead-letter policy")
	}
	if input(sub, "labels.eventpipe_dlq_opt_out") != "true" || input(sub, "labels.eventpipe_dlq_opt_out_reason") != "replayed-from-the-warehouse" {
		t.Errorf("opt-out labels = %v", input(sub, "labels"))
	}
	if input(sub, "retryPolicy.minimumBackoff") != "10s" || input(sub, "expirationPolicy.ttl") != "" {
		t.Error("opt-out must keep the retry policy and never expire")
	}
}

func TestPushSubscriptionRejectsUnsafeTargets(t *testing.T) {
	st := loadStack(t, baseStack)
	p := st.Pipelines["orders"]
	cases := []struct {
		name   string
		target *components.PushTarget
		want   string
	}{
		{"no target", nil, "PushTarget"},
		{"no audience", &components.PushTarget{Endpoint: pulumi.String("https://x.example/pubsub/push"), Service: pulumi.String("s"), Location: "europe-west1"}, "audience"},
		{"plain http", &components.PushTarget{Endpoint: pulumi.String("http://x.example/pubsub/push"), Audience: "a", Service: pulumi.String("s"), Location: "europe-west1"}, "not https"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := render.RunProgram(context.Background(), "dev", spec.MapSource{}, st, func(ctx *pulumi.Context) error {
				_, err := components.NewSubscription(ctx, "orders-main", &components.SubscriptionArgs{
					Stack: st, Pipeline: p, Spec: p.Subscriptions["main"], Topic: pulumi.String("t"), Push: tc.target,
				})
				return err
			})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}
