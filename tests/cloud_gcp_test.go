//go:build gcp

package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"cloud.google.com/go/pubsub/v2"
	pubsubpb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/gruntwork-io/terratest/modules/retry"
	"github.com/pulumi/pulumi/sdk/v3/go/auto"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optdestroy"
	"github.com/pulumi/pulumi/sdk/v3/go/auto/optup"
	monitoring "google.golang.org/api/monitoring/v3"

	"github.com/eventpipe/eventpipe/consumer/keys"
	"github.com/eventpipe/eventpipe/spec"
)

// cloudEnv is what a real-cloud run needs from the environment.
type cloudEnv struct {
	project, projectNumber, region, image string
}

// cloudEnvFromOS reads the run's settings; a missing one fails the run with
// the variable to set (the gcp tag is an explicit request to run it).
func cloudEnvFromOS(t *testing.T) cloudEnv {
	t.Helper()
	e := cloudEnv{project: os.Getenv("GOOGLE_CLOUD_PROJECT"), projectNumber: os.Getenv("GOOGLE_CLOUD_PROJECT_NUMBER"),
		region: os.Getenv("EVENTPIPE_IT_REGION"), image: os.Getenv("EVENTPIPE_IT_IMAGE")}
	if e.region == "" {
		e.region = "europe-west1"
	}
	var missing []string
	for name, v := range map[string]string{"GOOGLE_CLOUD_PROJECT": e.project, "GOOGLE_CLOUD_PROJECT_NUMBER": e.projectNumber,
		"EVENTPIPE_IT_IMAGE": e.image} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("real-cloud run: set %v (project id, its number from `gcloud projects describe`, and a consumer image "+
			"pushed to Artifact Registry as REPO:TAG or REPO@sha256:…); credentials come from ADC", missing)
	}
	return e
}

