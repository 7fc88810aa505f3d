package engine_test

import (
	"context"
	"fmt"
	"time"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
)

// Materialise the latest state of a service from heartbeat events: the first
// delivery is applied, its redelivery is a duplicate, an older event is stale.
func Example() {
	ctx := context.Background()
	eng, err := engine.New(engine.Config{Store: memstore.New(), Env: "prod"})
	if err != nil {
		panic(err)
	}
	t0 := time.Date(2026, 1, 8, 10, 0, 0, 0, time.UTC)
	deliver := func(msgID string, at time.Time, status string) {
		ev := engine.Event{MessageID: msgID, PublishTime: at, EventID: "hb-" + msgID,
			Payload: []byte(`{"service":"Strategy-Engine","status":"` + status + `"}`)}
		res, err := eng.Materialize(ctx, ev, engine.Write{
			Collection: "ops_services", ID: "Strategy-Engine", EventTime: at,
			Fields: map[string]any{"status": status},
		})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s %s %s reads=%d writes=%d\n", msgID, res.Outcome, res.DocPath, res.Reads(), res.Writes())
	}
	deliver("m1", t0.Add(time.Minute), "healthy")
	deliver("m1", t0.Add(time.Minute), "healthy")
	deliver("m0", t0, "degraded")

	// A side effect outside the database: claim, do it, settle.
	ev := engine.Event{MessageID: "m2", EventID: "email-42"}
	req := engine.Request{Scope: "send-email", Event: &ev}
	r, err := eng.Claim(ctx, req)
	if err != nil {
		panic(err)
	}
	if _, err := eng.Settle(ctx, r, engine.Settlement{Status: engine.StatusCompleted, Result: map[string]any{"sent": true}}); err != nil {
		panic(err)
	}
	again, err := eng.Claim(ctx, req)
	if err != nil {
		panic(err)
	}
	fmt.Println("second claim:", again.Status, "replayed:", again.Replayed, "sent:", again.Result["sent"])
	// Output:
	// m1 applied ops_services/prod__strategy-engine reads=1 writes=1
	// m1 duplicate ops_services/prod__strategy-engine reads=1 writes=0
	// m0 stale_ignored ops_services/prod__strategy-engine reads=1 writes=0
	// second claim: completed replayed: true sent: true
}
