package provider_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	p "github.com/pulumi/pulumi-go-provider"
	presource "github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/render"
	"github.com/eventpipe/eventpipe/spec"
)

// The stack and project pulumi-go-provider's fake resource monitor names
// every URN with; the Go side runs under the same names so URNs compare.
const (
	mockStack   = "stack"
	mockProject = "project"
)

const image = "europe-docker.pkg.dev/acme/eventpipe/consumer:1.2.3"

// constructCase is one component built twice: from schema inputs through the
// provider (what a TypeScript or Python program sends) and from Go args.
type constructCase struct {
	name    string
	typ     string
	inputs  map[string]any
	program func(ctx *pulumi.Context) error
	// outputs are output values the constructed component must return.
	outputs map[string]any
}

func pipelineProgram(name string, args *components.PipelineArgs) func(*pulumi.Context) error {
	return func(ctx *pulumi.Context) error { _, err := components.NewPipeline(ctx, name, args); return err }
}

func intPtr(i int) *int    { return &i }
func boolPtr(b bool) *bool { return &b }

// goodCases cover every component and the shapes users configure most: the
// minimal pipeline, one with push and pull subscriptions, an existing
// topic, a PostgreSQL store with its secret and alerts off, and each part
// on its own.
func goodCases() []constructCase {
	return []constructCase{
		{
			name: "minimal pipeline", typ: components.TypePipeline,
			inputs: map[string]any{
				"project": "acme-dev", "projectNumber": "123456789012",
				"consumer":      map[string]any{"image": image},
				"subscriptions": map[string]any{"main": map[string]any{"delivery": "push"}},
			},
			program: pipelineProgram("orders", &components.PipelineArgs{
				Project: pulumi.String("acme-dev"), ProjectNumber: pulumi.String("123456789012"),
				Consumer:      spec.Consumer{Image: pulumi.String(image)},
				Subscriptions: map[string]spec.Subscription{"main": {Delivery: "push"}},
			}),
			outputs: map[string]any{
				"topicId": "projects/acme-dev/topics/orders", "topicName": "orders",
				"subscriptionNames":       map[string]any{"main": "orders-main"},
				"deadLetterSubscriptions": map[string]any{"main": "orders-main.dlq-sub"},
			},
		},
		{
			name: "pipeline with push, pull and external subscriptions", typ: components.TypePipeline,
			inputs: map[string]any{
				"project": "acme-prod", "projectNumber": "210987654321", "region": "us-central1",
				"environment": "prod", "labels": map[string]any{"team": "payments"}, "protect": false,
				"topic": map[string]any{"messageRetention": "3d", "publishers": []any{"serviceAccount:api@acme-prod.iam.gserviceaccount.com"}},
				"consumer": map[string]any{
					"image": image, "memory": "1Gi", "concurrency": 40, "maxInstances": 20, "minInstances": 1,
					"requestTimeout": "120s", "maxMessageBytes": 1000000,
				},
				"subscriptions": map[string]any{
					"main": map[string]any{"delivery": "push", "maxDeliveryAttempts": 10, "minBackoff": "5s", "maxBackoff": "300s"},
					"work": map[string]any{"delivery": "pull", "exactlyOnce": true, "ordering": true},
					"audit": map[string]any{
						"delivery": "pull", "external": true,
						"subscribers": []any{"group:audit@acme.example"},
						"deadLetter":  map[string]any{"retention": "7d"},
					},
				},
				"alerts": map[string]any{"team": "payments", "criticalChannels": []any{"projects/acme-prod/notificationChannels/42"}},
			},
			program: pipelineProgram("payments", &components.PipelineArgs{
				Project: pulumi.String("acme-prod"), ProjectNumber: pulumi.String("210987654321"), Region: "us-central1",
				Environment: "prod", Labels: map[string]string{"team": "payments"}, Protect: boolPtr(false),
				Topic: &spec.Topic{MessageRetention: "3d", Publishers: []string{"serviceAccount:api@acme-prod.iam.gserviceaccount.com"}},
				Consumer: spec.Consumer{
					Image: pulumi.String(image), Memory: "1Gi", Concurrency: intPtr(40), MaxInstances: intPtr(20), MinInstances: intPtr(1),
					RequestTimeout: "120s", MaxMessageBytes: intPtr(1000000),
				},
				Subscriptions: map[string]spec.Subscription{
					"main": {Delivery: "push", MaxDeliveryAttempts: intPtr(10), MinBackoff: "5s", MaxBackoff: "300s"},
					"work": {Delivery: "pull", ExactlyOnce: true, Ordering: true},
					"audit": {Delivery: "pull", External: true, Subscribers: []string{"group:audit@acme.example"},
						DeadLetter: &spec.DeadLetter{Retention: "7d"}},
				},
				Alerts: &spec.PipelineAlerts{Team: "payments", CriticalChannels: pulumi.StringArray{pulumi.String("projects/acme-prod/notificationChannels/42")}},
			}),
			outputs: map[string]any{"topicId": "projects/acme-prod/topics/payments"},
		},
		{
			name: "pipeline on an existing topic with a PostgreSQL store and alerts off", typ: components.TypePipeline,
			inputs: map[string]any{
				"project": "acme-dev", "projectNumber": "123456789012",
				"topic": map[string]any{"existing": "projects/shared-prod/topics/orders", "publishers": []any{"serviceAccount:api@acme-dev.iam.gserviceaccount.com"}},
				"consumer": map[string]any{
					"image":       image,
					"storeSecret": presource.MakeSecret(presource.NewProperty("postgres://app:s3cret@db.internal/events")),
				},
				"subscriptions": map[string]any{"main": map[string]any{"delivery": "push", "deadLetter": map[string]any{"optOut": true, "reason": "replayed from the warehouse"}}},
				"alerts":        map[string]any{"optOut": true, "reason": "a sandbox"},
			},
			program: pipelineProgram("mirror", &components.PipelineArgs{
				Project: pulumi.String("acme-dev"), ProjectNumber: pulumi.String("123456789012"),
				Topic: &spec.Topic{Existing: pulumi.String("projects/shared-prod/topics/orders"), Publishers: []string{"serviceAccount:api@acme-dev.iam.gserviceaccount.com"}},
				Consumer: spec.Consumer{
					Image:       pulumi.String(image),
					StoreSecret: pulumi.ToSecret(pulumi.String("postgres://app:s3cret@db.internal/events")).(pulumi.StringOutput),
				},
				Subscriptions: map[string]spec.Subscription{"main": {Delivery: "push", DeadLetter: &spec.DeadLetter{OptOut: true, Reason: "replayed from the warehouse"}}},
				Alerts:        &spec.PipelineAlerts{OptOut: true, Reason: "a sandbox"},
			}),
			outputs: map[string]any{"topicId": "projects/shared-prod/topics/orders", "topicName": "orders"},
		},
		{
			name: "topic", typ: components.TypeTopic,
			inputs: map[string]any{
				"project": "acme-dev", "environment": "dev",
				"topic": map[string]any{"name": "invoices", "schema": "projects/acme-dev/schemas/invoice", "kmsKeyName": "projects/acme-dev/locations/europe-west1/keyRings/r/cryptoKeys/k"},
			},
			program: func(ctx *pulumi.Context) error {
				_, err := components.NewTopic(ctx, "invoices", &components.TopicArgs{
					Project: pulumi.String("acme-dev"), Environment: "dev",
					Topic: spec.Topic{Name: "invoices", Schema: "projects/acme-dev/schemas/invoice",
						KMSKeyName: pulumi.String("projects/acme-dev/locations/europe-west1/keyRings/r/cryptoKeys/k")},
				})
				return err
			},
			outputs: map[string]any{"topicId": "projects/acme-dev/topics/invoices", "name": "invoices"},
		},
		{
			name: "push subscription on another team's topic", typ: components.TypeSubscription,
			inputs: map[string]any{
				"project": "acme-dev", "projectNumber": "123456789012", "topic": "projects/shared/topics/orders",
				"subscription": map[string]any{"delivery": "push", "ackDeadline": "30s"},
				"push": map[string]any{
					"endpoint": "https://billing-123456789012.europe-west1.run.app/pubsub/push", "audience": "acme-dev/billing/pubsub-push",
					"service": "billing",
				},
			},
			program: func(ctx *pulumi.Context) error {
				_, err := components.NewSubscription(ctx, "billing-orders", &components.SubscriptionArgs{
					Project: pulumi.String("acme-dev"), ProjectNumber: pulumi.String("123456789012"), Topic: pulumi.String("projects/shared/topics/orders"),
					Subscription: spec.Subscription{Delivery: "push", AckDeadline: "30s"},
					Push: &components.PushTarget{Endpoint: pulumi.String("https://billing-123456789012.europe-west1.run.app/pubsub/push"),
						Audience: "acme-dev/billing/pubsub-push", Service: pulumi.String("billing")},
				})
				return err
			},
			outputs: map[string]any{"subscriptionId": "projects/acme-dev/subscriptions/billing-orders", "pushServiceAccount": "billing-orders-sub-push@acme-dev.iam.gserviceaccount.com"},
		},
		{
			name: "pull subscription", typ: components.TypeSubscription,
			inputs: map[string]any{
				"project": "acme-dev", "projectNumber": "123456789012", "topic": "projects/acme-dev/topics/orders",
				"subscription": map[string]any{"delivery": "pull", "name": "orders-export", "filter": `attributes.kind = "export"`, "subscribers": []any{"serviceAccount:export@acme-dev.iam.gserviceaccount.com"}},
			},
			program: func(ctx *pulumi.Context) error {
				_, err := components.NewSubscription(ctx, "export", &components.SubscriptionArgs{
					Project: pulumi.String("acme-dev"), ProjectNumber: pulumi.String("123456789012"), Topic: pulumi.String("projects/acme-dev/topics/orders"),
					Subscription: spec.Subscription{Delivery: "pull", Name: "orders-export", Filter: `attributes.kind = "export"`,
						Subscribers: []string{"serviceAccount:export@acme-dev.iam.gserviceaccount.com"}},
				})
				return err
			},
			outputs: map[string]any{"name": "orders-export", "deadLetterTopic": "orders-export.dlq"},
		},
		{
			name: "consumer", typ: components.TypeConsumer,
			inputs: map[string]any{
				"project": "acme-dev", "consumer": map[string]any{"image": image, "cpu": "2", "memory": "2Gi"},
				"pushAccounts": []any{"orders-main-push@acme-dev.iam.gserviceaccount.com"},
			},
			program: func(ctx *pulumi.Context) error {
				_, err := components.NewConsumer(ctx, "orders", &components.ConsumerArgs{
					Project:      pulumi.String("acme-dev"),
					Consumer:     spec.Consumer{Image: pulumi.String(image), CPU: "2", Memory: "2Gi"},
					PushAccounts: pulumi.StringArray{pulumi.String("orders-main-push@acme-dev.iam.gserviceaccount.com")},
				})
				return err
			},
			outputs: map[string]any{"serviceName": "orders-consumer"},
		},
		{
			name: "firestore ttl", typ: components.TypeFirestoreTTL,
			inputs: map[string]any{"project": "acme-dev", "database": "(default)", "collections": []any{"eventpipe_orders_dedupe"}},
			program: func(ctx *pulumi.Context) error {
				_, err := components.NewFirestoreTTL(ctx, "orders", &components.FirestoreTTLArgs{
					Project: pulumi.String("acme-dev"), Database: "(default)", Collections: []string{"eventpipe_orders_dedupe"},
				})
				return err
			},
		},
		{
			// What a Go stack declares before its pipelines: the APIs in order, the
			// wait for them, the Firestore database.
			name: "project", typ: components.TypeProject,
			inputs: map[string]any{
				"project": "acme-dev", "apis": []any{"pubsub.googleapis.com", "run.googleapis.com", "firestore.googleapis.com"},
				"firestoreDatabases": []any{"(default)"}, "setup": map[string]any{"firestoreLocation": "eur3", "apiPropagation": "90s"},
			},
			program: func(ctx *pulumi.Context) error {
				_, err := components.NewProject(ctx, "acme", &components.ProjectArgs{
					Project: pulumi.String("acme-dev"), Apis: []string{"pubsub.googleapis.com", "run.googleapis.com", "firestore.googleapis.com"},
					FirestoreDatabases: []string{"(default)"}, Setup: &spec.Setup{FirestoreLocation: "eur3", APIPropagation: "90s"},
				})
				return err
			},
		},
	}
}

