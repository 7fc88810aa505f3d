package components_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/alerts"
	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/consumer/settings"
	"github.com/eventpipe/eventpipe/render"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/pubsub"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// minimalArgs are the fewest arguments a pipeline takes: everything else
// is a default applied inside the component.
func minimalArgs() *components.PipelineArgs {
	return &components.PipelineArgs{
		Project:       pulumi.String("acme-dev"),
		ProjectNumber: pulumi.String("123456789012"),
		Consumer:      spec.Consumer{Image: pulumi.String("europe-docker.pkg.dev/acme/eventpipe/consumer:1.2.3")},
		Subscriptions: map[string]spec.Subscription{"main": {Delivery: "push"}},
	}
}

func pipelinePlan(t *testing.T, name string, args *components.PipelineArgs) *render.Plan {
	t.Helper()
	return runMocked(t, func(ctx *pulumi.Context) error {
		_, err := components.NewPipeline(ctx, name, args)
		return err
	})
}

// TestPipelineFromHandBuiltArgs: a pipeline built in Go from the fewest
// arguments gets the same complete, protected shape the stack files give.
func TestPipelineFromHandBuiltArgs(t *testing.T) {
	plan := pipelinePlan(t, "orders", minimalArgs())
	want := map[string]int{
		tTopic: 2, tSub: 2, tTopicIAM: 1, tSubIAM: 1, tAccount: 2, tAccountIAM: 1, tServiceIAM: 1, tProjectIAM: 1, tService: 1, tField: 4,
		tMetric: 4, tAlertPolicy: 18, tSLOService: 1, tSLO: 1, tIdentity: 1,
		tSleep: 1, // the consumer waits for its grants to take effect
	}
	if got := countByType(plan); !equalJSON(got, want) {
		t.Fatalf("resources = %v, want %v", got, want)
	}
	sub := one(t, plan, tSub, "orders-main")
	checks := []struct {
		what      string
		got, want any
	}{
		{"topic", input(sub, "topic"), "projects/acme-dev/topics/orders"},
		{"dead-letter policy", input(sub, "deadLetterPolicy.maxDeliveryAttempts"), float64(5)},
		{"ack deadline follows the request timeout", input(sub, "ackDeadlineSeconds"), float64(60)},
		{"environment defaults to the stack", input(sub, "labels.eventpipe_env"), "dev"},
		{"pipeline label", input(sub, "labels.eventpipe_pipeline"), "orders"},
		{"protected by default", sub.Protect, true},
		{"consumer deletion protection", input(one(t, plan, tService, "orders"), "deletionProtection"), true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %#v, want %#v", c.what, c.got, c.want)
		}
	}
}

// TestPipelineRejectsBadArgs: every problem at once, each on the path of
// the argument the user set (not a stack config key), before anything is
// declared; empty or nil arguments are errors, never a panic.
func TestPipelineRejectsBadArgs(t *testing.T) {
	bad := minimalArgs()
	bad.Consumer.Memory, bad.Consumer.CPU = "64Mi", "1500m"
	bad.Subscriptions["main"] = spec.Subscription{Delivery: "PUSH"}
	bad.Subscriptions["audit"] = spec.Subscription{Delivery: "pull", External: true}
	bad.Alerts = &spec.PipelineAlerts{Thresholds: &alerts.Config{Push: &alerts.PushThresholds{ServerErrorWarning: 2}}}
	cases := []struct {
		name, pipeline string
		args           *components.PipelineArgs
		want           []string
	}{
		{"nil", "orders", nil, []string{"pipeline orders: no arguments"}},
		{"empty", "orders", &components.PipelineArgs{}, []string{"project (not set)", "projectNumber (not set)", "consumer.image (not set)", "subscriptions (not set): allowed at least one subscription"}},
		{"bad name", "Orders_Pipeline", minimalArgs(), []string{`name = "Orders_Pipeline": allowed 2–25 lowercase letters`}},
		{"many at once", "orders", bad, []string{
			"(5 problems)",
			`consumer.cpu = "1500m": allowed 1, 2, 4, 6 or 8 CPUs`,
			`subscriptions.main.delivery = "PUSH": allowed push or pull`,
			"subscriptions.audit.subscribers (not set): allowed at least one member when external: true",
			"alerts.thresholds.push.serverErrorWarning = 2",
			"alerts.thresholds.push.serverErrorWarning = 2: allowed below push.serverErrorCritical",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err, regs := runErr(func(ctx *pulumi.Context) error {
				_, err := components.NewPipeline(ctx, tc.pipeline, tc.args)
				return err
			})
			for _, want := range tc.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v\nwant it to contain %q", err, want)
				}
			}
			if err != nil && strings.Contains(err.Error(), "eventpipe:") {
				t.Errorf("a library error names stack config keys: %v", err)
			}
			if len(regs) != 0 {
				t.Errorf("%d resources registered before validation failed", len(regs))
			}
		})
	}
}

