package components_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/render"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// stackHead opens a stack config document with the pipeline orders and its
// consumer image; more consumer settings and the subscriptions follow.
const stackHead = `config:
  eventpipe:project: acme-dev
  eventpipe:projectNumber: "123456789012"
  eventpipe:pipelines:
    orders:
      consumer:
        image: europe-docker.pkg.dev/acme/eventpipe/consumer:1.2.3
`

// baseStack is a valid stack with one pipeline: a push and a pull subscription.
const baseStack = stackHead + `        minInstances: 1
      subscriptions:
        main:
          delivery: push
        work:
          delivery: pull
          exactlyOnce: true
`

// loadArgs parses and validates a stack config document into component arguments.
func loadArgs(t *testing.T, doc string) *components.Stack {
	t.Helper()
	f, err := spec.ParseStackFile("Pulumi.dev.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	st, err := components.LoadStack("dev", f.Source)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// declareStack declares every pipeline of a stack config document.
func declareStack(t *testing.T, doc string) *render.Plan {
	t.Helper()
	st := loadArgs(t, doc)
	plan, err := render.RunProgram(context.Background(), "dev", spec.MapSource{}, st.Spec, func(ctx *pulumi.Context) error {
		return components.DeclareStack(ctx, st)
	})
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// runMocked runs program with mocks and returns the plan.
func runMocked(t *testing.T, program pulumi.RunFunc) *render.Plan {
	t.Helper()
	plan, err := render.RunProgram(context.Background(), "dev", spec.MapSource{}, nil, program)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// runErr runs program with mocks and returns its error and what it registered.
func runErr(program pulumi.RunFunc) (error, []render.Registered) {
	mocks := render.NewMocks(render.Project, "dev", nil)
	err := pulumi.RunErr(program, pulumi.WithMocks(render.Project, "dev", mocks))
	return err, mocks.Resources()
}

// custom returns the custom resources of plan with type typ, by logical name.
func custom(plan *render.Plan, typ string) map[string]render.State {
	out := map[string]render.State{}
	for _, s := range plan.StepsOfType(typ) {
		out[s.URN[strings.LastIndex(s.URN, "::")+2:]] = s.NewState
	}
	return out
}

// one returns the only resource of typ named name, failing the test otherwise.
func one(t *testing.T, plan *render.Plan, typ, name string) render.State {
	t.Helper()
	st, ok := custom(plan, typ)[name]
	if !ok {
		t.Fatalf("no %s named %s; have %v", typ, name, keys(custom(plan, typ)))
	}
	return st
}

// input returns the input at a dotted path ("pushConfig.oidcToken.audience",
// "template.containers.0.image") or nil.
func input(s render.State, path string) any {
	var cur any = s.Inputs
	for _, part := range strings.Split(path, ".") {
		switch v := cur.(type) {
		case map[string]any:
			cur = v[part]
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i >= len(v) {
				return nil
			}
			cur = v[i]
		default:
			return nil
		}
	}
	return cur
}

// countByType counts custom resources by type.
func countByType(plan *render.Plan) map[string]int {
	out := map[string]int{}
	for _, s := range plan.Steps {
		if s.NewState.Custom && !strings.HasPrefix(s.NewState.Type, "pulumi:providers:") {
			out[s.NewState.Type]++
		}
	}
	return out
}

func keys[V any](m map[string]V) []string { return spec.SortedKeys(m) }

// Resource type tokens used in assertions.
const (
	tTopic        = "gcp:pubsub/topic:Topic"
	tSub          = "gcp:pubsub/subscription:Subscription"
	tTopicIAM     = "gcp:pubsub/topicIAMMember:TopicIAMMember"
	tSubIAM       = "gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember"
	tAccount      = "gcp:serviceaccount/account:Account"
	tAccountIAM   = "gcp:serviceaccount/iAMMember:IAMMember"
	tProjectIAM   = "gcp:projects/iAMMember:IAMMember"
	tService      = "gcp:cloudrunv2/service:Service"
	tServiceIAM   = "gcp:cloudrunv2/serviceIamMember:ServiceIamMember"
	tField        = "gcp:firestore/field:Field"
	tSecret       = "gcp:secretmanager/secret:Secret"
	tSecretVer    = "gcp:secretmanager/secretVersion:SecretVersion"
	tSecretIAM    = "gcp:secretmanager/secretIamMember:SecretIamMember"
	agentMember   = "serviceAccount:service-123456789012@gcp-sa-pubsub.iam.gserviceaccount.com"
	pushEmail     = "orders-main-push@acme-dev.iam.gserviceaccount.com"
	consumerEmail = "orders-run@acme-dev.iam.gserviceaccount.com"
)

// equalJSON compares two values by their JSON form.
func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// waitsFor reports whether the resource s is created after the resource urn:
// it depends on it, directly or through what it depends on (a wait between
// grants and the service).
func waitsFor(plan *render.Plan, s render.State, urn string) bool {
	deps := map[string][]string{}
	for _, st := range plan.Steps {
		deps[st.URN] = st.NewState.Dependencies
	}
	seen := map[string]bool{}
	todo := append([]string(nil), s.Dependencies...)
	for len(todo) > 0 {
		d := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if d == urn {
			return true
		}
		if !seen[d] {
			seen[d] = true
			todo = append(todo, deps[d]...)
		}
	}
	return false
}
