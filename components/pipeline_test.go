package components_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/alerts"
	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/consumer/settings"
	"github.com/eventpipe/eventpipe/render"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func TestPipeline(t *testing.T) {
	plan := declareStack(t, baseStack)
	want := map[string]int{
		tTopic: 3, tSub: 4, tTopicIAM: 2, tSubIAM: 3, tAccount: 2, tAccountIAM: 1, tServiceIAM: 1,
		tProjectIAM: 1, tService: 1, tField: 4,
		// alerts: 4 log-based metrics; 6 pipeline-wide policies, 12 for the
		// push subscription with DLQ, 6 for the pull one; 1 SLO on its service.
		tMetric: 4, tAlertPolicy: 24, tSLOService: 1, tSLO: 1,
		// APIs: Service Usage, Pub/Sub, Cloud Run, IAM, Resource Manager, Firestore, Logging,
		// Monitoring; a wait for them to propagate and one for the consumer's grants.
		tAPI: 8, tIdentity: 1, tSleep: 2,
	}
	if got := countByType(plan); !equalJSON(got, want) {
		t.Fatalf("resources = %v, want %v", got, want)
	}
	for _, typ := range []string{components.TypePipeline, components.TypeTopic, components.TypeConsumer, components.TypeFirestoreTTL} {
		if n := len(plan.StepsOfType(typ)); n != 1 {
			t.Errorf("%s components = %d, want 1", typ, n)
		}
	}
	if n := len(plan.StepsOfType(components.TypeSubscription)); n != 2 {
		t.Errorf("subscription components = %d, want 2", n)
	}
	sub := one(t, plan, tSub, "orders-main")
	if got := input(sub, "pushConfig.pushEndpoint"); got != "https://orders-consumer-123456789012.europe-west1.run.app/pubsub/push" {
		t.Errorf("push endpoint = %v, want the consumer URI + /pubsub/push", got)
	}
	if deps := strings.Join(sub.PropertyDependencies["pushConfig"], " "); !strings.Contains(deps, "cloudrunv2/service:Service::orders") {
		t.Errorf("push endpoint not linked to the consumer service: %v", deps)
	}
	if input(sub, "topic") != "projects/acme-dev/topics/orders" {
		t.Errorf("subscription topic = %v", input(sub, "topic"))
	}
	invoker := one(t, plan, tServiceIAM, "orders-main-push-invoker")
	if input(invoker, "name") != "orders-consumer" || input(invoker, "location") != spec.DefaultRegion {
		t.Errorf("invoker target = %v", invoker.Inputs)
	}
}

// Alert resource types (issue 6).
const (
	tMetric      = "gcp:logging/metric:Metric"
	tAlertPolicy = "gcp:monitoring/alertPolicy:AlertPolicy"
	tSLOService  = "gcp:monitoring/customService:CustomService"
	tSLO         = "gcp:monitoring/slo:Slo"
	tAPI         = "gcp:projects/service:Service"
	tSleep       = components.SleepType
	tIdentity    = "gcp:projects/serviceIdentity:ServiceIdentity"
)

// TestPipelineAlerts: every pipeline gets its alerts, watching its own
// consumer and subscriptions; opting out is explicit and removes them all.
func TestPipelineAlerts(t *testing.T) {
	plan := declareStack(t, baseStack)
	dlq := one(t, plan, tAlertPolicy, "orders-orders-main-dlq-critical")
	if got := input(dlq, "severity"); got != "CRITICAL" {
		t.Errorf("dlq-critical severity = %v", got)
	}
	conds, _ := input(dlq, "conditions").([]any)
	if len(conds) != 2 || !strings.Contains(fmt.Sprint(conds[0]), `subscription_id="orders-main.dlq-sub"`) ||
		!strings.Contains(fmt.Sprint(conds[1]), `subscription_id="orders-main"`) {
		t.Errorf("dlq-critical does not watch the pipeline's DLQ and source: %v", conds)
	}
	if got := input(dlq, "userLabels.eventpipe_team"); got != spec.DefaultTeam {
		t.Errorf("team label = %v, want the default %s", got, spec.DefaultTeam)
	}
	metric := one(t, plan, tMetric, "orders-outcomes")
	if f, _ := input(metric, "filter").(string); !strings.Contains(f, `resource.labels.service_name="orders-consumer"`) {
		t.Errorf("metric filter does not select the consumer: %v", f)
	}
	if n := len(plan.StepsOfType(alerts.ComponentType)); n != 1 {
		t.Errorf("alerts components = %d, want 1", n)
	}

	doc := strings.Replace(baseStack, "    orders:\n", "    orders:\n      alerts: {optOut: true, reason: short-lived load test}\n", 1)
	optedOut := countByType(declareStack(t, doc))
	for _, typ := range []string{tMetric, tAlertPolicy, tSLOService, tSLO} {
		if optedOut[typ] != 0 {
			t.Errorf("opted-out pipeline still has %d %s", optedOut[typ], typ)
		}
	}
}

func TestPipelineWithoutFirestoreHasNoTTL(t *testing.T) {
	doc := strings.Replace(baseStack, "        minInstances: 1\n", "        minInstances: 1\n        store: postgres://db.internal/eventpipe\n", 1)
	plan := declareStack(t, doc)
	if n := countByType(plan)[tField]; n != 0 {
		t.Errorf("TTL fields = %d for a PostgreSQL store, want 0", n)
	}
}