// TestPipelineOnExistingTopic: a producer team owns the topic; the pipeline
// subscribes to it, declares no topic, grants the named producers, and its
// runbooks replay to the producer's topic.
func TestPipelineOnExistingTopic(t *testing.T) {
	args := minimalArgs()
	args.Topic = &spec.Topic{
		Existing:   pulumi.String(producerTopic),
		Publishers: []string{"serviceAccount:orders-api@producer-prod.iam.gserviceaccount.com"},
	}
	args.Subscriptions["audit"] = spec.Subscription{Delivery: "pull", External: true,
		Subscribers: []string{"serviceAccount:audit@audit-prod.iam.gserviceaccount.com"}}
	plan := pipelinePlan(t, "orders", args)
	if n := len(plan.StepsOfType(components.TypeTopic)); n != 0 {
		t.Errorf("%d Topic components for an existing topic", n)
	}
	if _, ok := custom(plan, tTopic)["orders"]; ok {
		t.Error("the pipeline declared the producer's topic")
	}
	for _, name := range []string{"orders-main", "orders-audit"} {
		if got := input(one(t, plan, tSub, name), "topic"); got != producerTopic {
			t.Errorf("%s topic = %v, want %s", name, got, producerTopic)
		}
	}
	grant := one(t, plan, tTopicIAM, "orders-publisher-serviceAccount:orders-api@producer-prod.iam.gserviceaccount.com")
	if input(grant, "topic") != producerTopic || input(grant, "role") != components.RolePublisher {
		t.Errorf("publisher grant = %v", grant.Inputs)
	}
	// The external subscription is its subscribers', not the consumer's.
	svc := one(t, plan, tService, "orders")
	if e := env(t, svc); e[settings.PullSubscriptions] != "" || input(svc, "template.containers.0.resources.cpuIdle") != true {
		t.Errorf("the consumer pulls the external subscription: %v", e)
	}
	if _, ok := custom(plan, tSubIAM)["orders-audit-consumer-subscriber"]; ok {
		t.Error("the consumer was granted the external subscription")
	}
	if _, ok := custom(plan, tSubIAM)["orders-audit-serviceAccount:audit@audit-prod.iam.gserviceaccount.com-subscriber"]; !ok {
		t.Errorf("external subscriber not granted; have %v", keys(custom(plan, tSubIAM)))
	}
	doc := input(one(t, plan, tAlertPolicy, "orders-orders-main-dlq-critical"), "documentation.content").(string)
	if !strings.Contains(doc, "--topic "+producerTopic) {
		t.Error("the runbook does not replay to the producer's topic")
	}
}

