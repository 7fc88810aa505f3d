package pull

import (
	"fmt"
	"testing"
	"time"

	pb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/eventpipe/eventpipe/consumer/store"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
	"github.com/eventpipe/eventpipe/internal/testing/remotestore"
)

// TestPullBatchOnHotAggregate pulls a backlog of heartbeats of one service
// into a store that behaves like Firestore under contention (20 ms
// commits, conflicting transactions aborted), with the whole backlog
// outstanding at once: deliveries for the one document wait for each
// other's transactions and are decided in groups, and still every message
// is acked once with its own logged outcome, none is nacked, the writes
// stay a fraction of the messages and the newest heartbeat is the state.
func TestPullBatchOnHotAggregate(t *testing.T) {
	const n = 60
	f := newFake(t)
	f.topic(t, "events")
	f.sub(t, &pb.Subscription{Name: subName("hot"), Topic: topicName("events")})
	var ids []string
	for i := range n {
		at := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
		ids = append(ids, f.publish(t, "events", sysEvent(fmt.Sprintf("s%d", i), at.Format(time.RFC3339))))
	}
	proc, st, log := ct.NewProcessor(t, ct.Options{Store: remotestore.New(20*time.Millisecond, 0)})
	cfg := Config{Client: f.client, Subscriptions: []string{subName("hot")}, Processor: proc}
	cfg.Settings.MaxOutstandingMessages = n
	stop := run(t, cfg)
	waitFor(t, "every message answered", func() bool { return len(log.Lines(t)) >= n })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	lines := log.Lines(t)
	var writes float64
	for _, l := range lines {
		if l["ack_action"] != "ack" {
			t.Errorf("message %v: %v %v (%v); want acked", l["messageId"], l["ack_action"], l["outcome"], l["error"])
		}
		switch l["outcome"] {
		case "applied", "stale_ignored", "duplicate":
		default:
			t.Errorf("message %v: outcome %v", l["messageId"], l["outcome"])
		}
		w, _ := l["store_writes"].(float64)
		writes += w
	}
	for _, id := range ids {
		if m := f.srv.Message(id); m == nil || m.Acks != 1 {
			t.Errorf("message %s acks = %v; want 1", id, m)
		}
	}
	// Two writes (state and dedupe marker) per transaction that applied.
	if writes > n/3 {
		t.Errorf("%d messages for one document cost %.0f writes; want at most %d", n, writes, n/3)
	}
	doc, _ := ct.Get(t, st, store.Key{Collection: "ops_services", ID: "test__api"})
	if doc.Fields["status"] != fmt.Sprintf("s%d", n-1) {
		t.Errorf("final state %v; want s%d", doc.Fields["status"], n-1)
	}
	t.Logf("%d pulled messages for one document: %.0f store writes", n, writes)
}
