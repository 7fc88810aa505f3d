package devpipe

import (
	"strconv"
	"sync"
	"time"

	pubsubpb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/eventpipe/eventpipe/spec"
)

// DLQ keeps the messages of the local pipeline's dead-letter subscriptions, in
// place of pstest, and serves them to every client of the emulator through
// pstest's reactors: Publish to a dead-letter topic, and Pull, Acknowledge and
// ModifyAckDeadline on a dead-letter subscription.
//
// pstest v2.8.0 cannot hold a dead letter as Pub/Sub does (read from its
// fake.go): it forgets every message that is not out for delivery ten minutes
// after it was published, whatever the subscription's retention
// (retentionDuration), so a dead letter left for eleven minutes is gone, and
// `eventpipe replay` then reports 0 of 0 while the local pipeline still counts
// it dead-lettered. The DLQ keeps each message for its subscription's
// retention (the stack's dlqRetention, 7 days by default), as Pub/Sub does.
//
// Pub/Sub semantics kept (cloud.google.com/pubsub/docs/pull,
// cloud.google.com/pubsub/docs/lease-management): a pulled message is out for
// its ack deadline (the subscription's, or what ModifyAckDeadline sets; 0
// releases it at once), is delivered again after that, and is gone only once
// acked with the ack id of its latest delivery. A pull returns at once, empty
// when nothing is available (as Pub/Sub may). Streaming pull and seek are not
// served on a dead-letter subscription (pstest's own subscription, empty, would
// answer them): `eventpipe replay` and gcloud pull.
type DLQ struct {
	mu     sync.Mutex
	now    func() time.Time
	topics map[string][]*dlqSub // dead-letter topic -> its subscriptions
	subs   map[string]*dlqSub   // by name
	next   int
}

// dlqSub is one dead-letter subscription.
type dlqSub struct {
	name        string
	ackDeadline time.Duration
	retention   time.Duration
	msgs        []*dlqMessage // in publish order
}

// dlqMessage is one dead letter and its delivery state.
type dlqMessage struct {
	msg        *pubsubpb.PubsubMessage
	deliveries int
	ackID      string    // of the latest delivery; "" when never delivered or released
	outUntil   time.Time // out for delivery until then
}

// dlqIDPrefix starts the ids the DLQ gives its messages, so they cannot be
// taken for pstest's ("m0", "m1", …).
const dlqIDPrefix = "dlq-"

// NewDLQ returns the DLQ of t's dead-letter subscriptions (t as declared in
// pstest: ForPstest's retentions). now is the clock (nil: time.Now).
func NewDLQ(t Topology, now func() time.Time) *DLQ {
	if now == nil {
		now = time.Now
	}
	d := &DLQ{now: now, topics: map[string][]*dlqSub{}, subs: map[string]*dlqSub{}}
	for _, p := range t.Pipelines {
		for _, s := range p.Subscriptions {
			if !s.HasDLQ() || d.subs[s.DLQSubscription] != nil {
				continue
			}
			retention := s.DLQRetention
			if retention <= 0 {
				retention = defaultRetention
			}
			ds := &dlqSub{name: s.DLQSubscription, ackDeadline: dlqAckDeadline, retention: retention}
			d.subs[ds.name] = ds
			d.topics[s.DLQTopic] = append(d.topics[s.DLQTopic], ds)
		}
	}
	return d
}

// dlqAckDeadline is the ack deadline of every DLQ subscription, as the components
// declare it.
const dlqAckDeadline = spec.DefaultPullAckDeadline

// defaultRetention is Pub/Sub's subscription retention when none is set.
const defaultRetention = 7 * 24 * time.Hour

// Options returns the pstest reactors that route the DLQ's calls to it.
func (d *DLQ) Options() []pstest.ServerReactorOption {
	var out []pstest.ServerReactorOption
	for _, fn := range []string{"Publish", "Pull", "Acknowledge", "ModifyAckDeadline", "Seek"} {
		out = append(out, pstest.ServerReactorOption{FuncName: fn, Reactor: d})
	}
	return out
}