// TestPipelineWithOutputsOfOtherResources: project, topic, image and
// service account are often outputs of other resources in the user's
// program; they validate as stand-ins and every name derived from them is
// filled in with the real value at deploy time.
func TestPipelineWithOutputsOfOtherResources(t *testing.T) {
	var outputs []string
	plan := runMocked(t, func(ctx *pulumi.Context) error {
		topic, err := pubsub.NewTopic(ctx, "producer", &pubsub.TopicArgs{Project: pulumi.String("producer-prod"), Name: pulumi.String("orders")})
		if err != nil {
			return err
		}
		project := pulumi.String("acme-dev").ToStringOutput()
		args := minimalArgs()
		args.Project = project
		args.ProjectNumber = pulumi.String("123456789012").ToStringOutput()
		args.Topic = &spec.Topic{Existing: topic.ID().ToStringOutput()}
		args.Consumer.Image = pulumi.Sprintf("europe-docker.pkg.dev/%s/eventpipe/consumer:1.2.3", project)
		args.Consumer.ServiceAccount = pulumi.Sprintf("runner@%s.iam.gserviceaccount.com", project)
		args.Subscriptions["work"] = spec.Subscription{Delivery: "pull"}
		args.Consumer.MinInstances = intPtr(1)
		pl, err := components.NewPipeline(ctx, "orders", args)
		if err != nil {
			return err
		}
		pulumi.All(pl.TopicID, pl.TopicName, pl.ConsumerServiceAccount).ApplyT(func(v []any) error {
			for _, s := range v {
				outputs = append(outputs, s.(string))
			}
			return nil
		})
		return nil
	})
	if want := []string{producerTopic, "orders", "runner@acme-dev.iam.gserviceaccount.com"}; !equalJSON(outputs, want) {
		t.Errorf("pipeline outputs = %v, want %v", outputs, want)
	}
	b, _ := json.Marshal(plan)
	if strings.Contains(string(b), "eventpipe-deferred") {
		t.Fatalf("a stand-in value reached the plan:\n%s", grepLines(string(b), "eventpipe-deferred"))
	}
	svc := one(t, plan, tService, "orders")
	e := env(t, svc)
	checks := []struct {
		what      string
		got, want any
	}{
		{"project", input(svc, "project"), "acme-dev"},
		{"image", input(svc, "template.containers.0.image"), "europe-docker.pkg.dev/acme-dev/eventpipe/consumer:1.2.3"},
		{"version from the image", e[settings.Version], "1.2.3"},
		{"audience", e[settings.OIDCAudience], "acme-dev/orders/pubsub-push"},
		{"push accounts", e[settings.PushAccounts], "orders-main-push@acme-dev.iam.gserviceaccount.com"},
		{"pull subscriptions", e[settings.PullSubscriptions], "projects/acme-dev/subscriptions/orders-work"},
		{"store", e[settings.Store], "firestore://acme-dev/(default)"},
		{"service account", input(svc, "template.serviceAccount"), "runner@acme-dev.iam.gserviceaccount.com"},
		{"topic", input(one(t, plan, tSub, "orders-main"), "topic"), producerTopic},
		{"agent", input(one(t, plan, tSubIAM, "orders-main-agent-subscriber"), "member"), agentMember},
		{"ttl project", input(one(t, plan, tField, "orders-eventpipe_orders_dedupe"), "project"), "acme-dev"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %#v, want %#v", c.what, c.got, c.want)
		}
	}
}

// TestDeferredImageIsCheckedAtDeployTime: an image only known at deploy
// time is still refused when it has no tag or digest.
func TestDeferredImageIsCheckedAtDeployTime(t *testing.T) {
	err, _ := runErr(func(ctx *pulumi.Context) error {
		args := minimalArgs()
		args.Consumer.Image = pulumi.String("gcr.io/acme/consumer").ToStringOutput()
		_, err := components.NewPipeline(ctx, "orders", args)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), `consumer.image = gcr.io/acme/consumer: allowed REPO@sha256:<64 hex digits> or REPO:TAG; fix: add a tag or digest`) {
		t.Errorf("err = %v, want the untagged image refused", err)
	}
}

// TestComponentsKeepTheirFormerState: every component registers an alias
// to the token stacks were deployed with, so the engine moves their
// resources (children follow their parent's alias) instead of replacing
// topics and subscriptions.
func TestComponentsKeepTheirFormerState(t *testing.T) {
	st := loadArgs(t, baseStack)
	mocks := render.NewMocks(render.Project, "dev", nil)
	if err := pulumi.RunErr(func(ctx *pulumi.Context) error { return components.DeclareStack(ctx, st) },
		pulumi.WithMocks(render.Project, "dev", mocks)); err != nil {
		t.Fatal(err)
	}
	former := map[string]string{
		components.TypePipeline: "eventpipe:components:Pipeline", components.TypeTopic: "eventpipe:components:Topic",
		components.TypeSubscription: "eventpipe:components:Subscription", components.TypeConsumer: "eventpipe:components:Consumer",
		components.TypeFirestoreTTL: "eventpipe:components:FirestoreTTL", alerts.ComponentType: "eventpipe:alerts:Alerts",
	}
	seen := map[string]bool{}
	for _, r := range mocks.Resources() {
		want, ok := former[r.Type]
		if !ok {
			continue
		}
		seen[r.Type] = true
		if !equalJSON(r.Aliases, []string{want}) {
			t.Errorf("%s aliases %v, want [%s]", r.URN, r.Aliases, want)
		}
	}
	if len(seen) != len(former) {
		t.Errorf("components seen %v, want all of %v", seen, keys(former))
	}
}

// grepLines returns the lines of s containing sub, for failure messages.
func grepLines(s, sub string) string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if strings.Contains(part, sub) {
			out = append(out, part)
		}
	}
	return strings.Join(out, "\n")
}
