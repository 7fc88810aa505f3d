package engine

import (
	"cmp"
	"strings"
	"time"
)

// orderKey orders the versions of one aggregate. It is the tuple (producer
// sequence, event time, publish time, message id), compared left to right,
// with an absent sequence below every present one. Where a producer issues a
// per-aggregate sequence it therefore decides (incoming <= current is
// ignored); without one the event time does, and the publish time and the
// message id make ties deterministic, so any permutation of a set of
// deliveries converges to the same final document.
type orderKey struct {
	hasSeq      bool
	seq         int64
	eventTime   time.Time
	publishTime time.Time
	messageID   string
}

func (a orderKey) compare(b orderKey) int {
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
	return strings.Compare(a.messageID, b.messageID)
}

// Meta field names on a materialised document (under MetaField).
const (
	metaEventKey    = "eventKey"
	metaFingerprint = "fingerprint"
	metaMessageID   = "messageId"
	metaEventTime   = "eventTime"
	metaPublishTime = "publishTime"
	metaSequence    = "sequence"
	metaAppliedAt   = "appliedAt"
)

func (k orderKey) toMeta(m map[string]any) {
	if k.hasSeq {
		m[metaSequence] = k.seq
	}
	m[metaEventTime] = k.eventTime.UTC()
	m[metaPublishTime] = k.publishTime.UTC()
	m[metaMessageID] = k.messageID
}

func orderFromMeta(m map[string]any) orderKey {
	return orderKey{
		hasSeq:      has(m, metaSequence),
		seq:         i64(m, metaSequence),
		eventTime:   tm(m, metaEventTime),
		publishTime: tm(m, metaPublishTime),
		messageID:   str(m, metaMessageID),
	}
}
