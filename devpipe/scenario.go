package devpipe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Scenario is what `eventpipe dev` publishes to every pipeline: the
// system events (the consumer's system_events route), in three phases that
// each wait until every message has reached a final state:
//
//  1. Events: one event for each of Events services: all applied.
//  2. Duplicates of phase-1 events (same eventId, new publish), older events
//     for the same services (lower sequence: out of order) and poison
//     (not JSON, or JSON no route accepts): duplicate, stale, dead-lettered.
//  3. A store outage: the stores go down, Events newer events are published,
//     the stores come back after Outage: the deliveries that failed are
//     retried with the subscription's backoff and applied.
//
// A pipeline with Samples plays the team's own events instead of the system
// events: all of them in phase 1, the first Duplicates of them again in
// phase 2 (beside the poison; no older events, which only the team's data
// could make), and all of them again during the outage of phase 3. A sample
// that ends poison is reported (Report.Rejected) with the consumer's reason.
type Scenario struct {
	// Events is the number of events per pipeline in phase 1 and in phase 3;
	// Duplicates, OutOfOrder and Poison are the phase-2 messages per pipeline.
	Events, Duplicates, OutOfOrder, Poison int
	// Outage is how long the stores stay down in phase 3.
	Outage time.Duration
	// Settle is how long each phase may take to reach final states.
	Settle time.Duration
	// Progress receives a progress line every Tick (nil: none).
	Progress io.Writer
	Tick     time.Duration
	// Now stamps event times (default time.Now).
	Now func() time.Time
	// Samples are the team's own events, by pipeline (LoadSamples).
	Samples map[string][]Sample
}

// Report is the outcome of a scenario run.
type Report struct {
	// Rows are the final account of every subscription.
	Rows []Row
	// Rejected are the samples that ended poison on a subscription.
	Rejected []Rejected
}

// Rejected is a sample the consumer refused.
type Rejected struct {
	Sample       Sample
	Pipeline     string
	Subscription string
	// State is StateDeadLettered or StatePoisonAcked; Reason the consumer's
	// error for it ("" when it logged none).
	State, Reason string
}

// String says what was refused, where it came from and why.
func (r Rejected) String() string {
	why := ""
	if r.Reason != "" {
		why = ": " + r.Reason
	}
	return fmt.Sprintf("%s: %s on %s/%s%s", r.Sample.Source, r.State, r.Pipeline, r.Subscription, why)
}

// DefaultScenario is the scenario of `eventpipe dev` without flags.
func DefaultScenario() Scenario {
	return Scenario{Events: 40, Duplicates: 10, OutOfOrder: 10, Poison: 4, Outage: 300 * time.Millisecond,
		Settle: 2 * time.Minute, Tick: time.Second}
}

// Validate reports a scenario that cannot produce its expected counts.
func (sc Scenario) Validate() error {
	switch {
	case sc.Events < 1:
		return fmt.Errorf("scenario: events %d: need at least 1", sc.Events)
	case sc.Duplicates < 0 || sc.Duplicates > sc.Events:
		return fmt.Errorf("scenario: duplicates %d: must be 0–events (%d): each duplicates one phase-1 event", sc.Duplicates, sc.Events)
	case sc.OutOfOrder < 0 || sc.OutOfOrder > sc.Events:
		return fmt.Errorf("scenario: out-of-order %d: must be 0–events (%d): each goes to one phase-1 service", sc.OutOfOrder, sc.Events)
	case sc.Poison < 0:
		return fmt.Errorf("scenario: poison %d: must be 0 or more", sc.Poison)
	case sc.Settle <= 0:
		return fmt.Errorf("scenario: settle %s: must be positive", sc.Settle)
	}
	return nil
}

// systemEvent is the service-health payload.
type systemEvent struct {
	EventID    string `json:"eventId"`
	Service    string `json:"service"`
	Status     string `json:"status"`
	ProducedAt string `json:"producedAt"`
	Sequence   int    `json:"sequence"`
	Region     string `json:"region"`
}

