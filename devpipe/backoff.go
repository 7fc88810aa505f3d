package devpipe

import (
	"strings"
	"sync"
	"time"

	pubsubpb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
)

// Backoff is the delay before redelivering a message whose attempt failed:
// exponential from min (after the first attempt) doubling up to max, as
// Pub/Sub's retry policy describes, multiplied by scale (1 = real time; the
// scenario shrinks it so a run takes seconds, not the minutes the stack's
// 10 s–600 s policy would).
func Backoff(min, max time.Duration, attempt int, scale float64) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	d := min
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return time.Duration(float64(d) * scale)
}

// pullRetry is a pstest reactor that gives pull subscriptions the retry
// policy and the dead-lettering of Pub/Sub, which pstest v2.8.0 lacks:
//
//   - pstest redelivers a nacked message at once (five nacks in a few
//     milliseconds would dead-letter a message a brief outage made fail). A
//     nack is a ModifyAckDeadline of 0 seconds; the reactor rewrites it into a
//     deadline of the backoff before pstest applies it. pstest counts in whole
//     seconds, so the scaled backoff is rounded up to at least one second.
//   - pstest dead-letters a message by acking it with its message id instead
//     of the ack id of its delivery, so the message never leaves its
//     subscription and pstest publishes it to the dead-letter topic again on
//     every delivery pass (every few milliseconds, read from its fake.go):
//     each copy resets the dead letter, so `eventpipe replay --dry-run` never
//     finds the queue drained. So the nack of a subscription's last attempt is
//     taken out of the request and handed to the local pipeline
//     (deadLetterPulled), which moves the message once, as Pub/Sub does.
//
// Attempts are counted per subscription from the consumers' nacks, as Pub/Sub
// counts them (pstest counts across the subscriptions of a topic; ForPstest
// keeps pstest from dead-lettering those itself).
type pullRetry struct {
	subs  map[string]SubscriptionTopology // the pull subscriptions, by name; read only
	scale float64

	mu      sync.Mutex
	nacks   map[string]map[string]int // subscription -> message id -> failed attempts
	queue   []deadLetterJob
	pending map[string]bool // subscription + "\x00" + message id of queued jobs
	wake    chan struct{}   // signalled (capacity 1) when a job is queued
}

// deadLetterJob is a pulled message whose last attempt failed.
type deadLetterJob struct {
	sub          SubscriptionTopology
	ackID, msgID string
	attempt      int
}

// newPullRetry returns the reactor of t's pull subscriptions.
func newPullRetry(t Topology, scale float64) *pullRetry {
	b := &pullRetry{subs: map[string]SubscriptionTopology{}, scale: scale, nacks: map[string]map[string]int{},
		pending: map[string]bool{}, wake: make(chan struct{}, 1)}
	for _, p := range t.Pipelines {
		for _, s := range p.Subscriptions {
			if !s.Push {
				b.subs[s.Name] = s
				b.nacks[s.Name] = map[string]int{}
			}
		}
	}
	return b
}

// Options returns the reactor as pstest server options.
func (b *pullRetry) Options() []pstest.ServerReactorOption {
	return []pstest.ServerReactorOption{{FuncName: "ModifyAckDeadline", Reactor: b}, {FuncName: "Acknowledge", Reactor: b}}
}

// React implements pstest.Reactor. It never handles the call itself; pstest
// calls it with its lock held, so it never calls pstest.
func (b *pullRetry) React(req any) (bool, any, error) {
	switch r := req.(type) {
	case *pubsubpb.ModifyAckDeadlineRequest:
		if s, ok := b.subs[r.GetSubscription()]; ok && r.GetAckDeadlineSeconds() == 0 && len(r.GetAckIds()) > 0 {
			retry, backoff := b.nacked(s, r.GetAckIds())
			r.AckIds = retry
			r.AckDeadlineSeconds = seconds(backoff)
		}
	case *pubsubpb.AcknowledgeRequest:
		if _, ok := b.subs[r.GetSubscription()]; ok {
			b.mu.Lock()
			for _, id := range r.GetAckIds() {
				delete(b.nacks[r.GetSubscription()], ackMessageID(id))
			}
			b.mu.Unlock()
		}
	}
	return false, nil, nil
}

// nacked counts a failed attempt of each message and returns the ack ids to
// release after the backoff (the longest of theirs); those at the last
// attempt are queued for dead-lettering instead.
func (b *pullRetry) nacked(s SubscriptionTopology, ackIDs []string) ([]string, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var retry []string
	var backoff time.Duration
	for _, id := range ackIDs {
		msg := ackMessageID(id)
		n := b.nacks[s.Name][msg] + 1
		b.nacks[s.Name][msg] = n
		if s.HasDLQ() && n >= s.MaxAttempts {
			delete(b.nacks[s.Name], msg)
			if key := s.Name + "\x00" + msg; !b.pending[key] {
				b.pending[key] = true
				b.queue = append(b.queue, deadLetterJob{sub: s, ackID: id, msgID: msg, attempt: n})
				select {
				case b.wake <- struct{}{}:
				default:
				}
			}
			continue
		}
		retry = append(retry, id)
		backoff = max(backoff, Backoff(s.MinBackoff, s.MaxBackoff, n, b.scale))
	}
	return retry, backoff
}

// take returns the queued jobs and empties the queue; a job stays pending
// (a further nack of its message queues nothing) until done.
func (b *pullRetry) take() []deadLetterJob {
	b.mu.Lock()
	defer b.mu.Unlock()
	jobs := b.queue
	b.queue = nil
	return jobs
}

// done ends a job taken from the queue.
func (b *pullRetry) done(j deadLetterJob) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.pending, j.sub.Name+"\x00"+j.msgID)
}

// ackMessageID is the message id in a pstest ack id ("<message id>:<deliveries>").
func ackMessageID(ackID string) string {
	id, _, _ := strings.Cut(ackID, ":")
	return id
}

// seconds is d in whole seconds as ack deadlines count, rounded up to at
// least one.
func seconds(d time.Duration) int32 { return max(1, int32((d+time.Second-1)/time.Second)) }
