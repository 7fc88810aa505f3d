package devpipe

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/eventpipe/eventpipe/spec"
)

// pstestMaxRetention is the longest subscription retention pstest v2.8.0
// accepts. Of the settings pstest validates differently from Pub/Sub (read
// from pstest's fake.go), it is the only one narrower than what a stack can
// declare, so it is the only one mapped:
//
//   - checkSubMessageRetention: a subscription keeps messages 10m–7d, where
//     Pub/Sub allows 10m–31d (and the stack's DLQ subscriptions 7d–14d);
//   - checkTopicMessageRetention: 10m–31d, as Pub/Sub;
//   - checkAckDeadline: 0s–600s (minAckDeadlineSecs is 0 until a test
//     sets it), wider than Pub/Sub's 10s–600s;
//   - filters go through pstest's own parser of Pub/Sub's filter grammar;
//     the retry policy and maxDeliveryAttempts are not validated at all.
//
// TestEveryBoundedSettingStarts proves this complete for every bounded key
// of docs/configuration.md.
const pstestMaxRetention = 7 * spec.Day

// Adaptation is a subscription's message retention declared in pstest with
// another value than the stack's, because pstest rejects the stack's value
// where Pub/Sub accepts it.
type Adaptation struct {
	// Subscription is the full name of the subscription concerned.
	Subscription string
	// Stack is the stack's value; Local the value pstest was given.
	Stack, Local time.Duration
}

// ForPstest returns t with every setting pstest cannot model mapped onto the
// nearest value it can, and the list of what was mapped. The mapped values
// only bound how long an unacknowledged message may wait, far longer than
// any local run.
func ForPstest(t Topology) (Topology, []Adaptation) {
	var adapted []Adaptation
	fit := func(name string, d time.Duration) time.Duration {
		if d <= pstestMaxRetention {
			return d
		}
		adapted = append(adapted, Adaptation{Subscription: name, Stack: d, Local: pstestMaxRetention})
		return pstestMaxRetention
	}
	out := Topology{Project: t.Project}
	for _, p := range t.Pipelines {
		subs := make([]SubscriptionTopology, len(p.Subscriptions))
		for i, s := range p.Subscriptions {
			s.Retention = fit(s.Name, s.Retention)
			if s.HasDLQ() {
				s.DLQRetention = fit(s.DLQSubscription, s.DLQRetention)
			}
			subs[i] = s
		}
		p.Subscriptions = subs
		out.Pipelines = append(out.Pipelines, p)
	}
	return out, adapted
}

// AdaptationLine summarises adaptations in one line for the run's output
// ("" when there are none): how many subscriptions, from which values to
// which, and why.
func AdaptationLine(adapted []Adaptation) string {
	if len(adapted) == 0 {
		return ""
	}
	f := spec.FormatDuration
	from := map[string]bool{}
	for _, a := range adapted {
		from[f(a.Stack)] = true
	}
	return fmt.Sprintf("dev: adapted to pstest: message retention %s of %d subscription(s) runs as %s (pstest accepts %s–%s, Pub/Sub %s–%s)"+
		"; a local run never waits that long, so nothing else changes", strings.Join(slices.Sorted(maps.Keys(from)), "/"), len(adapted),
		f(pstestMaxRetention), f(spec.MinRetention), f(pstestMaxRetention), f(spec.MinRetention), f(spec.MaxRetention))
}