// Run plays the scenario on env and returns its report. It returns an
// error only when it cannot run (publishing fails); a phase that does not
// settle within Settle is reported in the rows as pending, not as an error.
func (sc Scenario) Run(ctx context.Context, env *Env) (Report, error) {
	if err := sc.Validate(); err != nil {
		return Report{}, err
	}
	if sc.Now == nil {
		sc.Now = time.Now
	}
	base := sc.Now().UTC().Truncate(time.Second)
	// A batch is the messages of one phase for one pipeline; sample marks
	// those that are the team's samples (to report the ones refused).
	type batch struct {
		data   [][]byte
		sample []Sample
	}
	events := func(p string, n, seq int, at time.Time, tag string) batch {
		var b batch
		for i := range n {
			d, _ := json.Marshal(systemEvent{EventID: fmt.Sprintf("%s-%s-%d", p, tag, i), Service: fmt.Sprintf("%s-svc-%03d", p, i),
				Status: tag, ProducedAt: at.Format(time.RFC3339Nano), Sequence: seq, Region: "local"})
			b.data = append(b.data, d)
		}
		return b
	}
	samples := func(s []Sample) batch {
		b := batch{sample: s}
		for _, x := range s {
			b.data = append(b.data, x.Data)
		}
		return b
	}
	poison := func() batch {
		var b batch
		for i := range sc.Poison {
			if i%2 == 1 {
				b.data = append(b.data, fmt.Appendf(nil, `{"unexpected":"shape","n":%d}`, i))
			} else {
				b.data = append(b.data, fmt.Appendf(nil, "not json %d", i))
			}
		}
		return b
	}
	phases := []struct {
		name    string
		batches func(p string) []batch
	}{
		{"events", func(p string) []batch {
			if s, ok := sc.Samples[p]; ok {
				return []batch{samples(s)}
			}
			return []batch{events(p, sc.Events, 2, base, "healthy")}
		}},
		{"duplicates, out-of-order, poison", func(p string) []batch {
			if s, ok := sc.Samples[p]; ok {
				return []batch{{data: samples(s[:min(sc.Duplicates, len(s))]).data}, poison()}
			}
			return []batch{events(p, sc.Duplicates, 2, base, "healthy"), events(p, sc.OutOfOrder, 1, base.Add(-time.Minute), "starting"), poison()}
		}},
		{"store outage", func(p string) []batch {
			if s, ok := sc.Samples[p]; ok {
				return []batch{{data: samples(s).data}}
			}
			return []batch{events(p, sc.Events, 3, base.Add(time.Minute), "degraded")}
		}},
	}
	sampleOf := map[string]Sample{} // message id -> sample, phase 1
	for i, ph := range phases {
		outage := ph.name == "store outage"
		if outage {
			env.Outage.Set(true)
		}
		for _, p := range env.Topology.Pipelines {
			for _, b := range ph.batches(p.Name) {
				for n, data := range b.data {
					id, err := env.Publish(ctx, p.Name, data, map[string]string{"source": "eventpipe-dev"})
					if err != nil {
						env.Outage.Set(false)
						return Report{}, err
					}
					if b.sample != nil {
						sampleOf[id] = b.sample[n]
					}
				}
			}
		}
		if outage {
			sleep(ctx, sc.Outage)
			env.Outage.Set(false)
		}
		label := fmt.Sprintf("phase %d/%d (%s)", i+1, len(phases), ph.name)
		if !sc.settle(ctx, env, label) {
			break // reported as pending in the rows
		}
	}
	return Report{Rows: env.Tally.Rows(env.Topology), Rejected: env.Tally.rejected(env.Topology, sampleOf)}, nil
}

// settle waits until every published message has a final state, printing a
// progress line every Tick. It reports whether everything settled.
func (sc Scenario) settle(ctx context.Context, env *Env, label string) bool {
	deadline := time.Now().Add(sc.Settle)
	tick := sc.Tick
	if tick <= 0 {
		tick = time.Second
	}
	lastPrint := time.Now()
	for {
		rows := env.Tally.Rows(env.Topology)
		done := true
		for _, r := range rows {
			done = done && r.Settled()
		}
		if sc.Progress != nil && (done || time.Since(lastPrint) >= tick) {
			fmt.Fprintln(sc.Progress, ProgressLine(label, rows))
			lastPrint = time.Now()
		}
		if done {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		sleep(ctx, 20*time.Millisecond)
	}
}

// ProgressLine summarises rows in one line.
func ProgressLine(label string, rows []Row) string {
	var pub, pending, retried, dlq int
	for _, r := range rows {
		pub += r.Published
		pending += len(r.Pending)
		retried += r.Retried
		dlq += r.DeadLettered
	}
	return fmt.Sprintf("dev: %s: %d/%d deliveries settled, %d retried, %d dead-lettered", label, pub-pending, pub, retried, dlq)
}
