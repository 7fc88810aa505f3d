package doortest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/eventpipe/eventpipe/consumer/downstream"
	"github.com/eventpipe/eventpipe/consumer/engine"
)

// Door is one way work reaches the consumer. Adding a door to the
// consumer is adding a row to Doors: every case runs through it.
type Door struct {
	Name string
	// pull: deliveries are published to the Pub/Sub fake and pulled (no
	// reply: acks say what the consumer answered).
	pull bool
	// ordered: the door takes Pub/Sub events, so latest-state routes and
	// the ordering guard (push, pull).
	ordered bool
	// send makes one attempt of d at consumer c: its reply (pull: the
	// message is published, and the reply is empty).
	send func(w *world, c *consumer, d delivery) reply
	// killAt are the failpoints a consumer dies at in the recovery case:
	// before the handler is called, and after it answered but before the
	// answer was recorded (a second call, named in docs/handlers.md).
	killAt []killPoint
}

// killPoint is a failpoint and whether the handler had answered there.
type killPoint struct {
	fp       engine.Failpoint
	answered bool
}

// Doors are the consumer's doors.
var Doors = []Door{
	{Name: "push", ordered: true, send: sendPush,
		killAt: []killPoint{{engine.WorkerAfterClaim, false}, {engine.WorkerAfterApply, true}}},
	{Name: "pull", ordered: true, pull: true, send: sendPull,
		killAt: []killPoint{{engine.WorkerBeforeApply, false}, {engine.WorkerBeforeMarkDone, true}}},
	{Name: "callback", send: sendCallback,
		killAt: []killPoint{{engine.CallbackAfterReserve, false}}},
	{Name: "gateway", send: sendGateway,
		killAt: []killPoint{{engine.CallbackAfterReserve, false}, {engine.GatewayBeforeFinish, true}}},
}

// delivery is one attempt of an event (or callback, or keyed request).
type delivery struct {
	key     string // the script id: names the event, callback or key
	kind    string // the event's type: order, guarded, state
	msgID   string // Pub/Sub message id (republished copies get new ones)
	publish time.Time
	fields  map[string]any // the payload's other fields
}

func (d delivery) payload() []byte {
	p := map[string]any{"type": d.kind, "eventId": d.key, "script": d.key}
	for k, v := range d.fields {
		p[k] = v
	}
	b, _ := json.Marshal(p)
	return b
}

// reply is the consumer's answer to one attempt.
type reply struct {
	status     int
	body       []byte
	retryAfter string
	err        error // no answer
	outcome    string
}

// final reports whether r settles the attempt's key for good: acked
// (push) or answered with the handler's own answer, done or refused
// (callback, gateway). The others — no answer, 409 (in progress), a
// retryable status (a nack; the consumer's 502, 503, 504; the handler's
// own 5xx, 408, 425, 429) — mean: retry.
func (r reply) final(door Door) bool {
	if r.err != nil || r.status == 0 {
		return false
	}
	if door.Name == "push" {
		return r.status/100 == 2
	}
	return r.status != http.StatusConflict && downstream.VerdictOf(r.status) != downstream.Retry
}

func sendPush(w *world, c *consumer, d delivery) reply {
	env := map[string]any{"subscription": subscriptionName, "message": map[string]any{
		"data": base64.StdEncoding.EncodeToString(d.payload()), "messageId": d.msgID, "publishTime": d.publish.Format(time.RFC3339Nano)}}
	body, _ := json.Marshal(env)
	status, b, ra, err := post(context.Background(), c.url+"/pubsub/push", body, nil)
	var out struct{ Outcome string }
	_ = json.Unmarshal(b, &out)
	return reply{status: status, body: b, retryAfter: ra, err: err, outcome: out.Outcome}
}

func sendPull(w *world, _ *consumer, d delivery) reply {
	w.publishing.Lock()
	defer w.publishing.Unlock()
	w.pinned.Store(&d.publish) // its publish time, as push chooses it
	defer w.pinned.Store(nil)
	w.ps.Publish(topicName, d.payload(), nil)
	return reply{}
}

func sendCallback(_ *world, c *consumer, d delivery) reply {
	body, _ := json.Marshal(map[string]any{"callback_id": d.key, "script": d.key})
	status, b, ra, err := post(context.Background(), c.url+"/callbacks/jobs", body, nil)
	return reply{status: status, body: b, retryAfter: ra, err: err}
}

func sendGateway(_ *world, c *consumer, d delivery) reply {
	body, _ := json.Marshal(map[string]any{"script": d.key})
	status, b, ra, err := post(context.Background(), c.url+"/orders", body, http.Header{"Idempotency-Key": {d.key}})
	return reply{status: status, body: b, retryAfter: ra, err: err}
}

// acked reports whether every message of the Pub/Sub fake with key's
// payload was acked, and how many there are.
func (w *world) acked(key string) (all bool, n int) {
	w.reading.Lock()
	defer w.reading.Unlock()
	for _, m := range w.ps.Messages() {
		var p struct{ Script string }
		if json.Unmarshal(m.Data, &p) != nil || p.Script != key {
			continue
		}
		n++
		if m.Acks == 0 {
			return false, n
		}
	}
	return n > 0, n
}

// messages describes the Pub/Sub fake's messages of key (for failures).
func (w *world) messages(key string) string {
	if w.ps == nil {
		return ""
	}
	var b bytes.Buffer
	w.reading.Lock()
	defer w.reading.Unlock()
	for _, m := range w.ps.Messages() {
		var p struct{ Script string }
		if json.Unmarshal(m.Data, &p) == nil && p.Script == key {
			fmt.Fprintf(&b, "\n  message %s: %d deliveries, %d acks, published %s, modacks %+v (clock %s)", m.ID, m.Deliveries, m.Acks, m.PublishTime.Format(time.RFC3339Nano), m.Modacks, w.clock.Now().Format(time.RFC3339Nano))
		}
	}
	return b.String()
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

func readAll(resp *http.Response) ([]byte, error) {
	return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
}

// msgID names a copy of key's event.
func msgID(key string, copyN int) string { return fmt.Sprintf("%s-m%d", key, copyN) }
