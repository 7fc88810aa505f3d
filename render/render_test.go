package render_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/consumer/settings"
	"github.com/eventpipe/eventpipe/render"
	"github.com/eventpipe/eventpipe/spec"
)

// stacks are the environments shipped in ../stacks.
var stacks = []string{"dev", "staging", "prod"}

func renderStack(t *testing.T, opts render.Options) *render.Result {
	t.Helper()
	res, err := render.Render(context.Background(), opts)
	if err != nil {
		t.Fatalf("render %s: %v", opts.Stack, err)
	}
	return res
}

func TestEveryStackRendersDeterministically(t *testing.T) {
	for _, stack := range stacks {
		t.Run(stack, func(t *testing.T) {
			first := renderStack(t, render.Options{Stack: stack, StackDir: "../stacks"})
			second := renderStack(t, render.Options{Stack: stack, StackDir: "../stacks"})
			if !bytes.Equal(first.JSON, second.JSON) {
				t.Fatal("two renders of the same config differ")
			}
			checkReliable(t, first.Plan)
			checkPreviewShape(t, first.JSON)
		})
	}
}

// checkReliable asserts the promise of the components on a whole plan: every
// source subscription has a dead-letter policy, a retry policy, never
// expires, and its dead-letter topic has the service agent's publisher grant
// and a never-expiring subscription; the service agent can subscribe to it.
func checkReliable(t *testing.T, plan *render.Plan) {
	t.Helper()
	type state = map[string]any
	byName := func(typ, key string) map[string]state {
		out := map[string]state{}
		for _, s := range plan.StepsOfType(typ) {
			name, _ := s.NewState.Inputs[key].(string)
			out[name] = s.NewState.Inputs
		}
		return out
	}
	subs := byName("gcp:pubsub/subscription:Subscription", "name")
	topicGrants := plan.StepsOfType("gcp:pubsub/topicIAMMember:TopicIAMMember")
	subGrants := plan.StepsOfType("gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember")
	hasGrant := func(steps []render.Step, targetKey, target, role string) bool {
		for _, g := range steps {
			in := g.NewState.Inputs
			if in[targetKey] == target && in["role"] == role && strings.HasPrefix(in["member"].(string), "serviceAccount:service-") &&
				strings.HasSuffix(in["member"].(string), "@gcp-sa-pubsub.iam.gserviceaccount.com") {
				return true
			}
		}
		return false
	}
	sources := 0
	for name, in := range subs {
		labels, _ := in["labels"].(state)
		if labels["eventpipe_role"] != "source" {
			continue
		}
		sources++
		dlp, _ := in["deadLetterPolicy"].(state)
		retry, _ := in["retryPolicy"].(state)
		exp, _ := in["expirationPolicy"].(state)
		if dlp == nil || dlp["maxDeliveryAttempts"] == nil {
			t.Errorf("%s: no dead-letter policy", name)
			continue
		}
		if retry == nil || retry["minimumBackoff"] == nil || retry["maximumBackoff"] == nil {
			t.Errorf("%s: no retry policy", name)
		}
		if exp == nil || exp["ttl"] != "" {
			t.Errorf("%s: expiration policy %v, want ttl \"\"", name, exp)
		}
		dlqTopic := dlp["deadLetterTopic"].(string)
		dlqTopicName := dlqTopic[strings.LastIndex(dlqTopic, "/")+1:]
		if !hasGrant(topicGrants, "topic", dlqTopicName, components.RolePublisher) {
			t.Errorf("%s: service agent cannot publish to %s", name, dlqTopicName)
		}
		if !hasGrant(subGrants, "subscription", name, components.RoleSubscriber) {
			t.Errorf("%s: service agent cannot subscribe", name)
		}
		found := false
		for _, dlqSub := range subs {
			e, _ := dlqSub["expirationPolicy"].(state)
			if dlqSub["topic"] == dlqTopic && e != nil && e["ttl"] == "" {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no never-expiring subscription on %s", name, dlqTopic)
		}
	}
	if sources == 0 {
		t.Error("plan has no source subscriptions")
	}
}

// checkPreviewShape checks the document has the fields of `pulumi preview --json`.
func checkPreviewShape(t *testing.T, doc []byte) {
	t.Helper()
	var raw struct {
		Config        map[string]any     `json:"config"`
		Steps         []map[string]any   `json:"steps"`
		Diagnostics   []any              `json:"diagnostics"`
		ChangeSummary map[string]float64 `json:"changeSummary"`
	}
	if err := json.Unmarshal(doc, &raw); err != nil {
		t.Fatal(err)
	}
	if raw.Config == nil || raw.Diagnostics == nil || int(raw.ChangeSummary["create"]) != len(raw.Steps) {
		t.Errorf("top level: config=%v diagnostics=%v changeSummary=%v steps=%d", raw.Config != nil, raw.Diagnostics, raw.ChangeSummary, len(raw.Steps))
	}
	for _, s := range raw.Steps {
		ns, _ := s["newState"].(map[string]any)
		if s["op"] != "create" || s["urn"] == nil || ns == nil || ns["urn"] != s["urn"] {
			t.Fatalf("bad step %v", s)
		}
		for _, k := range []string{"type", "custom", "inputs", "dependencies", "propertyDependencies"} {
			if _, ok := ns[k]; !ok {
				t.Fatalf("step %s lacks newState.%s", s["urn"], k)
			}
		}
		if ns["type"] != "pulumi:pulumi:Stack" && !strings.HasPrefix(ns["type"].(string), "pulumi:providers:") && ns["parent"] == nil {
			t.Errorf("step %s has no parent", s["urn"])
		}
		if ns["custom"] == true && ns["type"] != "pulumi:providers:gcp" && s["provider"] == nil {
			t.Errorf("custom resource %s has no provider", s["urn"])
		}
	}
	if all, refs := strings.Count(string(doc), render.Unknown), strings.Count(string(doc), "::"+render.Unknown); all != refs {
		t.Errorf("%d unknown values outside provider references: mocks must resolve every input", all-refs)
	}
}

func TestStepsFollowTheirDependencies(t *testing.T) {
	plan := renderStack(t, render.Options{Stack: "prod", StackDir: "../stacks"}).Plan
	seen := map[string]bool{}
	for _, s := range plan.Steps {
		prereqs := append([]string{s.NewState.Parent}, s.NewState.Dependencies...)
		for _, urns := range s.NewState.PropertyDependencies {
			prereqs = append(prereqs, urns...)
		}
		for _, p := range prereqs {
			if p != "" && !seen[p] {
				t.Errorf("%s comes before its prerequisite %s", s.URN, p)
			}
		}
		seen[s.URN] = true
	}
}

func TestSecretsRenderAsSecret(t *testing.T) {
	res := renderStack(t, render.Options{Stack: "secret", ConfigFile: "testdata/Pulumi.secret.yaml"})
	if res.Plan.Config["eventpipe:store"] != render.Secret {
		t.Errorf("config shows %q", res.Plan.Config["eventpipe:store"])
	}
	if strings.Contains(string(res.JSON), "c2VjcmV0") {
		t.Error("ciphertext leaked into the plan")
	}
	// The URL may hold a password: the service reads it from Secret Manager.
	var store map[string]any
	for _, s := range res.Plan.StepsOfType("gcp:cloudrunv2/service:Service") {
		for _, e := range s.NewState.Inputs["template"].(map[string]any)["containers"].([]any)[0].(map[string]any)["envs"].([]any) {
			if m := e.(map[string]any); m["name"] == settings.Store {
				store = m
			}
		}
	}
	ref, _ := store["valueSource"].(map[string]any)["secretKeyRef"].(map[string]any)
	if _, hasValue := store["value"]; hasValue || ref["secret"] != "orders-consumer-store" || ref["version"] != "1" {
		t.Errorf("EVENTPIPE_STORE = %v, want a reference to the orders-consumer-store secret", store)
	}
	versions := res.Plan.StepsOfType("gcp:secretmanager/secretVersion:SecretVersion")
	if len(versions) != 1 || versions[0].NewState.Inputs["secretData"] != render.Secret {
		t.Errorf("secret versions = %v, want one holding the secret", versions)
	}
}

func TestBrokenConfigFailsWithoutPlan(t *testing.T) {
	res, err := render.Render(context.Background(), render.Options{Stack: "broken", ConfigFile: "testdata/Pulumi.broken.yaml"})
	if res != nil {
		t.Fatal("a plan was returned for an invalid config")
	}
	var errs spec.Errors
	if !errors.As(err, &errs) || len(errs) != 3 {
		t.Fatalf("err = %v, want 3 validation errors", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"testdata/Pulumi.broken.yaml:7: pipeline \"orders\": eventpipe:pipelines.orders.consumer.image",
		"testdata/Pulumi.broken.yaml:11: pipeline \"orders\": eventpipe:pipelines.orders.subscriptions.main.maxDeliveryAttempts = 1: allowed 5–100",
		"testdata/Pulumi.broken.yaml:12: pipeline \"orders\": eventpipe:pipelines.orders.subscriptions.main.exactlyOnce = true: allowed only on delivery: pull; fix:",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	if b, err := render.Stack(context.Background(), render.Options{Stack: "broken", ConfigFile: "testdata/Pulumi.broken.yaml"}); err == nil || b != nil {
		t.Error("Stack returned a plan for an invalid config")
	}
}

func TestSourcesPointAtTheDeclaringConfig(t *testing.T) {
	res := renderStack(t, render.Options{Stack: "broken-free", ConfigFile: "testdata/Pulumi.secret.yaml"})
	want := map[string]int{ // resource name suffix -> line in the file
		"gcp:pubsub/subscription:Subscription::orders-main":               12,
		"gcp:pubsub/topic:Topic::orders-main-dlq":                         12,
		"eventpipe:index:Consumer$gcp:cloudrunv2/service:Service::orders": 9,
		"gcp:serviceaccount/account:Account::orders-run":                  9,
		"eventpipe:index:Topic$gcp:pubsub/topic:Topic::orders":            8,
	}
	for suffix, line := range want {
		found := false
		for urn, loc := range res.Sources {
			if strings.HasSuffix(urn, suffix) {
				found = true
				if loc.Line != line || loc.File != "testdata/Pulumi.secret.yaml" {
					t.Errorf("%s at %v, want line %d", suffix, loc, line)
				}
			}
		}
		if !found {
			t.Errorf("no source for %s", suffix)
		}
	}
}

func TestUnknownStackListsKnownOnes(t *testing.T) {
	_, err := render.Render(context.Background(), render.Options{Stack: "qa", StackDir: "../stacks"})
	if err == nil || !strings.Contains(err.Error(), "known stacks: dev, prod, staging") {
		t.Errorf("err = %v", err)
	}
	if _, err := render.Render(context.Background(), render.Options{}); err == nil {
		t.Error("no stack accepted")
	}
}