// TestPipelinesOwnTheirTTLPolicies: two pipelines on one Firestore database
// each declare the TTL policies of their own collections, the ones their
// consumer is told to use; a stack in which two pipelines would declare
// the same policy is refused before anything is declared.
func TestPipelinesOwnTheirTTLPolicies(t *testing.T) {
	doc := baseStack + `    billing-events:
      consumer:
        image: europe-docker.pkg.dev/acme/eventpipe/consumer:1.2.3
      subscriptions:
        main:
          delivery: push
`
	plan := declareStack(t, doc)
	collections := map[string]string{}
	for name, f := range custom(plan, tField) {
		collections[name] = fmt.Sprint(input(f, "collection"))
	}
	want := map[string]string{}
	for pipeline, prefix := range map[string]string{"orders": "eventpipe_orders_", "billing-events": "eventpipe_billing_events_"} {
		if got := env(t, one(t, plan, tService, pipeline))[settings.CollectionPrefix]; got != prefix {
			t.Errorf("%s: %s = %q, want %q", pipeline, settings.CollectionPrefix, got, prefix)
		}
		for _, c := range components.TTLCollections(prefix) {
			want[pipeline+"-"+c] = c
		}
	}
	if !equalJSON(collections, want) {
		t.Errorf("TTL fields = %v\nwant %v", collections, want)
	}

	clash := strings.Replace(doc, "    billing-events:\n      consumer:\n", "    billing-events:\n      consumer:\n        collectionPrefix: eventpipe_orders_\n", 1)
	if err := loadErr(clash); err == nil || !strings.Contains(err.Error(), "orders.consumer.collectionPrefix = \"eventpipe_orders_\": allowed a collection prefix no other pipeline uses in the same store (pipeline billing-events uses it in firestore://acme-dev/(default))") {
		t.Errorf("err = %v, want the shared TTL policies refused", err)
	}
}

// TestAddingPipelineRenamesNothing: pipelines are a map keyed by name, so a
// new one adds resources and leaves every existing resource as it was.
func TestAddingPipelineRenamesNothing(t *testing.T) {
	before := declareStack(t, baseStack)
	doc := baseStack + `    alpha:
      consumer:
        image: europe-docker.pkg.dev/acme/eventpipe/consumer:1.2.3
      subscriptions:
        main:
          delivery: push
`
	after := declareStack(t, doc)
	if len(after.Steps) <= len(before.Steps) {
		t.Fatalf("steps %d -> %d: the new pipeline added nothing", len(before.Steps), len(after.Steps))
	}
	for _, s := range before.Steps {
		got, ok := after.Step(s.URN)
		if !ok {
			t.Errorf("%s disappeared", s.URN)
			continue
		}
		if !equalJSON(got.NewState, s.NewState) {
			t.Errorf("%s changed", s.URN)
		}
	}
}

// TestProgramFailsBeforeDeclaringAnything: an invalid config stops the
// program with every error, and no resource is registered.
func TestProgramFailsBeforeDeclaringAnything(t *testing.T) {
	src := spec.MapSource{Values: map[string]string{
		"eventpipe:project":       "acme-dev",
		"eventpipe:projectNumber": "123456789012",
		"eventpipe:typo":          "x",
		"eventpipe:pipelines":     `{"orders":{"consumer":{"image":"r/x:1"},"subscriptions":{"main":{"delivery":"push","maxDeliveryAttempts":1}}}}`,
	}}
	mocks := render.NewMocks(render.Project, "dev", nil)
	err := pulumi.RunErr(components.Program(components.ProgramOptions{ConfigKeys: src.Keys()}),
		pulumi.WithMocks(render.Project, "dev", mocks),
		func(info *pulumi.RunInfo) { info.Config = src.Values })
	errs, ok := asErrors(err)
	if !ok || len(errs) != 2 {
		t.Fatalf("err = %v, want spec.Errors with 2 problems", err)
	}
	if n := len(mocks.Resources()); n != 0 {
		t.Errorf("%d resources registered before validation failed", n)
	}
}

func TestProgramDeclaresEveryPipeline(t *testing.T) {
	f, err := spec.ParseStackFile("Pulumi.dev.yaml", []byte(baseStack))
	if err != nil {
		t.Fatal(err)
	}
	var seen *spec.Stack
	plan, err := render.RunProgram(context.Background(), "dev", f.Source, nil,
		components.Program(components.ProgramOptions{ConfigKeys: f.Source.Keys(), OnStack: func(s *spec.Stack) { seen = s }}))
	if err != nil {
		t.Fatal(err)
	}
	if seen == nil || seen.Pipelines["orders"] == nil {
		t.Fatal("OnStack not called with the validated stack")
	}
	if n := len(plan.StepsOfType(components.TypePipeline)); n != 1 {
		t.Errorf("pipelines = %d", n)
	}
}

func TestConfigKeysFromEnv(t *testing.T) {
	keys, err := components.ConfigKeysFromEnv(`{"eventpipe:project":"a","gcp:project":"b"}`)
	if err != nil || !equalJSON(keys, []string{"eventpipe:project", "gcp:project"}) {
		t.Errorf("keys = %v, %v", keys, err)
	}
	if keys, err := components.ConfigKeysFromEnv(""); err != nil || keys != nil {
		t.Errorf("empty: %v, %v", keys, err)
	}
	if _, err := components.ConfigKeysFromEnv("{"); err == nil {
		t.Error("malformed PULUMI_CONFIG accepted")
	}
}

func asErrors(err error) (spec.Errors, bool) {
	var errs spec.Errors
	ok := errors.As(err, &errs)
	return errs, ok
}
