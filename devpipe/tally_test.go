package devpipe

import (
	"bytes"
	"strings"
	"testing"
)

func oneSubTopology() Topology {
	return Topology{Project: "p", Pipelines: []PipelineTopology{{Name: "orders", Topic: "projects/p/topics/orders",
		Subscriptions: []SubscriptionTopology{{Key: "main", Name: "projects/p/subscriptions/orders-main", Push: true, MaxAttempts: 5}}}}}
}

func TestTallyFollowsConsumerLogLines(t *testing.T) {
	topo := oneSubTopology()
	tl := NewTally(topo)
	for _, id := range []string{"m1", "m2", "m3", "m4", "m5", "m6"} {
		tl.Published("projects/p/topics/orders", id)
	}
	sub := `"subscription":"projects/p/subscriptions/orders-main"`
	lines := []string{
		`{` + sub + `,"messageId":"m1","outcome":"applied","ack_action":"ack"}`,
		`{` + sub + `,"messageId":"m1","outcome":"duplicate","ack_action":"ack"}`, // a redelivery racing the ack: first answer counts
		`{` + sub + `,"messageId":"m2","outcome":"duplicate","ack_action":"ack"}`,
		`{` + sub + `,"messageId":"m3","outcome":"retry","ack_action":"nack"}`,
		`{` + sub + `,"messageId":"m3","outcome":"stale_ignored","ack_action":"ack"}`,
		`{` + sub + `,"messageId":"m4","outcome":"poison","ack_action":"nack"}`,
		`{` + sub + `,"messageId":"m5","outcome":"poison","ack_action":"ack"}`,
		`{` + sub + `,"messageId":"m6","outcome":"applied","ack_action":"ack_failed"}`, // not acked: not final
		`not json`,
		`{"message":"consumer started"}`,
	}
	var sink bytes.Buffer
	w := tl.Writer(&sink)
	// Write in odd chunks: lines may be split across writes.
	all := strings.Join(lines, "\n") + "\n"
	for len(all) > 0 {
		n := min(7, len(all))
		if _, err := w.Write([]byte(all[:n])); err != nil {
			t.Fatal(err)
		}
		all = all[n:]
	}
	if sink.String() != strings.Join(lines, "\n")+"\n" {
		t.Error("the tap did not pass the log through unchanged")
	}
	tl.DeadLettered("projects/p/subscriptions/orders-main", "m4")
	r := tl.Rows(topo)[0]
	want := Row{Pipeline: "orders", Subscription: "main", Published: 6, Applied: 1, Duplicate: 1, Stale: 1, DeadLettered: 1, PoisonAcked: 1, Retried: 2}
	if r.Published != want.Published || r.Applied != want.Applied || r.Duplicate != want.Duplicate || r.Stale != want.Stale ||
		r.DeadLettered != want.DeadLettered || r.PoisonAcked != want.PoisonAcked || r.Retried != want.Retried {
		t.Errorf("row %+v, want %+v", r, want)
	}
	if len(r.Pending) != 1 || r.Pending[0] != "m6" {
		t.Errorf("pending %v, want [m6]", r.Pending)
	}
	err := Check([]Row{r})
	if err == nil || !strings.Contains(err.Error(), "orders/main: 1 of 6 published messages never reached a final state (lost): m6") {
		t.Errorf("Check = %v, want m6 reported lost", err)
	}
	tl.Observe([]byte(`{` + sub + `,"messageId":"m6","outcome":"duplicate","ack_action":"ack"}`))
	if err := Check(tl.Rows(topo)); err != nil {
		t.Errorf("Check after everything settled: %v", err)
	}
}

func TestCheckCatchesAnUnbalancedAccount(t *testing.T) {
	// A message counted twice (or one counted that was never published)
	// breaks the equation even when nothing is pending.
	err := Check([]Row{{Pipeline: "orders", Subscription: "main", Published: 3, Applied: 3, Duplicate: 1}})
	if err == nil || !strings.Contains(err.Error(), "published 3 != applied 3 + duplicate 1") {
		t.Errorf("Check = %v", err)
	}
	if err := Check([]Row{{Pipeline: "orders", Subscription: "f", Published: 3, Filtered: true}}); err != nil {
		t.Errorf("filtered subscriptions are not checked: %v", err)
	}
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTable(&b, []Row{{Pipeline: "orders", Subscription: "main", Published: 10, Applied: 7, Duplicate: 1, Stale: 1, DeadLettered: 1, Retried: 4}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[1]), " ") != "orders main 10 7 1 1 1 0 4 0" {
		t.Errorf("table:\n%s", b.String())
	}
	if strings.Join(strings.Fields(lines[0]), " ") != "pipeline subscription published applied duplicate stale dead-lettered poison-acked retried lost" {
		t.Errorf("header: %q", lines[0])
	}
}
