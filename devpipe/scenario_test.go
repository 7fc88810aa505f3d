package devpipe

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pubsubpb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/eventpipe/eventpipe/consumer/keys"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/boltstore"
	"github.com/eventpipe/eventpipe/internal/localpubsub"
	"github.com/eventpipe/eventpipe/spec"
)

func devStack(t *testing.T) *spec.Stack {
	t.Helper()
	f, err := spec.ReadStackFile(filepath.Join("..", "stacks", "Pulumi.dev.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.Load("dev")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestFromSpecCarriesThePolicies(t *testing.T) {
	topo := FromSpec(devStack(t))
	var got []string
	for _, p := range topo.Pipelines {
		for _, s := range p.Subscriptions {
			got = append(got, fmt.Sprintf("%s %s push=%v ack=%s backoff=%s-%s attempts=%d dlq=%s,%s", p.Topic, s.Name, s.Push,
				s.AckDeadline, s.MinBackoff, s.MaxBackoff, s.MaxAttempts, s.DLQTopic, s.DLQSubscription))
		}
	}
	want := []string{
		"projects/eventpipe-dev/topics/documents projects/eventpipe-dev/subscriptions/documents-process push=false ack=10m0s backoff=10s-10m0s attempts=5 dlq=projects/eventpipe-dev/topics/documents-process.dlq,projects/eventpipe-dev/subscriptions/documents-process.dlq-sub",
		"projects/eventpipe-dev/topics/ingest-heartbeat projects/eventpipe-dev/subscriptions/ingest-heartbeat-apply push=true ack=30s backoff=10s-10m0s attempts=5 dlq=projects/eventpipe-dev/topics/ingest-heartbeat-apply.dlq,projects/eventpipe-dev/subscriptions/ingest-heartbeat-apply.dlq-sub",
		"projects/eventpipe-dev/topics/system-events projects/eventpipe-dev/subscriptions/system-events-materializer push=true ack=1m0s backoff=10s-10m0s attempts=5 dlq=projects/eventpipe-dev/topics/system-events-materializer.dlq,projects/eventpipe-dev/subscriptions/system-events-materializer.dlq-sub",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("topology:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestScenarioConvergesOnEveryPipeline plays a small scenario on the dev
// stack and checks the counts, then the converged documents in the store.
func TestScenarioConvergesOnEveryPipeline(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	env, err := Start(ctx, Options{Stack: devStack(t), DataDir: dir, BackoffScale: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	// The declared subscription keeps the spec's policies in pstest.
	got, err := env.fake.Client.SubscriptionAdminClient.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: "projects/eventpipe-dev/subscriptions/system-events-materializer"})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetDeadLetterPolicy().GetMaxDeliveryAttempts() != 5 || got.GetRetryPolicy().GetMinimumBackoff().AsDuration() != 10*time.Second ||
		got.GetRetryPolicy().GetMaximumBackoff().AsDuration() != 600*time.Second || got.GetAckDeadlineSeconds() != 60 ||
		got.GetMessageRetentionDuration().AsDuration() != 7*24*time.Hour {
		t.Errorf("declared subscription %v", got)
	}
	sc := Scenario{Events: 6, Duplicates: 2, OutOfOrder: 3, Poison: 2, Outage: 200 * time.Millisecond, Settle: time.Minute}
	rep, err := sc.Run(ctx, env)
	rows := rep.Rows
	if cerr := env.Close(); cerr != nil {
		t.Errorf("close: %v", cerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(rows); err != nil {
		t.Fatal(err)
	}
	// Phases 1 and 3 publish 6 events each (applied), phase 2 two duplicates,
	// three older events (stale) and two poison messages (dead-lettered).
	exp := Row{Published: 2*6 + 2 + 3 + 2, Applied: 2 * 6, Duplicate: 2, Stale: 3, DeadLettered: 2}
	for _, r := range rows {
		if r.Published != exp.Published || r.Applied != exp.Applied || r.Duplicate != exp.Duplicate || r.Stale != exp.Stale ||
			r.DeadLettered != exp.DeadLettered || r.PoisonAcked != 0 {
			t.Errorf("%s/%s: %+v, want %+v", r.Pipeline, r.Subscription, r, exp)
		}
		if r.Retried < exp.DeadLettered*4 {
			t.Errorf("%s/%s: %d retries, want at least 4 per dead-lettered message", r.Pipeline, r.Subscription, r.Retried)
		}
	}
	// Converged state: every service holds its newest event (phase 3), not
	// the older out-of-order ones, on every pipeline's own store.
	for _, pipeline := range []string{"documents", "system-events"} {
		st, err := boltstore.Open(filepath.Join(dir, pipeline+".db"))
		if err != nil {
			t.Fatal(err)
		}
		err = st.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
			for i := 0; i < sc.Events; i++ {
				id, err := keys.DocID("dev", fmt.Sprintf("%s-svc-%03d", pipeline, i))
				if err != nil {
					return err
				}
				doc, err := tx.Get(ctx, store.Key{Collection: "ops_services", ID: id})
				if err != nil {
					return fmt.Errorf("ops_services/%s: %w", id, err)
				}
				if doc.Fields["status"] != "degraded" || fmt.Sprint(doc.Fields["sequence"]) != "3" {
					return fmt.Errorf("ops_services/%s = %v, want the phase-3 event (degraded, sequence 3)", id, doc.Fields)
				}
			}
			_, err := tx.Get(ctx, store.Key{Collection: "ops_services", ID: "dev__nobody"})
			if !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("a document that was never written: %v", err)
			}
			return nil
		})
		_ = st.Close()
		if err != nil {
			t.Errorf("%s: %v", pipeline, err)
		}
	}
}

func TestScenarioValidate(t *testing.T) {
	tests := []struct {
		sc   Scenario
		want string
	}{
		{Scenario{Events: 0, Settle: time.Second}, "events 0"},
		{Scenario{Events: 2, Duplicates: 3, Settle: time.Second}, "duplicates 3"},
		{Scenario{Events: 2, OutOfOrder: -1, Settle: time.Second}, "out-of-order -1"},
		{Scenario{Events: 2, Poison: -1, Settle: time.Second}, "poison -1"},
		{Scenario{Events: 2}, "settle 0s"},
	}
	for _, tc := range tests {
		if err := tc.sc.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.sc, err, tc.want)
		}
	}
	if err := DefaultScenario().Validate(); err != nil {
		t.Errorf("default scenario: %v", err)
	}
}

// TestPullNackWaitsForTheBackoff checks the reactor that gives pull
// subscriptions their retry policy in pstest.
func TestPullNackWaitsForTheBackoff(t *testing.T) {
	ctx := context.Background()
	sub := SubscriptionTopology{Key: "main", Name: "projects/p/subscriptions/pulled", AckDeadline: 10 * time.Second,
		MinBackoff: 2 * time.Second, MaxBackoff: 10 * time.Second}
	topo := Topology{Project: "p", Pipelines: []PipelineTopology{{Name: "x", Topic: "projects/p/topics/x", Subscriptions: []SubscriptionTopology{sub}}}}
	fake, err := localpubsub.Start(ctx, "p", newPullRetry(topo, 1).Options()...)
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	if err := Declare(ctx, fake.Client, topo); err != nil {
		t.Fatal(err)
	}
	if _, err := fake.Client.TopicAdminClient.Publish(ctx, &pubsubpb.PublishRequest{Topic: "projects/p/topics/x", Messages: []*pubsubpb.PubsubMessage{{Data: []byte("x")}}}); err != nil {
		t.Fatal(err)
	}
	pull := func() []*pubsubpb.ReceivedMessage {
		resp, err := fake.Client.SubscriptionAdminClient.Pull(ctx, &pubsubpb.PullRequest{Subscription: sub.Name, MaxMessages: 1, ReturnImmediately: true})
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetReceivedMessages()
	}
	got := pull()
	if len(got) != 1 {
		t.Fatal("nothing to pull")
	}
	nacked := time.Now()
	if err := fake.Client.SubscriptionAdminClient.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: sub.Name, AckIds: []string{got[0].GetAckId()}}); err != nil {
		t.Fatal(err)
	}
	for {
		if again := pull(); len(again) == 1 {
			if waited := time.Since(nacked); waited < 2*time.Second {
				t.Errorf("redelivered %s after the nack, want the 2s minimum backoff", waited)
			}
			return
		}
		if time.Since(nacked) > 10*time.Second {
			t.Fatal("never redelivered")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