// componentName is the name a case's program gives its component.
func (c constructCase) componentName(t *testing.T, regs []render.Registered) string {
	t.Helper()
	for _, r := range regs {
		if r.Type == c.typ && r.Parent == string(stackURN()) {
			return r.Name
		}
	}
	t.Fatalf("the Go program declared no %s", c.typ)
	return ""
}

func stackURN() presource.URN {
	return presource.NewURN(mockStack, mockProject, "", presource.RootStackType, mockProject+"-"+mockStack)
}

// runGo runs program with Pulumi's Go mocks: what a Go program declares.
func runGo(program pulumi.RunFunc) ([]render.Registered, error) {
	return runGoPreview(program, false)
}

// runGoPreview runs program with Pulumi's Go mocks, as a preview (dry run)
// when preview is set.
func runGoPreview(program pulumi.RunFunc, preview bool) ([]render.Registered, error) {
	mocks := render.NewMocks(mockProject, mockStack, nil)
	err := pulumi.RunErr(program, pulumi.WithMocks(mockProject, mockStack, mocks),
		func(info *pulumi.RunInfo) { info.DryRun = preview })
	return mocks.Resources(), err
}

// construct constructs component typ named name from inputs through the
// provider's gRPC Construct, as the engine does for a TypeScript or Python
// program.
func construct(t *testing.T, typ, name string, inputs map[string]any) (p.ConstructResponse, []render.Registered, error) {
	t.Helper()
	return constructPreview(t, typ, name, presource.NewPropertyMapFromMap(inputs), false)
}

