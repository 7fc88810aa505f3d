package devpipe

import (
	"encoding/json"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/eventpipe/eventpipe/consumer/logfields"
)

// Final states of a message on one subscription.
const (
	StateApplied      = "applied"
	StateDuplicate    = "duplicate"
	StateStale        = "stale"
	StateDeadLettered = "dead-lettered"
	StatePoisonAcked  = "poison-acked" // poison on a subscription without DLQ: acked, kept in {prefix}poison
)

// Tally follows every published message on every subscription to its final
// state, from the consumers' own JSON log lines (one per delivery) and from
// the dead-letter queues. It is safe for concurrent use.
type Tally struct {
	mu        sync.Mutex
	topicSubs map[string][]string          // topic -> subscriptions on it
	published map[string][]string          // subscription -> message ids, in publish order
	known     map[string]bool              // topic + "\x00" + message id of every published message recorded
	final     map[string]map[string]string // subscription -> message id -> first final state
	retried   map[string]int               // subscription -> deliveries nacked
	reasons   map[string]map[string]string // subscription -> message id -> the consumer's error for it as poison
	filtered  map[string]bool              // subscriptions with a filter: not every message reaches them
}

// NewTally returns a tally for the topology.
func NewTally(t Topology) *Tally {
	tl := &Tally{topicSubs: map[string][]string{}, published: map[string][]string{}, known: map[string]bool{},
		final: map[string]map[string]string{}, retried: map[string]int{}, reasons: map[string]map[string]string{}, filtered: map[string]bool{}}
	for _, p := range t.Pipelines {
		for _, s := range p.Subscriptions {
			tl.topicSubs[p.Topic] = append(tl.topicSubs[p.Topic], s.Name)
			tl.final[s.Name] = map[string]string{}
			tl.filtered[s.Name] = s.Filter != ""
		}
	}
	return tl
}

// Published records a message published to topic; recording it again does nothing.
func (t *Tally) Published(topic, id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := topic + "\x00" + id
	if t.known[key] {
		return
	}
	t.known[key] = true
	for _, s := range t.topicSubs[topic] {
		t.published[s] = append(t.published[s], id)
	}
}

// settle records id's final state on sub unless it has one already (a
// redelivery racing an ack can be seen twice; the first answer counts).
func (t *Tally) settle(sub, id, state string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m, ok := t.final[sub]
	if !ok {
		m = map[string]string{}
		t.final[sub] = m
	}
	if _, done := m[id]; !done {
		m[id] = state
	}
}

// DeadLettered records that id went to sub's dead-letter topic.
func (t *Tally) DeadLettered(sub, id string) { t.settle(sub, id, StateDeadLettered) }

// line is the part of a consumer log line the tally reads.
type line struct {
	Subscription string `json:"subscription"`
	MessageID    string `json:"messageId"`
	Outcome      string `json:"outcome"`
	AckAction    string `json:"ack_action"`
	Error        string `json:"error"`
}

// Observe reads one consumer log line. Acked deliveries are final; nacked
// ones count as retried.
func (t *Tally) Observe(b []byte) {
	var l line
	if json.Unmarshal(b, &l) != nil || l.Subscription == "" || l.MessageID == "" {
		return
	}
	if l.Outcome == logfields.OutcomePoison && l.Error != "" {
		t.mu.Lock()
		if t.reasons[l.Subscription] == nil {
			t.reasons[l.Subscription] = map[string]string{}
		}
		t.reasons[l.Subscription][l.MessageID] = l.Error
		t.mu.Unlock()
	}
	switch l.AckAction {
	case logfields.AckActionNack:
		t.mu.Lock()
		t.retried[l.Subscription]++
		t.mu.Unlock()
	case logfields.AckActionAck:
		state, final := map[string]string{logfields.OutcomeApplied: StateApplied, logfields.OutcomeDuplicate: StateDuplicate,
			logfields.OutcomeStale: StateStale, logfields.OutcomePoison: StatePoisonAcked}[l.Outcome]
		if final {
			t.settle(l.Subscription, l.MessageID, state)
		}
	}
}

// Writer returns an io.Writer for the consumers' log output: every line is
// observed, then written to w (nil: discarded).
func (t *Tally) Writer(w io.Writer) io.Writer {
	if w == nil {
		return NewLineWriter(t.Observe)
	}
	return io.MultiWriter(NewLineWriter(t.Observe), w)
}

// Row is one subscription's account.
type Row struct {
	Pipeline     string `json:"pipeline"`
	Subscription string `json:"subscription"`
	Published    int    `json:"published"`
	Applied      int    `json:"applied"`
	Duplicate    int    `json:"duplicate"`
	Stale        int    `json:"stale"`
	DeadLettered int    `json:"deadLettered"`
	PoisonAcked  int    `json:"poisonAcked"`
	Retried      int    `json:"retried"`
	// InDLQ is how many messages the subscription's dead-letter subscription
	// holds now (a replay takes them out; dead-lettered counts every one ever);
	// set by Env.Rows.
	InDLQ int `json:"inDLQ"`
	// Pending are published messages with no final state yet: lost if the
	// run is over.
	Pending []string `json:"pending,omitempty"`
	// Filtered subscriptions see only what their filter passes; they are
	// not checked.
	Filtered bool `json:"filtered,omitempty"`
}

// Settled reports whether every published message reached a final state.
func (r Row) Settled() bool { return r.Filtered || len(r.Pending) == 0 }

// Rows returns the account of every subscription, by pipeline then key.
func (t *Tally) Rows(topo Topology) []Row {
	t.mu.Lock()
	defer t.mu.Unlock()
	var rows []Row
	for _, p := range topo.Pipelines {
		for _, s := range p.Subscriptions {
			r := Row{Pipeline: p.Name, Subscription: s.Key, Published: len(t.published[s.Name]), Retried: t.retried[s.Name], Filtered: t.filtered[s.Name]}
			count := map[string]*int{StateApplied: &r.Applied, StateDuplicate: &r.Duplicate, StateStale: &r.Stale,
				StateDeadLettered: &r.DeadLettered, StatePoisonAcked: &r.PoisonAcked}
			final := t.final[s.Name]
			for _, state := range final {
				*count[state]++ // settle records only these states
			}
			for _, id := range t.published[s.Name] {
				if _, ok := final[id]; !ok {
					r.Pending = append(r.Pending, id)
				}
			}
			sort.Strings(r.Pending)
			rows = append(rows, r)
		}
	}
	return rows
}

// rejected returns the messages of samples (by message id) that ended poison
// on a subscription of topo, in the order of their sources.
func (t *Tally) rejected(topo Topology, samples map[string]Sample) []Rejected {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Rejected
	for _, p := range topo.Pipelines {
		for _, s := range p.Subscriptions {
			for id, state := range t.final[s.Name] {
				smp, ok := samples[id]
				if ok && (state == StateDeadLettered || state == StatePoisonAcked) {
					out = append(out, Rejected{Sample: smp, Pipeline: p.Name, Subscription: s.Key, State: state, Reason: t.reasons[s.Name][id]})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		fi, li := splitSource(out[i].Sample.Source)
		fj, lj := splitSource(out[j].Sample.Source)
		if fi != fj {
			return fi < fj
		}
		if li != lj {
			return li < lj
		}
		return out[i].Subscription < out[j].Subscription
	})
	return out
}

// splitSource splits a sample's FILE:LINE.
func splitSource(src string) (string, int) {
	i := strings.LastIndex(src, ":")
	if i < 0 {
		return src, 0
	}
	n, _ := strconv.Atoi(src[i+1:])
	return src[:i], n
}
