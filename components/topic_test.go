package components_test

import (
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func TestTopic(t *testing.T) {
	cases := []struct {
		name       string
		args       components.TopicArgs
		retention  string
		wantSchema any
		wantKMS    any
	}{
		{
			name:      "defaults",
			args:      components.TopicArgs{Project: pulumi.String("acme-dev")},
			retention: spec.Seconds(spec.DefaultRetention),
		},
		{
			name: "schema and cmek",
			args: components.TopicArgs{Project: pulumi.String("acme-dev"), Topic: spec.Topic{MessageRetention: "1d",
				Schema: "projects/acme-dev/schemas/order", SchemaEncoding: "BINARY", KMSKeyName: pulumi.String("projects/acme-dev/locations/europe/keyRings/r/cryptoKeys/k")}},
			retention:  "86400s",
			wantSchema: map[string]any{"schema": "projects/acme-dev/schemas/order", "encoding": "BINARY"},
			wantKMS:    "projects/acme-dev/locations/europe/keyRings/r/cryptoKeys/k",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := runMocked(t, func(ctx *pulumi.Context) error {
				_, err := components.NewTopic(ctx, "orders", &tc.args)
				return err
			})
			if got := countByType(plan); len(got) != 1 || got[tTopic] != 1 {
				t.Fatalf("resources = %v, want one topic", got)
			}
			topic := one(t, plan, tTopic, "orders")
			if topic.Parent == "" || len(plan.StepsOfType(components.TypeTopic)) != 1 || topic.Parent != plan.StepsOfType(components.TypeTopic)[0].URN {
				t.Errorf("topic not parented to its component: parent %q", topic.Parent)
			}
			checks := []struct {
				what      string
				got, want any
			}{
				{"retention", input(topic, "messageRetentionDuration"), tc.retention},
				{"name defaults to the component name", input(topic, "name"), "orders"},
				{"role label", input(topic, "labels.eventpipe_role"), "source"},
				{"env label is the stack", input(topic, "labels.eventpipe_env"), "dev"},
				{"no pipeline label on its own", input(topic, "labels.eventpipe_pipeline"), nil},
				{"schemaSettings", input(topic, "schemaSettings"), tc.wantSchema},
				{"kmsKeyName", input(topic, "kmsKeyName"), tc.wantKMS},
			}
			for _, c := range checks {
				if !equalJSON(c.got, c.want) {
					t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
				}
			}
			if !topic.Protect {
				t.Error("a topic is protected from deletion unless protect is false")
			}
		})
	}
}

// TestTopicPublishers: each named producer gets roles/pubsub.publisher on
// the topic, as a non-authoritative member named after it.
func TestTopicPublishers(t *testing.T) {
	members := []string{"serviceAccount:orders-api@producer-prod.iam.gserviceaccount.com", "group:billing@acme.example"}
	plan := runMocked(t, func(ctx *pulumi.Context) error {
		_, err := components.NewTopic(ctx, "orders", &components.TopicArgs{Project: pulumi.String("acme-dev"), Protect: new(bool),
			Topic: spec.Topic{Publishers: members}})
		return err
	})
	grants := custom(plan, tTopicIAM)
	if len(grants) != 2 {
		t.Fatalf("grants = %v, want one per publisher", keys(grants))
	}
	for _, m := range members {
		g := one(t, plan, tTopicIAM, "orders-publisher-"+m)
		if input(g, "topic") != "projects/acme-dev/topics/orders" || input(g, "role") != components.RolePublisher || input(g, "member") != m {
			t.Errorf("grant %s = %v", m, g.Inputs)
		}
	}
	if one(t, plan, tTopic, "orders").Protect {
		t.Error("protect: false still protects the topic")
	}
}

// TestTopicRejectsBadArgs: every problem at once, on the argument's path,
// before anything is declared; a nil Args is an error, not a panic.
func TestTopicRejectsBadArgs(t *testing.T) {
	err, regs := runErr(func(ctx *pulumi.Context) error {
		_, err := components.NewTopic(ctx, "orders", &components.TopicArgs{Project: pulumi.String("Acme Dev"),
			Topic: spec.Topic{MessageRetention: "40d", SchemaEncoding: "JSON", Publishers: []string{"orders-api@x.iam.gserviceaccount.com"}}})
		return err
	})
	for _, want := range []string{
		`topic orders: invalid eventpipe configuration (4 problems)`,
		`project = "Acme Dev": allowed 6–30 lowercase letters`,
		`topic.messageRetention = "40d": allowed 10m–31d`,
		`topic.schemaEncoding = "JSON": allowed only together with topic.schema`,
		`topic.publishers[0] = "orders-api@x.iam.gserviceaccount.com": allowed an IAM member`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant it to contain %q", err, want)
		}
	}
	if len(regs) != 0 {
		t.Errorf("%d resources registered before validation failed", len(regs))
	}
	err, _ = runErr(func(ctx *pulumi.Context) error {
		_, err := components.NewTopic(ctx, "orders", nil)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "no arguments") {
		t.Errorf("nil args: err = %v", err)
	}
}
