package engine

import (
	"cmp"
	"strings"
	"time"
)

// ClockTolerance is how far ahead of the time a message is received its
// publish time is trusted: a transport stamps the publish time on its own
// clock, which may run a little ahead of the consumer's. A publish time
// further ahead is replaced by the time received (TrustedPublishTime), so
// that no message can push the ordering window (Ordering.Window) into the
// future. Pub/Sub's servers and Cloud Run's instances keep their clocks
// within milliseconds of true time; five seconds covers a machine whose
// clock has drifted without pretending to be an hour ahead.
const ClockTolerance = 5 * time.Second

// TrustedPublishTime is the publish time that orders a message received at
// received: its own, unless that is more than ClockTolerance ahead of
// received, when received stands in for it. A zero publish time (the
// transport gave none) stays zero: it counts as published before every
// other.
func TrustedPublishTime(published, received time.Time) time.Time {
	published = published.UTC().Truncate(time.Microsecond)
	if published.After(received.Add(ClockTolerance)) {
		return received.UTC().Truncate(time.Microsecond)
	}
	return published
}

// Version is what orders one version of an aggregate (a latest-state
// document, or the last event a handler completed for an aggregate)
// against another: the fields of one event, as its payload carries them
// (sequence, event time, event key, fingerprint), which are the same in
// every copy of the event, and the publish time of the copy, as trusted
// (TrustedPublishTime), which only decides how far apart two versions
// were published. Every field is stored with the version (under MetaField
// on a document, or on a lease route's aggregate record), so the decision
// is a comparison of stored fields with incoming ones.
type Version struct {
	// HasSequence says the producer gave a per-aggregate sequence.
	HasSequence bool
	Sequence    int64
	// EventTime is the event's own time, as sent (zero when it has none).
	EventTime time.Time
	// PublishTime is this copy's publish time, as trusted.
	PublishTime time.Time
	// EventKey and Fingerprint tell apart two events whose other fields
	// are all equal (they are empty where a route ranks such events equal:
	// a lease route's sequence guard).
	EventKey    string
	Fingerprint string
}

// Ordering is the one ordering guard of every route that orders (a
// latest-state route's documents, a lease route's sequence guard). Its
// invariant, with W the window:
//
//  1. Convergence. Versions published within W of each other are
//     ordered by the tuple (HasSequence, Sequence, EventTime, EventKey,
//     Fingerprint), left to right: a per-aggregate sequence, where the
//     producer has one, decides whatever the clocks say; without one the
//     event time does; the event key and fingerprint make ties
//     deterministic. No field of the tuple differs between copies of one
//     event (a republish gets a new message id and publish time, never a
//     new payload), so every copy ranks the same, whichever arrives first,
//     and every order of delivery of versions published within one window
//     ends with the same version stored.
//  2. No pin beyond the window. A version V published more than W after
//     the stored version S replaces it unless V's own event time is before
//     both S's event time and S's publish time (a DLQ replay or a
//     republished copy of an event older than S: it keeps its old event
//     time); a sequence only helps V, when it is ahead of S's by at most
//     MaxSequenceJump. So whatever S carries in its sequence, event time,
//     event key or fingerprint, and however far ahead it claims to have
//     been published (TrustedPublishTime bounds that to ClockTolerance past
//     its receipt), it makes stale no update published more than W after
//     it whose event time is not before S's publish time — every update
//     whose event time is within W of its own publish time. A chain of
//     hostile versions, each published within W of the one before, holds
//     its aggregate while the chain lasts, and never longer than W after
//     the last of them.
//  3. Symmetry. A version published more than W before the stored one (a
//     late delivery) replaces it only if the stored one, arriving after
//     it, would not have replaced it: Compare is antisymmetric, and 0 only
//     for two copies of one event.
//
// Across the window no total order can hold (each update beats what was
// published a window before it), so convergence is promised inside it.
type Ordering struct {
	// Window is W: Config.MaxEventSkew.
	Window time.Duration
	// MaxSequenceJump is the largest sequence step trusted across the
	// window (Config.MaxSequenceJump, Write.MaxSequenceJump).
	MaxSequenceJump uint64
}

