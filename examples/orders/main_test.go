package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/consumer/limits"
	"github.com/eventpipe/eventpipe/consumer/settings"
	"github.com/eventpipe/eventpipe/examples/orders/orders"
	"github.com/eventpipe/eventpipe/render"
	"github.com/eventpipe/eventpipe/render/program"
	"github.com/eventpipe/eventpipe/spec"
)

// TestPlan is the test the README gives a team's own program, as a team that copies this
// folder gets it: it renders the dev stack offline, fails on the components' own checks,
// and writes the plan to $EVENTPIPE_PLAN for eventpipe check:
//
//	EVENTPIPE_PLAN=$PWD/plan.json go test -run TestPlan .
//	eventpipe check plan.json --env dev
func TestPlan(t *testing.T) { program.Test(t, "Pulumi.dev.yaml", orders.Program) }

// renderExample runs the example program offline with its dev stack's
// config, the way the stacks are rendered.
func renderExample(t *testing.T) *render.Plan {
	t.Helper()
	f, err := spec.ReadStackFile("Pulumi.dev.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := render.RunProjectProgram(context.Background(), "orders", "dev", f.Source, nil, orders.Program)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// inputs returns the inputs of the only resource of typ named name.
func inputs(t *testing.T, plan *render.Plan, typ, name string) map[string]any {
	t.Helper()
	for _, s := range plan.StepsOfType(typ) {
		if strings.HasSuffix(s.URN, "::"+name) {
			return s.NewState.Inputs
		}
	}
	t.Fatalf("no %s named %s", typ, name)
	return nil
}

func TestExampleRenders(t *testing.T) {
	plan := renderExample(t)
	doc, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	// Outputs passed in are filled in with their values; no stand-in and no
	// unknown value is left (provider references aside).
	if strings.Contains(string(doc), "eventpipe-deferred") ||
		strings.Count(string(doc), render.Unknown) != strings.Count(string(doc), "::"+render.Unknown) {
		t.Error("the plan holds a value passed in that was not filled in")
	}
	if n := len(plan.StepsOfType(components.TypePipeline)); n != 1 {
		t.Fatalf("pipelines = %d", n)
	}

	// The program's own topic goes into the pipeline as an output.
	const topic = "projects/acme-shop-dev/topics/orders"
	for _, sub := range []string{"orders-materializer", "orders-warehouse"} {
		if got := inputs(t, plan, "gcp:pubsub/subscription:Subscription", sub)["topic"]; got != topic {
			t.Errorf("%s reads %v, want the program's topic %s", sub, got, topic)
		}
	}
	if g := inputs(t, plan, "gcp:pubsub/topicIAMMember:TopicIAMMember", "order-events-publisher-serviceAccount:checkout@acme-shop-dev.iam.gserviceaccount.com"); g["role"] != components.RolePublisher {
		t.Errorf("checkout publisher grant = %v", g)
	}

	// So does the notification channel: every policy notifies it.
	channel := inputs(t, plan, "gcp:monitoring/notificationChannel:NotificationChannel", "checkout-oncall")["type"]
	if channel != "email" {
		t.Errorf("channel type = %v", channel)
	}
	policies := plan.StepsOfType("gcp:monitoring/alertPolicy:AlertPolicy")
	if len(policies) == 0 {
		t.Fatal("no alert policies")
	}
	for _, p := range policies {
		chans, _ := p.NewState.Inputs["notificationChannels"].([]any)
		if len(chans) != 1 || !strings.HasPrefix(chans[0].(string), "projects/acme-shop-dev/notificationChannels/") {
			t.Errorf("%s notifies %v, want the on-call channel", p.URN, chans)
		}
		if labels := p.NewState.Inputs["userLabels"].(map[string]any); labels["eventpipe_team"] != "checkout" {
			t.Errorf("%s team = %v", p.URN, labels["eventpipe_team"])
		}
	}

	// The store URL with its password stays a secret, in Secret Manager.
	if got := inputs(t, plan, "gcp:secretmanager/secretVersion:SecretVersion", "orders-store")["secretData"]; got != render.Secret {
		t.Errorf("store secret data = %v", got)
	}
	svc := inputs(t, plan, "gcp:cloudrunv2/service:Service", "orders")
	tmpl := svc["template"].(map[string]any)
	// Small messages: 1Gi holds the configured 80 at once.
	if got, want := tmpl["maxInstanceRequestConcurrency"], float64(limits.MaxConcurrency(1<<30, 1_000_000, 80)); got != want || want != 80 {
		t.Errorf("concurrency = %v, want %v", got, want)
	}
	for _, e := range tmpl["containers"].([]any)[0].(map[string]any)["envs"].([]any) {
		env := e.(map[string]any)
		switch env["name"] {
		case settings.Store:
			if _, plain := env["value"]; plain {
				t.Errorf("EVENTPIPE_STORE is a plain value: %v", env)
			}
		case settings.PullSubscriptions:
			if env["value"] != "" {
				t.Errorf("the consumer pulls the warehouse's subscription: %v", env["value"])
			}
		}
	}
	// The warehouse loader reads its subscription; the pipeline's consumer does not.
	if g := inputs(t, plan, "gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember", "orders-warehouse-serviceAccount:loader@acme-data-prod.iam.gserviceaccount.com-subscriber"); g["role"] != components.RoleSubscriber {
		t.Errorf("loader grant = %v", g)
	}
}

// TestExampleReachesItsStore: with its store URL known (as under `pulumi
// preview`, which decrypts it) the example passes the check that a store on
// a private address has VPC egress, and renders that egress; every
// resource waits for its API.
func TestExampleReachesItsStore(t *testing.T) {
	f, err := spec.ReadStackFile("Pulumi.dev.yaml")
	if err != nil {
		t.Fatal(err)
	}
	f.Source.Values["orders:storeUrl"] = "postgres://app:pw@10.0.0.5/orders"
	plan, err := render.RunProjectProgram(context.Background(), "orders", "dev", f.Source, nil, orders.Program)
	if err != nil {
		t.Fatal(err)
	}
	svc := inputs(t, plan, "gcp:cloudrunv2/service:Service", "orders")
	vpc, _ := json.Marshal(svc["template"].(map[string]any)["vpcAccess"])
	if want := `{"egress":"PRIVATE_RANGES_ONLY","networkInterfaces":[{"network":"shared-vpc","subnetwork":"run-europe-west1"}]}`; string(vpc) != want {
		t.Errorf("vpcAccess = %s, want %s", vpc, want)
	}
	apis := map[string]bool{}
	for _, s := range plan.StepsOfType("gcp:projects/service:Service") {
		apis[s.NewState.URN] = true
	}
	deps := map[string][]string{}
	for _, s := range plan.Steps {
		deps[s.URN] = s.NewState.Dependencies
	}
	// waitsForAPI: st is created after an API is enabled, directly or through
	// what it depends on (the wait for the enablements to propagate).
	waitsForAPI := func(st render.State) bool {
		seen, todo := map[string]bool{}, append([]string(nil), st.Dependencies...)
		for len(todo) > 0 {
			d := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			if apis[d] {
				return true
			}
			if !seen[d] {
				seen[d] = true
				todo = append(todo, deps[d]...)
			}
		}
		return false
	}
	for _, s := range plan.Steps {
		st := s.NewState
		if !st.Custom || st.Type == "gcp:projects/service:Service" || !strings.HasPrefix(st.Type, "gcp:") {
			continue
		}
		if !waitsForAPI(st) {
			t.Errorf("%s waits for no API", st.URN)
		}
	}
}
