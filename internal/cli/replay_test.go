package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	pubsubpb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/eventpipe/eventpipe/devpipe"
	"github.com/eventpipe/eventpipe/internal/localpubsub"
	"github.com/eventpipe/eventpipe/internal/testing/devtest"
	"github.com/eventpipe/eventpipe/replay"
)

// replayFixture is a source topic and a DLQ subscription holding dead
// letters, in a pstest reached the way a user reaches an emulator: through
// PUBSUB_EMULATOR_HOST, not an injected client.
type replayFixture struct {
	fake             *localpubsub.Fake
	dlqSub, observer string
}

func newReplayFixture(t *testing.T, letters ...map[string]string) replayFixture {
	t.Helper()
	ctx := context.Background()
	fake, err := localpubsub.Start(ctx, "replay-cli")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fake.Close() })
	t.Setenv("PUBSUB_EMULATOR_HOST", fake.Server.Addr)
	f := replayFixture{fake: fake, dlqSub: "projects/replay-cli/subscriptions/orders-sub.dlq-sub",
		observer: "projects/replay-cli/subscriptions/observer"}
	for _, tp := range []string{"orders", "orders-sub.dlq"} {
		if _, err := fake.Client.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: "projects/replay-cli/topics/" + tp}); err != nil {
			t.Fatal(err)
		}
	}
	for name, topic := range map[string]string{f.dlqSub: "orders-sub.dlq", f.observer: "orders"} {
		if _, err := fake.Client.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{
			Name: name, Topic: "projects/replay-cli/topics/" + topic, AckDeadlineSeconds: 10}); err != nil {
			t.Fatal(err)
		}
	}
	for i, attrs := range letters {
		_, err := fake.Client.TopicAdminClient.Publish(ctx, &pubsubpb.PublishRequest{Topic: "projects/replay-cli/topics/orders-sub.dlq",
			Messages: []*pubsubpb.PubsubMessage{{Data: []byte{byte('a' + i)}, Attributes: attrs}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// pullAll drains a subscription (acking) and returns its messages.
func (f replayFixture) pullAll(t *testing.T, sub string) []*pubsubpb.PubsubMessage {
	t.Helper()
	ctx := context.Background()
	var out []*pubsubpb.PubsubMessage
	for range 3 {
		resp, err := f.fake.Client.SubscriptionAdminClient.Pull(ctx, &pubsubpb.PullRequest{Subscription: sub, MaxMessages: 100})
		if err != nil {
			t.Fatal(err)
		}
		var acks []string
		for _, rm := range resp.GetReceivedMessages() {
			out = append(out, rm.GetMessage())
			acks = append(acks, rm.GetAckId())
		}
		if len(acks) > 0 {
			if err := f.fake.Client.SubscriptionAdminClient.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: sub, AckIds: acks}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

func TestReplayCommandMovesMatchingLettersThroughTheEmulator(t *testing.T) {
	f := newReplayFixture(t, map[string]string{"tenant": "a"}, map[string]string{"tenant": "b"}, map[string]string{"tenant": "a"})
	out, _, err := executeLog(t, "replay", "--project", "replay-cli", "--subscription", "orders-sub.dlq-sub",
		"--topic", "projects/replay-cli/topics/orders", "--match", "tenant=a", "--rate", "1000")
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	if !strings.Contains(out, "replayed 2 of 3 messages") || !strings.Contains(out, "1 skipped by --match") {
		t.Errorf("summary = %q, want 2 replayed of 3 with 1 skipped", out)
	}
	got := f.pullAll(t, f.observer)
	if len(got) != 2 {
		t.Fatalf("source topic got %d messages, want 2", len(got))
	}
	for _, m := range got {
		a := m.GetAttributes()
		if a["tenant"] != "a" || a[replay.AttrOriginalMessageID] == "" || a[replay.AttrDeadLetterSub] != f.dlqSub {
			t.Errorf("replayed attributes %v: want tenant=a kept and the replay metadata added", a)
		}
	}
	// The unmatched letter is still in the DLQ; the replayed ones are gone.
	left := f.pullAll(t, f.dlqSub)
	if len(left) != 1 || left[0].GetAttributes()["tenant"] != "b" {
		t.Errorf("DLQ keeps %d messages (%v), want only tenant=b", len(left), left)
	}
}

func TestReplayCommandDryRunMovesNothing(t *testing.T) {
	f := newReplayFixture(t, nil, nil)
	out, _, err := executeLog(t, "replay", "--subscription", f.dlqSub, "--topic", "projects/replay-cli/topics/orders", "--dry-run")
	if err != nil || !strings.Contains(out, "would replay 2 of 2") {
		t.Fatalf("dry run: %v, %q", err, out)
	}
	if got := f.pullAll(t, f.observer); len(got) != 0 {
		t.Errorf("dry run published %d messages", len(got))
	}
	// Held messages are released at the end of the run, so they can be pulled at once.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := f.fake.Client.SubscriptionAdminClient.Pull(ctx, &pubsubpb.PullRequest{Subscription: f.dlqSub, MaxMessages: 10})
	if err != nil || len(resp.GetReceivedMessages()) != 2 {
		t.Errorf("after a dry run the DLQ offers %d messages (%v), want 2", len(resp.GetReceivedMessages()), err)
	}
}

func TestReplayCommandRejectsBadFlags(t *testing.T) {
	t.Setenv("GOOGLE_CLOUD_PROJECT", "")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"short name without project", []string{"--subscription", "dlq", "--topic", "projects/p/topics/t"}, "--subscription \"dlq\" is a short name: pass --project"},
		{"bad match", []string{"--subscription", "projects/p/subscriptions/s", "--topic", "projects/p/topics/t", "--match", "tenant"}, "--match \"tenant\": use KEY=VALUE"},
		{"negative max", []string{"--subscription", "projects/p/subscriptions/s", "--topic", "projects/p/topics/t", "--max", "-1"}, "max -1"},
		{"slashes in short name", []string{"--project", "p", "--subscription", "a/b", "--topic", "t"}, "--subscription \"a/b\": use a full name"},
		{"missing topic", []string{"--subscription", "projects/p/subscriptions/s"}, "topic"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := executeLog(t, append([]string{"replay"}, tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if tc.name != "missing topic" && ExitCode(err) != 2 {
				t.Errorf("exit code %d, want 2", ExitCode(err))
			}
		})
	}
}

// TestReplayAfterAnOutageAppliesTheDeadLetters is the operator's story on
// the local pipeline: a store outage outlasts every delivery attempt, so
// the event is dead-lettered; once the store is back, `eventpipe replay`
// moves it back and the consumer applies it.
func TestReplayAfterAnOutageAppliesTheDeadLetters(t *testing.T) {
	env := devtest.Start(t, 0.001)
	t.Setenv("PUBSUB_EMULATOR_HOST", env.EmulatorHost)
	row := func() devpipe.Row {
		for _, r := range env.Tally.Rows(env.Topology) {
			if r.Pipeline == "system-events" {
				return r
			}
		}
		t.Fatal("no system-events row")
		return devpipe.Row{}
	}
	waitFor := func(what string, cond func(devpipe.Row) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond(row()) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s: %+v", what, row())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	env.Outage.Set(true)
	if _, err := env.Publish(context.Background(), "system-events",
		[]byte(`{"eventId":"e-out","service":"api","status":"healthy","producedAt":"2026-01-08T10:00:00Z"}`), map[string]string{"tenant": "a"}); err != nil {
		t.Fatal(err)
	}
	waitFor("the event dead-lettered", func(r devpipe.Row) bool { return r.DeadLettered == 1 })
	env.Outage.Set(false)
	out, _, err := executeLog(t, "replay", "--subscription", "projects/eventpipe-dev/subscriptions/system-events-materializer.dlq-sub",
		"--topic", "projects/eventpipe-dev/topics/system-events")
	if err != nil || !strings.Contains(out, "replayed 1 of 1") {
		t.Fatalf("replay: %v %q", err, out)
	}
	waitFor("the replayed copy applied", func(r devpipe.Row) bool { return r.Applied == 1 })
}

// TestReplayFailureBeforePullingPrintsNoResult: a replay that fails before it pulled
// anything (here: no such subscription) exits 2 with the error and prints no
// "replayed 0 of 0" line that would read as a successful empty run.
func TestReplayFailureBeforePullingPrintsNoResult(t *testing.T) {
	env := devtest.Start(t, 0.01)
	t.Setenv("PUBSUB_EMULATOR_HOST", env.EmulatorHost)
	out, _, err := executeLog(t, "replay", "--subscription", "projects/eventpipe-dev/subscriptions/nope.dlq-sub",
		"--topic", "projects/eventpipe-dev/topics/system-events")
	if ExitCode(err) != 2 || strings.Contains(out, "replayed") {
		t.Errorf("exit %d, %v, output %q; want exit 2 and no result line", ExitCode(err), err, out)
	}
}