// TestRealCloudPipeline brings up an ephemeral stack with the Pulumi
// Automation API, publishes an event and waits for its Firestore document,
// forces a poison message into the DLQ and finds it there, checks the alert
// policies exist, and destroys the stack: always, also when a step fails.
func TestRealCloudPipeline(t *testing.T) {
	e := cloudEnvFromOS(t)
	ctx := context.Background()
	suffix := strconv.FormatInt(time.Now().Unix()%1_000_000, 36)
	stackName, pipeline := "it-"+suffix, "it-"+suffix
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	config := auto.ConfigMap{
		"gcp:project":             {Value: e.project},
		"eventpipe:project":       {Value: e.project},
		"eventpipe:projectNumber": {Value: e.projectNumber},
		"eventpipe:region":        {Value: e.region},
		"eventpipe:env":           {Value: "it"},
		// An ephemeral stack: no Pulumi protect and no Cloud Run deletion
		// protection, or the teardown below could not destroy it.
		"eventpipe:defaults.protect":                                                  {Value: "false"},
		"eventpipe:pipelines." + pipeline + ".consumer.image":                         {Value: e.image},
		"eventpipe:pipelines." + pipeline + ".subscriptions.main.delivery":            {Value: "push"},
		"eventpipe:pipelines." + pipeline + ".subscriptions.main.minBackoff":          {Value: "10s"},
		"eventpipe:pipelines." + pipeline + ".subscriptions.main.maxBackoff":          {Value: "20s"},
		"eventpipe:pipelines." + pipeline + ".subscriptions.main.maxDeliveryAttempts": {Value: "5"},
	}
	// The same spec the components read gives the names to check.
	src := spec.MapSource{Secrets: map[string]bool{}, Values: map[string]string{
		"eventpipe:project": e.project, "eventpipe:projectNumber": e.projectNumber, "eventpipe:region": e.region, "eventpipe:env": "it",
		"eventpipe:defaults": `{"protect":false}`,
		"eventpipe:pipelines": fmt.Sprintf(`{%q:{"consumer":{"image":%q},"subscriptions":{"main":{"delivery":"push","minBackoff":"10s","maxBackoff":"20s","maxDeliveryAttempts":5}}}}`,
			pipeline, e.image),
	}}
	st, err := spec.Load(stackName, src)
	if err != nil {
		t.Fatalf("the run's config does not validate: %v", err)
	}
	p := st.Pipelines[pipeline]
	sub := p.Subscriptions["main"]
	if st.Protected(p) {
		t.Fatal("the ephemeral stack is protected: its teardown would fail")
	}

	stack, err := auto.UpsertStackLocalSource(ctx, stackName, repo)
	if err != nil {
		t.Fatalf("create stack %s: %v", stackName, err)
	}
	stackFile := spec.StackFilePath(filepath.Join(repo, "stacks"), stackName)
	defer runStage(t, "teardown", func() {
		// A fresh context: the teardown must run even when the test's is done.
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		defer cancel()
		if _, err := stack.Destroy(dctx, optdestroy.ProgressStreams(os.Stdout)); err != nil {
			t.Errorf("destroy %s (remove its resources by hand if this persists): %v", stackName, err)
			return
		}
		if err := stack.Workspace().RemoveStack(dctx, stackName); err != nil {
			t.Errorf("remove stack %s: %v", stackName, err)
		}
		_ = os.Remove(stackFile)
	})
	runStage(t, "deploy", func() {
		if err := stack.SetAllConfigWithOptions(ctx, config, &auto.ConfigOptions{Path: true}); err != nil {
			t.Fatalf("set config: %v", err)
		}
		if _, err := stack.Up(ctx, optup.ProgressStreams(os.Stdout)); err != nil {
			t.Fatalf("pulumi up: %v", err)
		}
	})
	runStage(t, "validate", func() {
		ps, err := pubsub.NewClient(ctx, e.project)
		if err != nil {
			t.Fatal(err)
		}
		defer ps.Close()
		topic := "projects/" + e.project + "/topics/" + p.Topic.Name
		service := "svc-" + suffix
		event := systemEvent("evt-"+suffix, service, "healthy", 1, time.Now())
		if _, err := ps.TopicAdminClient.Publish(ctx, &pubsubpb.PublishRequest{Topic: topic, Messages: []*pubsubpb.PubsubMessage{{Data: event}}}); err != nil {
			t.Fatalf("publish: %v", err)
		}
		fs, err := firestore.NewClientWithDatabase(ctx, e.project, "(default)")
		if err != nil {
			t.Fatal(err)
		}
		defer fs.Close()
		docID, err := keys.DocID("it", service)
		if err != nil {
			t.Fatal(err)
		}
		retry.DoWithRetry(t, "the event's Firestore document", 60, 10*time.Second, func() (string, error) {
			snap, err := fs.Collection("ops_services").Doc(docID).Get(ctx)
			if err != nil {
				return "", err
			}
			if snap.Data()["status"] != "healthy" {
				return "", fmt.Errorf("document %v", snap.Data())
			}
			return "", nil
		})

		poison := []byte("not json " + suffix)
		if _, err := ps.TopicAdminClient.Publish(ctx, &pubsubpb.PublishRequest{Topic: topic, Messages: []*pubsubpb.PubsubMessage{{Data: poison}}}); err != nil {
			t.Fatalf("publish poison: %v", err)
		}
		dlq := "projects/" + e.project + "/subscriptions/" + sub.DLQSubscriptionName()
		retry.DoWithRetry(t, "the poison message in the DLQ", 60, 10*time.Second, func() (string, error) {
			resp, err := ps.SubscriptionAdminClient.Pull(ctx, &pubsubpb.PullRequest{Subscription: dlq, MaxMessages: 10})
			if err != nil {
				return "", err
			}
			for _, rm := range resp.GetReceivedMessages() {
				if string(rm.GetMessage().GetData()) == string(poison) {
					_ = ps.SubscriptionAdminClient.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: dlq, AckIds: []string{rm.GetAckId()}})
					return "", nil
				}
			}
			return "", errors.New("not dead-lettered yet")
		})

		dep, err := stack.Export(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var state struct {
			Resources []struct {
				Type string `json:"type"`
				ID   string `json:"id"`
			} `json:"resources"`
		}
		if err := json.Unmarshal(dep.Deployment, &state); err != nil {
			t.Fatal(err)
		}
		mon, err := monitoring.NewService(ctx)
		if err != nil {
			t.Fatal(err)
		}
		policies := 0
		for _, r := range state.Resources {
			if r.Type != "gcp:monitoring/alertPolicy:AlertPolicy" {
				continue
			}
			policies++
			if _, err := mon.Projects.AlertPolicies.Get(r.ID).Context(ctx).Do(); err != nil {
				t.Errorf("alert policy %s: %v", r.ID, err)
			}
		}
		if policies == 0 {
			t.Error("the stack declared no alert policies")
		}
	})
}
