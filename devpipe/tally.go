package devpipe

import (
	"encoding/json"
	"io"
	"sort"
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
	final     map[string]map[string]string // subscription -> message id -> first final state
	retried   map[string]int               // subscription -> deliveries nacked
	filtered  map[string]bool              // subscriptions with a filter: not every message reaches them
}

// NewTally returns a tally for the topology.
func NewTally(t Topology) *Tally {
	tl := &Tally{topicSubs: map[string][]string{}, published: map[string][]string{}, final: map[string]map[string]string{},
		retried: map[string]int{}, filtered: map[string]bool{}}
	for _, p := range t.Pipelines {
		for _, s := range p.Subscriptions {
			tl.topicSubs[p.Topic] = append(tl.topicSubs[p.Topic], s.Name)
			tl.final[s.Name] = map[string]string{}
			tl.filtered[s.Name] = s.Filter != ""
		}
	}
	return tl
}

// Published records a message published to topic.
func (t *Tally) Published(topic, id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
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
}

// Observe reads one consumer log line. Acked deliveries are final; nacked
// ones count as retried.
func (t *Tally) Observe(b []byte) {
	var l line
	if json.Unmarshal(b, &l) != nil || l.Subscription == "" || l.MessageID == "" {
		return
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