// Compare orders a against b: +1 when a is newer, -1 when b is, 0 for
// copies of one event. See Ordering for the rules.
func (o Ordering) Compare(a, b Version) int {
	switch {
	case a.PublishTime.After(b.PublishTime.Add(o.Window)):
		if o.newerAcross(a, b) {
			return 1
		}
		return -1
	case b.PublishTime.After(a.PublishTime.Add(o.Window)):
		if o.newerAcross(b, a) {
			return -1
		}
		return 1
	}
	return a.compareInWindow(b)
}

// Supersedes reports whether incoming replaces stored.
func (o Ordering) Supersedes(incoming, stored Version) bool { return o.Compare(incoming, stored) > 0 }

// newerAcross reports whether late, published more than the window after
// early, is newer than early: ahead of it by a trusted sequence step, or
// not older by its event time than both early's event time and early's
// publish time.
func (o Ordering) newerAcross(late, early Version) bool {
	if late.HasSequence && early.HasSequence && late.Sequence > early.Sequence &&
		uint64(late.Sequence)-uint64(early.Sequence) <= o.MaxSequenceJump {
		return true
	}
	bar := early.EventTime
	if early.PublishTime.Before(bar) {
		bar = early.PublishTime
	}
	return !late.EventTime.Before(bar)
}

// jump reports whether a and b both have sequences more than
// MaxSequenceJump apart.
func (o Ordering) jump(a, b Version) bool {
	if !a.HasSequence || !b.HasSequence {
		return false
	}
	d := uint64(a.Sequence) - uint64(b.Sequence)
	if a.Sequence < b.Sequence {
		d = uint64(b.Sequence) - uint64(a.Sequence)
	}
	return d > o.MaxSequenceJump
}

// compareInWindow is the tuple order of versions published within the
// window of each other (see Ordering): nothing in it differs between
// copies of one event. Strings compare bytewise (PostgreSQL: COLLATE "C").
func (a Version) compareInWindow(b Version) int {
	if a.HasSequence != b.HasSequence {
		if a.HasSequence {
			return 1
		}
		return -1
	}
	if c := cmp.Compare(a.Sequence, b.Sequence); c != 0 {
		return c
	}
	if c := a.EventTime.Compare(b.EventTime); c != 0 {
		return c
	}
	if c := strings.Compare(a.EventKey, b.EventKey); c != 0 {
		return c
	}
	return strings.Compare(a.Fingerprint, b.Fingerprint)
}

// Meta field names on a materialised document (under MetaField) and on a
// lease route's aggregate record. The sequence, event time, publish time,
// event key and fingerprint are a Version (fromMeta); the message id and
// the time applied are kept to tell which copy was applied, and order
// nothing.
const (
	metaEventKey    = "eventKey"
	metaFingerprint = "fingerprint"
	metaMessageID   = "messageId"
	metaEventTime   = "eventTime"
	metaPublishTime = "publishTime"
	metaSequence    = "sequence"
	metaAppliedAt   = "appliedAt"
)

// toMeta records v's fields but the event key and fingerprint, which the
// caller records.
func (v Version) toMeta(m map[string]any) {
	if v.HasSequence {
		m[metaSequence] = v.Sequence
	}
	m[metaEventTime] = v.EventTime.UTC()
	m[metaPublishTime] = v.PublishTime.UTC()
}

// versionFromMeta reads a Version recorded by toMeta (and the event key
// and fingerprint recorded beside it).
func versionFromMeta(m map[string]any) Version {
	return Version{
		HasSequence: has(m, metaSequence),
		Sequence:    i64(m, metaSequence),
		EventTime:   tm(m, metaEventTime),
		PublishTime: tm(m, metaPublishTime),
		EventKey:    str(m, metaEventKey),
		Fingerprint: str(m, metaFingerprint),
	}
}
