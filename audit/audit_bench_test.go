package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/eventpipe/eventpipe/audit/cai"
	"github.com/eventpipe/eventpipe/audit/inventory"
	"github.com/eventpipe/eventpipe/audit/model"
	"github.com/eventpipe/eventpipe/policies/check"
)

// caiEstate writes a Cloud Asset Inventory resource export and IAM export of an
// organisation with projects × pipelines pipelines (a topic, its subscription, a DLQ
// topic and a DLQ subscription each: 4 resources, plus the IAM policies of the DLQ topic
// and the subscription); every tenth pipeline has no dead-letter policy.
func caiEstate(tb testing.TB, projects, pipelines int) (resources, iam string) {
	tb.Helper()
	dir := tb.TempDir()
	resources, iam = filepath.Join(dir, "resources.json"), filepath.Join(dir, "iam.json")
	rf, err := os.Create(resources)
	if err != nil {
		tb.Fatal(err)
	}
	defer rf.Close()
	pf, err := os.Create(iam)
	if err != nil {
		tb.Fatal(err)
	}
	defer pf.Close()
	rw, pw := bufio.NewWriter(rf), bufio.NewWriter(pf)
	line := func(w io.Writer, v any) {
		data, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		fmt.Fprintf(w, "%s\n", data)
	}
	for p := range projects {
		id, number := fmt.Sprintf("estate-%03d", p), fmt.Sprintf("%012d", 100000000000+p)
		ancestors := []string{"projects/" + number, "organizations/555000555000"}
		asset := func(typ, name string, data map[string]any) map[string]any {
			return map[string]any{"name": name, "asset_type": typ, "ancestors": ancestors, "resource": map[string]any{
				"version": "v1", "parent": "//cloudresourcemanager.googleapis.com/projects/" + number, "data": data, "location": "global",
			}}
		}
		line(rw, asset("cloudresourcemanager.googleapis.com/Project", "//cloudresourcemanager.googleapis.com/projects/"+number,
			map[string]any{"projectNumber": number, "projectId": id, "lifecycleState": "ACTIVE"}))
		agent := "serviceAccount:service-" + number + "@gcp-sa-pubsub.iam.gserviceaccount.com"
		for i := range pipelines {
			topic := fmt.Sprintf("projects/%s/topics/events-%03d", id, i)
			dlq := topic + ".dlq"
			sub := fmt.Sprintf("projects/%s/subscriptions/events-%03d-sub", id, i)
			dlqSub := sub + ".dlq-sub"
			labels := map[string]any{"goog-terraform-provisioned": "true"}
			subData := map[string]any{
				"name": sub, "topic": topic, "labels": labels, "ackDeadlineSeconds": 60, "expirationPolicy": map[string]any{},
				"retryPolicy": map[string]any{"minimumBackoff": "10s", "maximumBackoff": "600s"},
			}
			if i%10 != 0 {
				subData["deadLetterPolicy"] = map[string]any{"deadLetterTopic": dlq, "maxDeliveryAttempts": 5}
			}
			line(rw, asset("pubsub.googleapis.com/Topic", "//pubsub.googleapis.com/"+topic, map[string]any{"name": topic, "labels": labels}))
			line(rw, asset("pubsub.googleapis.com/Topic", "//pubsub.googleapis.com/"+dlq, map[string]any{"name": dlq, "labels": labels}))
			line(rw, asset("pubsub.googleapis.com/Subscription", "//pubsub.googleapis.com/"+sub, subData))
			line(rw, asset("pubsub.googleapis.com/Subscription", "//pubsub.googleapis.com/"+dlqSub, map[string]any{
				"name": dlqSub, "topic": dlq, "labels": labels, "expirationPolicy": map[string]any{}, "messageRetentionDuration": "604800s",
			}))
			line(pw, map[string]any{"name": "//pubsub.googleapis.com/" + dlq, "asset_type": "pubsub.googleapis.com/Topic", "ancestors": ancestors,
				"iam_policy": map[string]any{"bindings": []any{map[string]any{"role": "roles/pubsub.publisher", "members": []string{agent}}}}})
			line(pw, map[string]any{"name": "//pubsub.googleapis.com/" + sub, "asset_type": "pubsub.googleapis.com/Subscription", "ancestors": ancestors,
				"iam_policy": map[string]any{"bindings": []any{map[string]any{"role": "roles/pubsub.subscriber", "members": []string{agent}}}}})
		}
	}
	if err := rw.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := pw.Flush(); err != nil {
		tb.Fatal(err)
	}
	return resources, iam
}

// BenchmarkAuditCloudAssetInventory audits a Cloud Asset Inventory export of 7,500
// Pub/Sub resources (25 projects of 75 pipelines) plus 3,750 IAM policies, end to end as
// `eventpipe audit --cai-resources --cai-iam -o json` does; "read+model" is the share
// spent reading the files and building the model, the baseline of the same run.
func BenchmarkAuditCloudAssetInventory(b *testing.B) {
	resources, iam := caiEstate(b, 25, 75)
	b.Run("read+model", func(b *testing.B) {
		for b.Loop() {
			inv, err := cai.Read(cai.Files{Resources: []string{resources}, IAM: []string{iam}})
			if err != nil {
				b.Fatal(err)
			}
			if doc := model.Build(inv); len(doc.Resources) == 0 {
				b.Fatal("empty model")
			}
		}
	})
	b.Run("audit", func(b *testing.B) {
		opts := Options{
			Check: check.Options{Outputs: []string{"json"}},
			CAI:   cai.Files{Resources: []string{resources}, IAM: []string{iam}},
		}
		for b.Loop() {
			err := Run(context.Background(), io.Discard, io.Discard, opts)
			var failed *check.FailedError
			if !errors.As(err, &failed) { // every tenth pipeline lacks a DLQ
				b.Fatalf("want a failing report: %v", err)
			}
		}
	})
}

// BenchmarkUnreadLinks judges an estate of 4 projects of 150 topics and subscriptions
// where every third subscription is a search result without its resource (topic and
// dead-letter topic unread), with the model's scoping of those links to their group's
// topics ("scoped", what the audit runs) and without it ("unscoped", each unread link may
// name anything): the price of a model that judges alike whole and group by group.
func BenchmarkUnreadLinks(b *testing.B) {
	inv := &inventory.Inventory{}
	for pi := range 4 {
		id := fmt.Sprintf("p%d", pi)
		p := inv.Project(id)
		for i := range 150 {
			topic := fmt.Sprintf("projects/%s/topics/t%d", id, i)
			sub := fmt.Sprintf("projects/%s/subscriptions/s%d", id, i)
			p.Topics = append(p.Topics, &pubsubpb.Topic{Name: topic})
			s := &pubsubpb.Subscription{Name: sub, Topic: topic}
			if i%3 == 0 {
				s.Topic = ""
				p.SetUnshown(sub, true)
			}
			p.Subscriptions = append(p.Subscriptions, s)
		}
	}
	scoped := model.Build(inv)
	unscoped := model.Build(inv)
	for i := range unscoped.Resources {
		unscoped.Resources[i].PossibleDependencies = nil
	}
	run, err := check.Start(context.Background(), "audit", check.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		doc  *model.Document
	}{{"scoped", scoped}, {"unscoped", unscoped}} {
		b.Run(c.name, func(b *testing.B) {
			data, err := c.doc.JSON()
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := Evaluate(context.Background(), run, c.doc, "bench", func(string) (string, int) { return "", 0 }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data)), "model-bytes")
		})
	}
}