// constructPreview is construct, as a preview (dry run) when preview is set.
func constructPreview(t *testing.T, typ, name string, inputs presource.PropertyMap, preview bool) (p.ConstructResponse, []render.Registered, error) {
	t.Helper()
	mocks := render.NewMocks(mockProject, mockStack, nil)
	s := newServer(t, mocks)
	resp, err := s.Construct(p.ConstructRequest{
		Urn:    presource.NewURN(mockStack, mockProject, "", tokens.Type(typ), name),
		Parent: stackURN(),
		Inputs: presource.FromResourcePropertyMap(inputs),
		DryRun: preview,
	})
	return resp, mocks.Resources(), err
}

// TestConstructWithInputsUnknownAtPreview: a project or image that is
// another resource's output, unknown during pulumi preview, is passed on
// as unknown: the provider declares what the Go component declares in the
// same preview, instead of failing.
func TestConstructWithInputsUnknownAtPreview(t *testing.T) {
	unknown := func() pulumi.StringOutput {
		return pulumi.UnsafeUnknownOutput(nil).ApplyT(func(v any) string { return v.(string) }).(pulumi.StringOutput)
	}
	want, err := runGoPreview(pipelineProgram("orders", &components.PipelineArgs{
		Project: unknown(), ProjectNumber: pulumi.String("123456789012"),
		Consumer:      spec.Consumer{Image: unknown(), MinInstances: intPtr(1)},
		Subscriptions: map[string]spec.Subscription{"main": {Delivery: "push"}, "work": {Delivery: "pull"}},
	}), true)
	if err != nil {
		t.Fatalf("Go program: %v", err)
	}
	inputs := presource.NewPropertyMapFromMap(map[string]any{
		"projectNumber": "123456789012",
		"consumer":      map[string]any{"image": presource.MakeComputed(presource.NewProperty("")), "minInstances": 1},
		"subscriptions": map[string]any{"main": map[string]any{"delivery": "push"}, "work": map[string]any{"delivery": "pull"}},
	})
	inputs["project"] = presource.MakeComputed(presource.NewProperty(""))
	_, got, err := constructPreview(t, components.TypePipeline, "orders", inputs, true)
	if err != nil {
		t.Fatalf("Construct: %v", err)
	}
	if diff := cmp.Diff(normalized(t, want), normalized(t, got)); diff != "" {
		t.Errorf("registrations through the provider differ from Go's (-go +provider):\n%s", diff)
	}
}

