package components_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/render"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// producerTopic is a topic another team owns, in its own project.
const producerTopic = "projects/producer-prod/topics/orders"

// subscriptionArgs are the arguments of a standalone subscription on the
// producer's topic.
func subscriptionArgs(settings spec.Subscription) *components.SubscriptionArgs {
	return &components.SubscriptionArgs{
		Project:       pulumi.String("acme-dev"),
		ProjectNumber: pulumi.String("123456789012"),
		Topic:         pulumi.String(producerTopic),
		Subscription:  settings,
	}
}

func subscriptionPlan(t *testing.T, name string, args *components.SubscriptionArgs) *render.Plan {
	t.Helper()
	return runMocked(t, func(ctx *pulumi.Context) error {
		_, err := components.NewSubscription(ctx, name, args)
		return err
	})
}

func TestPushSubscription(t *testing.T) {
	args := subscriptionArgs(spec.Subscription{Delivery: "push"})
	args.Push = &components.PushTarget{
		Endpoint: pulumi.String("https://orders-consumer-123456789012.europe-west1.run.app/pubsub/push"),
		Audience: "acme-dev/orders/pubsub-push", Service: pulumi.String("orders-consumer"),
	}
	plan := subscriptionPlan(t, "orders-main", args)
	want := map[string]int{tSub: 2, tTopic: 1, tTopicIAM: 1, tSubIAM: 1, tAccount: 1, tAccountIAM: 1, tServiceIAM: 1, tIdentity: 1, tSleep: 1}
	if got := countByType(plan); !equalJSON(got, want) {
		t.Fatalf("resources = %v, want %v", got, want)
	}
	pushGrants := [][2]string{{tServiceIAM, "orders-main-push-invoker"}, {tAccountIAM, "orders-main-push-agent-token-creator"},
		{tTopicIAM, "orders-main-dlq-agent-publisher"}}
	waitsAfterGrants(t, plan, one(t, plan, tSub, "orders-main"), "orders-main-push-grants-propagated", "2m0s", pushGrants...)
	// grantPropagation sets the wait; 0s leaves it out, the subscription still after the grants.
	args.GrantPropagation = "30s"
	waitsAfterGrants(t, subscriptionPlan(t, "orders-main", args), one(t, subscriptionPlan(t, "orders-main", args), tSub, "orders-main"),
		"orders-main-push-grants-propagated", "30s", pushGrants...)
	args.GrantPropagation = "0s"
	unwaited := subscriptionPlan(t, "orders-main", args)
	if n := len(custom(unwaited, tSleep)); n != 0 {
		t.Errorf("grantPropagation 0s declared %d waits", n)
	}
	for _, g := range pushGrants {
		if sub := one(t, unwaited, tSub, "orders-main"); !slices.Contains(sub.Dependencies, one(t, unwaited, g[0], g[1]).URN) {
			t.Errorf("without a wait the subscription does not depend on %s: %v", g[1], sub.Dependencies)
		}
	}
	args.GrantPropagation = "2 minutes"
	if err, _ := runErr(func(ctx *pulumi.Context) error {
		_, err := components.NewSubscription(ctx, "orders-main", args)
		return err
	}); err == nil || !strings.Contains(err.Error(), "grantPropagation") {
		t.Errorf("grantPropagation %q: %v, want refused naming it", args.GrantPropagation, err)
	}
	args.GrantPropagation = ""
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
	pushAccount := "orders-main-sub-push@acme-dev.iam.gserviceaccount.com"
	checks := []struct {
		what      string
		got, want any
	}{
		{"subscription name is the component name", input(sub, "name"), "orders-main"},
		{"topic of the producer", input(sub, "topic"), producerTopic},
		{"ack deadline", input(sub, "ackDeadlineSeconds"), float64(60)},
		{"max delivery attempts", input(sub, "deadLetterPolicy.maxDeliveryAttempts"), float64(5)},
		{"dead letter topic in our project", input(sub, "deadLetterPolicy.deadLetterTopic"), "projects/acme-dev/topics/orders-main.dlq"},
		{"min backoff", input(sub, "retryPolicy.minimumBackoff"), "10s"},
		{"max backoff", input(sub, "retryPolicy.maximumBackoff"), "600s"},
		{"never expires", input(sub, "expirationPolicy.ttl"), ""},
		{"retention", input(sub, "messageRetentionDuration"), "604800s"},
		{"exactly once off for push", input(sub, "enableExactlyOnceDelivery"), false},
		{"push endpoint", input(sub, "pushConfig.pushEndpoint"), "https://orders-consumer-123456789012.europe-west1.run.app/pubsub/push"},
		{"oidc account", input(sub, "pushConfig.oidcToken.serviceAccountEmail"), pushAccount},
		{"oidc audience", input(sub, "pushConfig.oidcToken.audience"), "acme-dev/orders/pubsub-push"},
		{"labels role", input(sub, "labels.eventpipe_role"), "source"},
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
	// The subscription and its dead-letter queue hold messages: a deletion
	// or replacement must not go through silently.
	for _, s := range []render.State{sub, dlqTopic, dlqSub} {
		if !s.Protect {
			t.Errorf("%s is not protected", s.URN)
		}
	}

	grants := []struct {
		typ, name, targetKey, target, role, member string
	}{
		{tTopicIAM, "orders-main-dlq-agent-publisher", "topic", "orders-main.dlq", components.RolePublisher, agentMember},
		{tSubIAM, "orders-main-agent-subscriber", "subscription", "orders-main", components.RoleSubscriber, agentMember},
		{tAccountIAM, "orders-main-push-agent-token-creator", "serviceAccountId", "projects/acme-dev/serviceAccounts/" + pushAccount, components.RoleTokenCreator, agentMember},
		{tServiceIAM, "orders-main-push-invoker", "name", "orders-consumer", components.RoleRunInvoker, "serviceAccount:" + pushAccount},
	}
	for _, g := range grants {
		s := one(t, plan, g.typ, g.name)
		if input(s, g.targetKey) != g.target || input(s, "role") != g.role || input(s, "member") != g.member {
			t.Errorf("%s: %s=%v role=%v member=%v; want %s %s %s", g.name, g.targetKey, input(s, g.targetKey), input(s, "role"), input(s, "member"), g.target, g.role, g.member)
		}
	}
}

// TestExternalPullSubscription: a subscription on another team's topic for
// consumers outside the pipeline, who get roles/pubsub.subscriber on it.
func TestExternalPullSubscription(t *testing.T) {
	readers := []string{"serviceAccount:audit@audit-prod.iam.gserviceaccount.com", "group:data-eng@acme.example"}
	plan := subscriptionPlan(t, "orders-audit", subscriptionArgs(spec.Subscription{
		Delivery: "pull", External: true, ExactlyOnce: true, Subscribers: readers, MaxDeliveryAttempts: intPtr(10),
	}))
	want := map[string]int{tSub: 2, tTopic: 1, tTopicIAM: 1, tSubIAM: 3, tIdentity: 1}
	if got := countByType(plan); !equalJSON(got, want) {
		t.Fatalf("resources = %v, want %v", got, want)
	}
	sub := one(t, plan, tSub, "orders-audit")
	if input(sub, "enableExactlyOnceDelivery") != true || input(sub, "pushConfig") != nil || input(sub, "deadLetterPolicy.maxDeliveryAttempts") != float64(10) {
		t.Errorf("pull subscription inputs: %v", sub.Inputs)
	}
	for _, m := range readers {
		g := one(t, plan, tSubIAM, "orders-audit-"+m+"-subscriber")
		if input(g, "member") != m || input(g, "role") != components.RoleSubscriber || input(g, "subscription") != "orders-audit" {
			t.Errorf("grant for %s = %v", m, g.Inputs)
		}
	}
}

func TestSubscriptionDeadLetterOptOut(t *testing.T) {
	plan := subscriptionPlan(t, "orders-work", subscriptionArgs(spec.Subscription{
		Delivery: "pull", Subscribers: []string{"serviceAccount:w@acme-dev.iam.gserviceaccount.com"},
		DeadLetter: &spec.DeadLetter{OptOut: true, Reason: "Replayed from the warehouse"},
	}))
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

// TestSubscriptionRejectsBadArgs: every problem at once, each on the
// argument path the user set, before anything is declared.
func TestSubscriptionRejectsBadArgs(t *testing.T) {
	cases := []struct {
		name string
		args *components.SubscriptionArgs
		want []string
		// component is the component's name (default orders-main).
		component string
	}{
		{"nil args", nil, []string{"subscription orders-main: no arguments"}, ""},
		{"no push target", subscriptionArgs(spec.Subscription{Delivery: "push"}), []string{"push (not set): allowed an endpoint and an audience"}, ""},
		{"everything at once", &components.SubscriptionArgs{Project: pulumi.String("acme-dev"), Subscription: spec.Subscription{
			Delivery: "pull", MaxDeliveryAttempts: intPtr(3), MinBackoff: "20m", Subscribers: []string{"reader@x.iam.gserviceaccount.com"}}},
			[]string{"(5 problems)", "projectNumber (not set)", "topic (not set)", "subscription.maxDeliveryAttempts = 3: allowed 5–100",
				`subscription.minBackoff = "20m": allowed 0s–10m`, "subscription.subscribers[0]"}, ""},
		{"push account id from the name", func() *components.SubscriptionArgs {
			a := subscriptionArgs(spec.Subscription{Delivery: "push", Name: "Orders.v2"})
			a.Push = &components.PushTarget{Endpoint: pulumi.String("https://x.example"), Audience: "a"}
			return a
		}(), []string{`name = "Orders_Main": allowed lowercase letters, digits and hyphens`}, "Orders_Main"},
		{"push on pull", func() *components.SubscriptionArgs {
			a := subscriptionArgs(spec.Subscription{Delivery: "pull"})
			a.Push = &components.PushTarget{Endpoint: pulumi.String("https://x.example"), Audience: "a"}
			return a
		}(), []string{"push = (set): allowed only with delivery: push"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err, regs := runErr(func(ctx *pulumi.Context) error {
				name := tc.component
				if name == "" {
					name = "orders-main"
				}
				_, err := components.NewSubscription(ctx, name, tc.args)
				return err
			})
			for _, want := range tc.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v\nwant it to contain %q", err, want)
				}
			}
			if len(regs) != 0 {
				t.Errorf("%d resources registered before validation failed", len(regs))
			}
		})
	}
}

func TestPushSubscriptionRejectsPlainHTTP(t *testing.T) {
	args := subscriptionArgs(spec.Subscription{Delivery: "push"})
	args.Push = &components.PushTarget{Endpoint: pulumi.String("http://x.example/pubsub/push"), Audience: "a"}
	err, _ := runErr(func(ctx *pulumi.Context) error {
		_, err := components.NewSubscription(ctx, "orders-main", args)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "not https") {
		t.Errorf("err = %v, want the plain-http endpoint refused", err)
	}
}

func intPtr(n int) *int { return &n }
