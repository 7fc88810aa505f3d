package engine

import (
	"cmp"
	"strings"
	"time"

	"github.com/eventpipe/eventpipe/consumer/store"
)

// orderKey is what orders one version of an aggregate against another:
// its ordering fields (toMeta's) as trusted (Engine.orderingTime,
// Engine.orderingPublishTime), and its event key and fingerprint, which
// only tell apart two events whose ordering fields are all equal.
type orderKey struct {
	hasSeq      bool
	seq         int64
	eventTime   time.Time
	publishTime time.Time
	messageID   string
	eventKey    string
	fingerprint string
}

// ordering compares versions of one aggregate (see supersedes).
type ordering struct {
	// window is Config.MaxEventSkew: how long a version may hold back
	// updates published after it by its sequence or event time alone.
	window time.Duration
	// maxJump is the largest sequence step trusted across the window
	// (Config.MaxSequenceJump, Write.MaxSequenceJump).
	maxJump uint64
}

// compare orders a against b (-1, 0, +1): a is newer than b when it is
// greater. It is antisymmetric, and 0 only for the same event.
//
// Inside the window (publish times at most window apart) it is the total
// order of the tuple (has a sequence, sequence, event time, publish time,
// message id, event key, fingerprint), left to right: where a producer
// issues a per-aggregate sequence it decides, whatever the clocks say;
// without one the event time does; the rest make ties deterministic. Being
// a total order of each version's own fields, any permutation of
// deliveries published within one window converges on the same document.
//
// Across the window (one published more than window after the other) the
// later one is newer unless it is older by its event time than the
// earlier one's event time and publish time, both (a DLQ replay, a
// republished event: they keep their event time) — and a sequence only
// counts for the later one, when it is ahead by at most maxJump. So no
// values one message carries in its sequence, event time (which
// orderingTime bounds to window past its publish time), publish time
// (orderingPublishTime bounds it to window past the clock) or message id
// can hold back an update published more than window after it whose own
// event time is within window of its publish time.
func (o ordering) compare(a, b orderKey) int {
	switch {
	case a.publishTime.After(b.publishTime.Add(o.window)):
		if o.newerAcross(a, b) {
			return 1
		}
		return -1
	case b.publishTime.After(a.publishTime.Add(o.window)):
		if o.newerAcross(b, a) {
			return -1
		}
		return 1
	}
	return a.compareInWindow(b)
}

// supersedes reports whether incoming replaces stored.
func (o ordering) supersedes(incoming, stored orderKey) bool { return o.compare(incoming, stored) > 0 }

// newerAcross reports whether late, published more than the window after
// early, is newer than early: ahead of it by a trusted sequence step, or
// not older than both early's event time and its publish time.
func (o ordering) newerAcross(late, early orderKey) bool {
	if late.hasSeq && early.hasSeq && late.seq > early.seq && uint64(late.seq)-uint64(early.seq) <= o.maxJump {
		return true
	}
	bar := early.eventTime
	if early.publishTime.Before(bar) {
		bar = early.publishTime
	}
	return !late.eventTime.Before(bar)
}

// jump reports whether a and b both have sequences more than maxJump apart.
func (o ordering) jump(a, b orderKey) bool {
	if !a.hasSeq || !b.hasSeq {
		return false
	}
	d := uint64(a.seq) - uint64(b.seq)
	if a.seq < b.seq {
		d = uint64(b.seq) - uint64(a.seq)
	}
	return d > o.maxJump
}

// compareInWindow is the tuple order (see ordering.compare).
func (a orderKey) compareInWindow(b orderKey) int {
	if a.hasSeq != b.hasSeq {
		if a.hasSeq {
			return 1
		}
		return -1
	}
	if c := cmp.Compare(a.seq, b.seq); c != 0 {
		return c
	}
	if c := a.eventTime.Compare(b.eventTime); c != 0 {
		return c
	}
	if c := a.publishTime.Compare(b.publishTime); c != 0 {
		return c
	}
	if c := strings.Compare(a.messageID, b.messageID); c != 0 {
		return c
	}
	if c := strings.Compare(a.eventKey, b.eventKey); c != 0 {
		return c
	}
	return strings.Compare(a.fingerprint, b.fingerprint)
}

// Meta field names on a materialised document (under MetaField). All
// but the event key, fingerprint and applied time are ordering fields:
// storetest's ordering case reads them off a written document and fails
// until its generator varies every one.
// The names a store.LatestWriter reads are store's (store.Version*).
const (
	metaEventKey    = store.VersionEventKey
	metaFingerprint = store.VersionFingerprint
	metaMessageID   = store.VersionMessageID
	metaEventTime   = store.VersionEventTime
	metaPublishTime = store.VersionPublishTime
	metaSequence    = store.VersionSequence
	metaAppliedAt   = "appliedAt"
)

// toMeta records k's ordering fields; the event key and fingerprint are
// recorded by the caller.
func (k orderKey) toMeta(m map[string]any) {
	if k.hasSeq {
		m[metaSequence] = k.seq
	}
	m[metaEventTime] = k.eventTime.UTC()
	m[metaPublishTime] = k.publishTime.UTC()
	m[metaMessageID] = k.messageID
}

// version is k as a store.LatestWriter takes it.
func (k orderKey) version() store.Version {
	return store.Version{HasSequence: k.hasSeq, Sequence: k.seq, EventTime: k.eventTime, PublishTime: k.publishTime,
		MessageID: k.messageID, EventKey: k.eventKey, Fingerprint: k.fingerprint}
}

func orderFromMeta(m map[string]any) orderKey {
	return orderKey{
		hasSeq:      has(m, metaSequence),
		seq:         i64(m, metaSequence),
		eventTime:   tm(m, metaEventTime),
		publishTime: tm(m, metaPublishTime),
		messageID:   str(m, metaMessageID),
		eventKey:    str(m, metaEventKey),
		fingerprint: str(m, metaFingerprint),
	}
}