// TestConstructDeclaresWhatGoDeclares: every component constructed through
// the provider registers the same child resources, with the same inputs,
// parents, protection, aliases and dependencies, as the Go component given
// the same arguments, and returns its outputs.
func TestConstructDeclaresWhatGoDeclares(t *testing.T) {
	for _, c := range goodCases() {
		t.Run(c.name, func(t *testing.T) {
			want, err := runGo(c.program)
			if err != nil {
				t.Fatalf("Go program: %v", err)
			}
			resp, got, err := construct(t, c.typ, c.componentName(t, want), c.inputs)
			if err != nil {
				t.Fatalf("Construct: %v", err)
			}
			if len(got) < 2 {
				t.Fatalf("Construct registered %d resources, want the component and its children", len(got))
			}
			if diff := cmp.Diff(normalized(t, want), normalized(t, got)); diff != "" {
				t.Errorf("registrations through the provider differ from Go's (-go +provider):\n%s", diff)
			}
			state := presource.ToResourcePropertyMap(resp.State).Mappable()
			for k, v := range c.outputs {
				if !cmp.Equal(state[k], v) {
					t.Errorf("output %s = %#v, want %#v", k, state[k], v)
				}
			}
		})
	}
}

// normalized is regs in a form cmp can diff: inputs as plain values
// (secrets marked; values unknown at preview left out, as Pulumi's Go mocks
// leave them out of what they record), everything else as registered.
func normalized(t *testing.T, regs []render.Registered) []map[string]any {
	t.Helper()
	out := make([]map[string]any, 0, len(regs))
	for _, r := range regs {
		b, err := json.Marshal(struct {
			render.Registered
			Inputs map[string]any
		}{r, known(r.Inputs).Mappable()})
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// known is m without its unknown (computed) values, at any depth; in
// arrays they become nulls, as the Go mocks record them.
func known(m presource.PropertyMap) presource.PropertyMap {
	out := presource.PropertyMap{}
	for k, v := range m {
		if !v.IsComputed() {
			out[k] = knownValue(v)
		}
	}
	return out
}

func knownValue(v presource.PropertyValue) presource.PropertyValue {
	switch {
	case v.IsComputed():
		return presource.NewNullProperty()
	case v.IsObject():
		return presource.NewProperty(known(v.ObjectValue()))
	case v.IsArray():
		arr := make([]presource.PropertyValue, len(v.ArrayValue()))
		for i, e := range v.ArrayValue() {
			arr[i] = knownValue(e)
		}
		return presource.NewProperty(arr)
	}
	return v
}

// TestConstructRejectsWhatGoRejects: arguments the Go component rejects are
// rejected through the provider with the same message (naming the field and
// the fix), and nothing is declared either way.
func TestConstructRejectsWhatGoRejects(t *testing.T) {
	base := func() map[string]any {
		return map[string]any{
			"project": "acme-dev", "projectNumber": "123456789012",
			"consumer":      map[string]any{"image": image},
			"subscriptions": map[string]any{"main": map[string]any{"delivery": "push"}},
		}
	}
	baseArgs := func() *components.PipelineArgs {
		return &components.PipelineArgs{
			Project: pulumi.String("acme-dev"), ProjectNumber: pulumi.String("123456789012"),
			Consumer:      spec.Consumer{Image: pulumi.String(image)},
			Subscriptions: map[string]spec.Subscription{"main": {Delivery: "push"}},
		}
	}
	cases := []struct {
		name   string
		typ    string
		inputs func() map[string]any
		args   func() pulumi.RunFunc
		want   []string
	}{
		{
			name: "delivery and sizes", typ: components.TypePipeline,
			inputs: func() map[string]any {
				in := base()
				in["consumer"] = map[string]any{"image": image, "cpu": "1500m"}
				in["subscriptions"] = map[string]any{"main": map[string]any{"delivery": "PUSH"}}
				return in
			},
			args: func() pulumi.RunFunc {
				a := baseArgs()
				a.Consumer.CPU = "1500m"
				a.Subscriptions["main"] = spec.Subscription{Delivery: "PUSH"}
				return pipelineProgram("orders", a)
			},
			want: []string{"consumer.cpu", "subscriptions.main.delivery"},
		},
		{
			name: "dead-letter opt-out without a reason and too few attempts", typ: components.TypePipeline,
			inputs: func() map[string]any {
				in := base()
				in["subscriptions"] = map[string]any{
					"main": map[string]any{"delivery": "push", "deadLetter": map[string]any{"optOut": true}},
					"work": map[string]any{"delivery": "pull", "maxDeliveryAttempts": 3},
				}
				return in
			},
			args: func() pulumi.RunFunc {
				a := baseArgs()
				a.Subscriptions["main"] = spec.Subscription{Delivery: "push", DeadLetter: &spec.DeadLetter{OptOut: true}}
				a.Subscriptions["work"] = spec.Subscription{Delivery: "pull", MaxDeliveryAttempts: intPtr(3)}
				return pipelineProgram("orders", a)
			},
			want: []string{"subscriptions.main.deadLetter", "subscriptions.work.maxDeliveryAttempts"},
		},
		{
			name: "bad subscription key and exactly-once on push", typ: components.TypePipeline,
			inputs: func() map[string]any {
				in := base()
				in["subscriptions"] = map[string]any{"Main_Sub": map[string]any{"delivery": "push", "exactlyOnce": true}}
				return in
			},
			args: func() pulumi.RunFunc {
				a := baseArgs()
				a.Subscriptions = map[string]spec.Subscription{"Main_Sub": {Delivery: "push", ExactlyOnce: true}}
				return pipelineProgram("orders", a)
			},
			want: []string{"Main_Sub"},
		},
		{
			name: "push subscription without a push target", typ: components.TypeSubscription,
			inputs: func() map[string]any {
				return map[string]any{"project": "acme-dev", "projectNumber": "123456789012", "topic": "projects/acme-dev/topics/orders",
					"subscription": map[string]any{"delivery": "push"}}
			},
			args: func() pulumi.RunFunc {
				return func(ctx *pulumi.Context) error {
					_, err := components.NewSubscription(ctx, "orders", &components.SubscriptionArgs{
						Project: pulumi.String("acme-dev"), ProjectNumber: pulumi.String("123456789012"), Topic: pulumi.String("projects/acme-dev/topics/orders"),
						Subscription: spec.Subscription{Delivery: "push"},
					})
					return err
				}
			},
			want: []string{"push"},
		},
		{
			name: "topic that names an existing one", typ: components.TypeTopic,
			inputs: func() map[string]any {
				return map[string]any{"project": "acme-dev", "topic": map[string]any{"existing": "projects/shared/topics/orders"}}
			},
			args: func() pulumi.RunFunc {
				return func(ctx *pulumi.Context) error {
					_, err := components.NewTopic(ctx, "orders", &components.TopicArgs{
						Project: pulumi.String("acme-dev"), Topic: spec.Topic{Existing: pulumi.String("projects/shared/topics/orders")},
					})
					return err
				}
			},
			want: []string{"topic.existing"},
		},
		{
			name: "consumer with an unknown store", typ: components.TypeConsumer,
			inputs: func() map[string]any {
				return map[string]any{"project": "acme-dev", "consumer": map[string]any{"image": image, "store": "redis://cache/0", "maxMessageBytes": 20000000}}
			},
			args: func() pulumi.RunFunc {
				return func(ctx *pulumi.Context) error {
					_, err := components.NewConsumer(ctx, "orders", &components.ConsumerArgs{
						Project:  pulumi.String("acme-dev"),
						Consumer: spec.Consumer{Image: pulumi.String(image), Store: "redis://cache/0", MaxMessageBytes: intPtr(20000000)},
					})
					return err
				}
			},
			want: []string{"consumer.store", "consumer.maxMessageBytes"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var goErr error // the component's own error; RunErr wraps it
			program := c.args()
			goRegs, _ := runGo(func(ctx *pulumi.Context) error { goErr = program(ctx); return goErr })
			if goErr == nil {
				t.Fatal("the Go component accepted the arguments")
			}
			for _, w := range c.want {
				if !strings.Contains(goErr.Error(), w) {
					t.Errorf("the Go error does not name %q: %v", w, goErr)
				}
			}
			_, regs, err := construct(t, c.typ, "orders", c.inputs())
			if err == nil {
				t.Fatal("Construct accepted the arguments")
			}
			if !strings.Contains(err.Error(), goErr.Error()) {
				t.Errorf("Construct error differs from Go's:\n provider: %v\n go:       %v", err, goErr)
			}
			if len(goRegs) != 0 || len(regs) != 0 {
				t.Errorf("declared on bad arguments: go %d, provider %d resources", len(goRegs), len(regs))
			}
		})
	}
}
