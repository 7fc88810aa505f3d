package devpipe

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/eventpipe/eventpipe/spec"
)

// pstestMaxRetention is the longest subscription retention pstest v2.8.0
// accepts. Of the settings pstest validates differently from Pub/Sub (read
// from pstest's fake.go), it is the only one narrower than what a stack can
// declare, so it is the only one mapped for pstest's validation:
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

// pstestUncountedAttempts is the maxDeliveryAttempts pstest is given for a
// subscription whose topic has other subscriptions. pstest v2.8.0 counts a
// message's deliveries across every subscription of its topic (each
// subscription's copy shares one counter), where Pub/Sub counts them per
// subscription, so it would dead-letter a message from one subscription
// because another retried it. The local pipeline counts each subscription's
// attempts itself and dead-letters at the stack's value; pstest, given this
// value, never does, and still reports a delivery attempt (it does so only
// with a dead-letter policy).
const pstestUncountedAttempts = math.MaxInt32

// Adaptation is a setting declared in pstest with another value than the
// stack's, because pstest rejects the stack's value or cannot honour it.
type Adaptation struct {
	// Subscription is the full name of the subscription concerned.
	Subscription string
	// Setting is what was mapped: AdaptedRetention or AdaptedAttempts.
	Setting string
	// Stack is the stack's value, Local the value pstest was given, each as
	// the stack file writes it.
	Stack, Local string
}

// Settings ForPstest maps.
const (
	// AdaptedRetention is a subscription's message retention beyond pstest's 7 days.
	AdaptedRetention = "message retention"
	// AdaptedAttempts is maxDeliveryAttempts on a topic with several subscriptions.
	AdaptedAttempts = "maxDeliveryAttempts"
)

// ForPstest returns t with every setting pstest cannot model mapped onto one
// it can, and the list of what was mapped. The mapped retentions only bound
// how long an unacknowledged message may wait, far longer than any local run;
// the mapped maxDeliveryAttempts leaves the count to the local pipeline
// (SubscriptionTopology.MaxAttempts keeps the stack's value).
func ForPstest(t Topology) (Topology, []Adaptation) {
	var adapted []Adaptation
	fit := func(name string, d time.Duration) time.Duration {
		if d <= pstestMaxRetention {
			return d
		}
		adapted = append(adapted, Adaptation{Subscription: name, Setting: AdaptedRetention, Stack: spec.FormatDuration(d), Local: spec.FormatDuration(pstestMaxRetention)})
		return pstestMaxRetention
	}
	subsOf := map[string]int{}
	for _, p := range t.Pipelines {
		subsOf[p.Topic] += len(p.Subscriptions)
	}
	out := Topology{Project: t.Project}
	for _, p := range t.Pipelines {
		subs := make([]SubscriptionTopology, len(p.Subscriptions))
		for i, s := range p.Subscriptions {
			s.Retention = fit(s.Name, s.Retention)
			if s.HasDLQ() {
				s.DLQRetention = fit(s.DLQSubscription, s.DLQRetention)
				if subsOf[p.Topic] > 1 {
					s.PstestMaxAttempts = pstestUncountedAttempts
					adapted = append(adapted, Adaptation{Subscription: s.Name, Setting: AdaptedAttempts, Stack: strconv.Itoa(s.MaxAttempts), Local: "uncounted"})
				}
			}
			subs[i] = s
		}
		p.Subscriptions = subs
		out.Pipelines = append(out.Pipelines, p)
	}
	return out, adapted
}

// AdaptationLine summarises adaptations in one line for the run's output
// ("" when there are none): per setting, how many subscriptions, from which
// values to which, and why.
func AdaptationLine(adapted []Adaptation) string {
	if len(adapted) == 0 {
		return ""
	}
	from := map[string]map[string]bool{}
	count := map[string]int{}
	for _, a := range adapted {
		if from[a.Setting] == nil {
			from[a.Setting] = map[string]bool{}
		}
		from[a.Setting][a.Stack] = true
		count[a.Setting]++
	}
	f := spec.FormatDuration
	var parts []string
	if n := count[AdaptedRetention]; n > 0 {
		parts = append(parts, fmt.Sprintf("message retention %s of %d subscription(s) runs as %s (pstest accepts %s–%s, Pub/Sub %s–%s)"+
			"; a local run never waits that long, so nothing else changes", strings.Join(slices.Sorted(maps.Keys(from[AdaptedRetention])), "/"), n,
			f(pstestMaxRetention), f(spec.MinRetention), f(pstestMaxRetention), f(spec.MinRetention), f(spec.MaxRetention)))
	}
	if n := count[AdaptedAttempts]; n > 0 {
		parts = append(parts, fmt.Sprintf("maxDeliveryAttempts %s of %d subscription(s) sharing a topic is counted per subscription by the local pipeline, "+
			"which dead-letters at that value; pstest, which counts a message's deliveries across all subscriptions of its topic, is given no limit "+
			"(an emulator client reading those subscriptions sees %d)", strings.Join(slices.Sorted(maps.Keys(from[AdaptedAttempts])), "/"), n, pstestUncountedAttempts))
	}
	return "dev: adapted to pstest: " + strings.Join(parts, "; ")
}
