package devpipe

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/eventpipe/eventpipe/spec"
)

// pstestLimit is one setting that pstest v2.8.0 validates differently from
// Pub/Sub, with the range pstest accepts. Read from pstest's fake.go:
//
//   - checkSubMessageRetention: a subscription keeps messages 10m–7d, where
//     Pub/Sub allows 10m–31d (and the stack's DLQ subscriptions 7d–14d);
//   - checkTopicMessageRetention: 10m–31d, as Pub/Sub;
//   - checkAckDeadline: 0s–600s (minAckDeadlineSecs is 0 until a test
//     sets it), wider than Pub/Sub's 10s–600s;
//   - filters go through pstest's own parser of Pub/Sub's filter grammar;
//     the retry policy and maxDeliveryAttempts are not validated at all.
//
// Only the first is narrower than what a stack can declare, so it is the
// only mapping; TestEveryBoundedSettingStarts proves the list complete for
// every bounded key of docs/configuration.md.
type pstestLimit struct {
	// setting names the key for the output line.
	setting string
	// lo and hi are what pstest accepts.
	lo, hi time.Duration
	// pubsub is the range Pub/Sub accepts, for the output line.
	pubsub string
}

// pstestSubscriptionRetention is pstest's subscription retention range.
var pstestSubscriptionRetention = pstestLimit{setting: "message retention", lo: spec.MinRetention, hi: 7 * spec.Day, pubsub: spec.FormatDuration(spec.MinRetention) + "–" + spec.FormatDuration(spec.MaxRetention)}

// fit returns d inside [l.lo, l.hi]; 0 (the server's default) stays 0.
func (l pstestLimit) fit(d time.Duration) time.Duration {
	switch {
	case d <= 0:
		return d
	case d > l.hi:
		return l.hi
	case d < l.lo:
		return l.lo
	}
	return d
}

// Adaptation is one setting declared in pstest with another value than the
// stack's because pstest rejects the stack's value where Pub/Sub accepts it.
type Adaptation struct {
	// Subscription is the full name of the subscription concerned.
	Subscription string
	// Setting names the key ("message retention").
	Setting string
	// Stack is the stack's value; Local the value pstest was given.
	Stack, Local time.Duration
	// Pstest and PubSub are the ranges each accepts, for the explanation.
	Pstest, PubSub string
}

// ForPstest returns t with every setting pstest cannot model mapped onto the
// nearest value it can, and the list of what was mapped. The mapped values
// only bound how long an unacknowledged message may wait, far longer than
// any local run.
func ForPstest(t Topology) (Topology, []Adaptation) {
	var adapted []Adaptation
	fit := func(name string, d time.Duration, l pstestLimit) time.Duration {
		local := l.fit(d)
		if local != d {
			adapted = append(adapted, Adaptation{Subscription: name, Setting: l.setting, Stack: d, Local: local,
				Pstest: spec.FormatDuration(l.lo) + "–" + spec.FormatDuration(l.hi), PubSub: l.pubsub})
		}
		return local
	}
	out := Topology{Project: t.Project}
	for _, p := range t.Pipelines {
		subs := make([]SubscriptionTopology, len(p.Subscriptions))
		for i, s := range p.Subscriptions {
			s.Retention = fit(s.Name, s.Retention, pstestSubscriptionRetention)
			if s.HasDLQ() {
				s.DLQRetention = fit(s.DLQSubscription, s.DLQRetention, pstestSubscriptionRetention)
			}
			subs[i] = s
		}
		p.Subscriptions = subs
		out.Pipelines = append(out.Pipelines, p)
	}
	return out, adapted
}

// AdaptationLine summarises adaptations in one line for the run's output
// ("" when there are none): which setting, how many subscriptions, from
// which values to which, and why.
func AdaptationLine(adapted []Adaptation) string {
	if len(adapted) == 0 {
		return ""
	}
	type group struct {
		a    Adaptation
		from map[string]bool
		subs int
	}
	groups := map[string]*group{}
	var keys []string
	for _, a := range adapted {
		k := a.Setting + "|" + a.Local.String()
		g, ok := groups[k]
		if !ok {
			g = &group{a: a, from: map[string]bool{}}
			groups[k] = g
			keys = append(keys, k)
		}
		g.from[spec.FormatDuration(a.Stack)] = true
		g.subs++
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		g := groups[k]
		from := make([]string, 0, len(g.from))
		for f := range g.from {
			from = append(from, f)
		}
		sort.Strings(from)
		parts = append(parts, fmt.Sprintf("%s %s of %d subscription(s) runs as %s (pstest accepts %s, Pub/Sub %s)",
			g.a.Setting, strings.Join(from, "/"), g.subs, spec.FormatDuration(g.a.Local), g.a.Pstest, g.a.PubSub))
	}
	return "dev: adapted to pstest: " + strings.Join(parts, "; ") + "; a local run never waits that long, so nothing else changes"
}
