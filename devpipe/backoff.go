package devpipe

import (
	"strconv"
	"strings"
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

// pullBackoff is a pstest reactor that gives pull subscriptions their retry
// policy, which pstest does not implement (it redelivers a nacked message at
// once, so five nacks in a few milliseconds would dead-letter a message that
// a brief outage made fail). A nack is a ModifyAckDeadline of 0 seconds; the
// reactor rewrites it into a deadline of the backoff before pstest applies
// it. pstest counts in whole seconds, so the scaled backoff is rounded up to
// at least one second.
type pullBackoff struct {
	subs  map[string]SubscriptionTopology // the pull subscriptions, by name; read only
	scale float64
}

// pullBackoffOption is the pullBackoff of t's pull subscriptions as a pstest
// server option.
func pullBackoffOption(t Topology, scale float64) pstest.ServerReactorOption {
	b := &pullBackoff{subs: map[string]SubscriptionTopology{}, scale: scale}
	for _, p := range t.Pipelines {
		for _, s := range p.Subscriptions {
			if !s.Push {
				b.subs[s.Name] = s
			}
		}
	}
	return pstest.ServerReactorOption{FuncName: "ModifyAckDeadline", Reactor: b}
}

// React implements pstest.Reactor. It never handles the call itself.
func (b *pullBackoff) React(req interface{}) (bool, interface{}, error) {
	r, ok := req.(*pubsubpb.ModifyAckDeadlineRequest)
	if !ok || r.GetAckDeadlineSeconds() != 0 {
		return false, nil, nil
	}
	s, ok := b.subs[r.GetSubscription()]
	if !ok || len(r.GetAckIds()) == 0 {
		return false, nil, nil
	}
	r.AckDeadlineSeconds = seconds(Backoff(s.MinBackoff, s.MaxBackoff, ackAttempt(r.GetAckIds()[0]), b.scale))
	return false, nil, nil
}

// ackAttempt is the delivery attempt in a pstest ack id ("<message
// id>:<deliveries>"), 1 when it has none.
func ackAttempt(ackID string) int {
	if _, n, ok := strings.Cut(ackID, ":"); ok {
		if v, err := strconv.Atoi(n); err == nil && v > 0 {
			return v
		}
	}
	return 1
}

// seconds is d in whole seconds as ack deadlines count, rounded up to at
// least one.
func seconds(d time.Duration) int32 { return max(1, int32((d+time.Second-1)/time.Second)) }