// React implements pstest.Reactor: it handles the calls on the DLQ's topics
// and subscriptions and leaves every other call to pstest. pstest calls it
// with its own lock held, so it never calls pstest.
func (d *DLQ) React(req any) (bool, any, error) {
	switch r := req.(type) {
	case *pubsubpb.PublishRequest:
		if subs, ok := d.topicSubs(r.GetTopic()); ok {
			return true, d.publish(subs, r.GetMessages()), nil
		}
	case *pubsubpb.PullRequest:
		if s, ok := d.sub(r.GetSubscription()); ok {
			resp, err := d.pull(s, int(r.GetMaxMessages()))
			return true, resp, err
		}
	case *pubsubpb.AcknowledgeRequest:
		if s, ok := d.sub(r.GetSubscription()); ok {
			d.ack(s, r.GetAckIds())
			return true, nil, nil
		}
	case *pubsubpb.ModifyAckDeadlineRequest:
		if s, ok := d.sub(r.GetSubscription()); ok {
			d.modify(s, r.GetAckIds(), r.GetAckDeadlineSeconds())
			return true, nil, nil
		}
	case *pubsubpb.SeekRequest:
		if _, ok := d.sub(r.GetSubscription()); ok {
			return true, nil, status.Errorf(codes.Unimplemented, "the local pipeline's dead-letter subscription %s does not seek: pull it (eventpipe replay does)", r.GetSubscription())
		}
	}
	return false, nil, nil
}

func (d *DLQ) topicSubs(topic string) ([]*dlqSub, bool) {
	subs, ok := d.topics[topic] // fixed at NewDLQ: no lock needed
	return subs, ok
}

func (d *DLQ) sub(name string) (*dlqSub, bool) {
	s, ok := d.subs[name]
	return s, ok
}

// publish stores each message in every subscription of its topic and returns
// the ids it gave them.
func (d *DLQ) publish(subs []*dlqSub, msgs []*pubsubpb.PubsubMessage) *pubsubpb.PublishResponse {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	resp := &pubsubpb.PublishResponse{}
	for _, m := range msgs {
		id := dlqIDPrefix + strconv.Itoa(d.next)
		d.next++
		stored := &pubsubpb.PubsubMessage{Data: m.GetData(), Attributes: m.GetAttributes(), OrderingKey: m.GetOrderingKey(),
			MessageId: id, PublishTime: timestamppb.New(now)}
		for _, s := range subs {
			s.msgs = append(s.msgs, &dlqMessage{msg: stored})
		}
		resp.MessageIds = append(resp.MessageIds, id)
	}
	return resp
}

// pull delivers up to max available messages (0: 1,000, as pstest), oldest
// first, and drops those past their retention.
func (d *DLQ) pull(s *dlqSub, max int) (*pubsubpb.PullResponse, error) {
	if max < 0 {
		return nil, status.Error(codes.InvalidArgument, "MaxMessages cannot be negative")
	}
	if max == 0 {
		max = 1000
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	d.expire(s, now)
	resp := &pubsubpb.PullResponse{}
	for _, m := range s.msgs {
		if len(resp.ReceivedMessages) >= max {
			break
		}
		if m.ackID != "" && now.Before(m.outUntil) {
			continue // out for delivery
		}
		m.deliveries++
		m.ackID = m.msg.GetMessageId() + ":" + strconv.Itoa(m.deliveries)
		m.outUntil = now.Add(s.ackDeadline)
		resp.ReceivedMessages = append(resp.ReceivedMessages, &pubsubpb.ReceivedMessage{AckId: m.ackID, Message: m.msg})
	}
	return resp, nil
}

// expire drops the messages older than the subscription's retention that are
// not out for delivery.
func (d *DLQ) expire(s *dlqSub, now time.Time) {
	kept := s.msgs[:0]
	for _, m := range s.msgs {
		out := m.ackID != "" && now.Before(m.outUntil)
		if out || now.Sub(m.msg.GetPublishTime().AsTime()) <= s.retention {
			kept = append(kept, m)
		}
	}
	clear(s.msgs[len(kept):])
	s.msgs = kept
}

// ack removes the messages whose latest delivery has one of ackIDs; an ack id
// of an earlier delivery, or of a message already acked, is ignored, as
// Pub/Sub ignores an expired ack id.
func (d *DLQ) ack(s *dlqSub, ackIDs []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	acked := map[string]bool{}
	for _, id := range ackIDs {
		acked[id] = true
	}
	kept := s.msgs[:0]
	for _, m := range s.msgs {
		if m.ackID == "" || !acked[m.ackID] {
			kept = append(kept, m)
		}
	}
	clear(s.msgs[len(kept):])
	s.msgs = kept
}

// modify sets the ack deadline of the deliveries with ackIDs: 0 releases them.
func (d *DLQ) modify(s *dlqSub, ackIDs []string, seconds int32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	for _, id := range ackIDs {
		for _, m := range s.msgs {
			if m.ackID != "" && m.ackID == id {
				if seconds == 0 {
					m.ackID = ""
				} else {
					m.outUntil = now.Add(time.Duration(seconds) * time.Second)
				}
			}
		}
	}
}

// Held returns how many messages each dead-letter subscription holds now
// (out for delivery or not), by subscription name.
func (d *DLQ) Held() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	out := map[string]int{}
	for name, s := range d.subs {
		d.expire(s, now)
		out[name] = len(s.msgs)
	}
	return out
}
