package components_test

import (
	"testing"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/spec"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

func TestTopic(t *testing.T) {
	cases := []struct {
		name       string
		args       components.TopicArgs
		wantSchema any
		wantKMS    any
	}{
		{
			name: "defaults",
			args: components.TopicArgs{Project: "acme-dev", Name: "orders", Labels: map[string]string{"eventpipe_role": "source"}, MessageRetention: *spec.Dur(spec.DefaultRetention)},
		},
		{
			name: "schema and cmek",
			args: components.TopicArgs{Project: "acme-dev", Name: "orders", MessageRetention: *spec.Dur(spec.Day),
				Schema: "projects/acme-dev/schemas/order", SchemaEncoding: "BINARY", KMSKeyName: "projects/acme-dev/locations/europe/keyRings/r/cryptoKeys/k"},
			wantSchema: map[string]any{"schema": "projects/acme-dev/schemas/order", "encoding": "BINARY"},
			wantKMS:    "projects/acme-dev/locations/europe/keyRings/r/cryptoKeys/k",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := runMocked(t, nil, func(ctx *pulumi.Context) error {
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
			if got := input(topic, "messageRetentionDuration"); got != spec.Seconds(tc.args.MessageRetention.D) {
				t.Errorf("retention = %v", got)
			}
			if got := input(topic, "name"); got != "orders" {
				t.Errorf("name = %v", got)
			}
			if len(tc.args.Labels) > 0 && input(topic, "labels.eventpipe_role") != "source" {
				t.Errorf("labels = %v", input(topic, "labels"))
			}
			if got := input(topic, "schemaSettings"); !equalJSON(got, tc.wantSchema) {
				t.Errorf("schemaSettings = %v, want %v", got, tc.wantSchema)
			}
			if got := input(topic, "kmsKeyName"); got != tc.wantKMS {
				t.Errorf("kmsKeyName = %v, want %v", got, tc.wantKMS)
			}
		})
	}
}
