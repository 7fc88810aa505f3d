// Package orders is the Pulumi program of a checkout team that runs its
// order events through an eventpipe pipeline, written the way a team writes
// its own program: it enables the APIs it uses, declares the topic its
// checkout service publishes to and an on-call notification channel, and
// passes their outputs into the pipeline, whose consumer keeps its
// idempotency records in PostgreSQL on a private address of the team's
// VPC, which it reaches with Direct VPC egress. The command in the folder
// above runs it (pulumi.Run); tests run it offline and under the engine.
package orders

import (
	"errors"
	"fmt"

	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/monitoring"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/spec"
)

// Program declares the topic, the channel and the pipeline, from the
// stack's orders:* config.
func Program(ctx *pulumi.Context) error {
	cfg := config.New(ctx, "")
	project := pulumi.String(cfg.Require("project"))

	// The APIs the program uses, enabled (Service Usage and Cloud Resource
	// Manager first) and waited for until the enablements have propagated;
	// every component below takes its apis output and waits for it. The waits
	// (orders:setup, spec.Setup: apiPropagation, grantPropagation) default to
	// what Google documents.
	var setup spec.Setup
	if err := cfg.TryObject("setup", &setup); err != nil && !errors.Is(err, config.ErrMissingVar) {
		return fmt.Errorf("orders:setup: %w", err)
	}
	apis, err := components.NewProject(ctx, "apis", &components.ProjectArgs{
		Project: project,
		Apis: []string{
			components.APIPubSub, components.APIRun, components.APIIAM, components.APIResourceManager,
			components.APISecretManager, components.APILogging, components.APIMonitoring, components.APICompute,
		},
		Setup: &setup,
	})
	if err != nil {
		return err
	}

	// The checkout service publishes order events to this topic.
	topic, err := components.NewTopic(ctx, "order-events", &components.TopicArgs{
		Apis:    apis.Apis,
		Project: project,
		Topic: spec.Topic{
			Name:       "orders",
			Publishers: []string{"serviceAccount:checkout@" + cfg.Require("project") + ".iam.gserviceaccount.com"},
		},
	})
	if err != nil {
		return err
	}
	oncall, err := monitoring.NewNotificationChannel(ctx, "checkout-oncall", &monitoring.NotificationChannelArgs{
		Project:     project,
		DisplayName: pulumi.String("Checkout on-call"),
		Type:        pulumi.String("email"),
		Labels:      pulumi.StringMap{"email_address": pulumi.String(cfg.Require("oncallEmail"))},
	}, pulumi.DependsOnInputs(apis.Apis.ApplyT(func([]string) []pulumi.Resource { return nil }).(pulumi.ResourceArrayOutput)))
	if err != nil {
		return err
	}
	channels := pulumi.StringArray{oncall.ID().ToStringOutput()}

	pipeline, err := components.NewPipeline(ctx, "orders", &components.PipelineArgs{
		Project:       project,
		ProjectNumber: pulumi.String(cfg.Require("projectNumber")),
		Topic:         &spec.Topic{Existing: topic.ID},
		Consumer: spec.Consumer{
			Image: pulumi.String(cfg.Require("consumerImage")),
			// The URL holds the database password: it stays a secret, in Secret Manager.
			StoreSecret: cfg.RequireSecret("storeUrl"),
			// The database is on 10.0.0.5 in the team's VPC: without egress
			// to it the consumer never starts (and the preview says so).
			VPCAccess:       &spec.VPCAccess{Network: cfg.Require("network"), Subnetwork: cfg.Require("subnetwork")},
			Memory:          "1Gi",
			MaxMessageBytes: intPtr(1_000_000), // checkout events are small
		},
		Subscriptions: map[string]spec.Subscription{
			"materializer": {Delivery: "push"},
			// The data team pulls its own copy of every order event.
			"warehouse": {
				Delivery:    "pull",
				External:    true,
				Subscribers: []string{"serviceAccount:loader@acme-data-prod.iam.gserviceaccount.com"},
				// Optional (orders:warehouseFilter): the events the data team takes, as a
				// Pub/Sub filter. Pub/Sub cannot change a filter: a new one replaces the
				// subscription, which protect refuses here (its backlog would be lost).
				Filter:     cfg.Get("warehouseFilter"),
				DeadLetter: &spec.DeadLetter{Retention: "7d"},
			},
		},
		Alerts:           &spec.PipelineAlerts{Team: "checkout", CriticalChannels: channels, WarningChannels: channels},
		Apis:             apis.Apis,
		GrantPropagation: setup.GrantPropagation,
	})
	if err != nil {
		return err
	}
	ctx.Export("topic", topic.ID)
	ctx.Export("consumerUri", pipeline.ConsumerURI)
	ctx.Export("subscriptions", pipeline.SubscriptionNames)
	return nil
}

func intPtr(n int) *int { return &n }
