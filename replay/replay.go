// Package replay moves messages from a dead-letter subscription back to the
// topic they came from, so that a fixed consumer can process them again.
//
// Safety rule: a dead-lettered message is acknowledged only after its copy has
// been published to the source topic and the publish call has returned a
// server-assigned message id. A crash at any point therefore loses nothing: at
// worst a message is republished twice, which the idempotent consumer absorbs
// (the payload's logical event id is unchanged; the original message id travels
// in an attribute).
package replay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"time"

	"cloud.google.com/go/pubsub/v2"
	pubsubpb "cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

// Attribute keys added to every replayed message. Existing attributes are kept.
const (
	AttrOriginalMessageID   = "eventpipe_replay_original_message_id"
	AttrOriginalPublishTime = "eventpipe_replay_original_publish_time"
	AttrDeadLetterSub       = "eventpipe_replay_dlq_subscription"
	AttrDeliveryAttempt     = "eventpipe_replay_delivery_attempt"
	AttrReplayedAt          = "eventpipe_replay_time"
)

// Options configure one replay run.
type Options struct {
	// Subscription is the dead-letter subscription to drain:
	// projects/P/subscriptions/S.
	Subscription string
	// Topic is where messages go back to: projects/P/topics/T.
	Topic string
	// Match keeps only messages whose attributes contain every key=value pair.
	// Messages that do not match are left in the DLQ untouched.
	Match map[string]string
	// Max is the largest number of messages to replay; 0 means no limit.
	Max int
	// DryRun reports what would be replayed, publishes nothing and acks nothing.
	DryRun bool
	// Rate limits republishing to this many messages per second; 0 means no limit.
	Rate float64
	// BatchSize is the number of messages asked for per pull (default 100).
	BatchSize int
	// HoldDeadline is how long pulled-but-not-replayed messages stay invisible
	// while the run goes on (default 60 s, Pub/Sub's range is 10–600 s). At the
	// end of the run they are released at once.
	HoldDeadline time.Duration
	// EmptyPulls ends the run after this many consecutive pulls return nothing
	// (default 3): Pub/Sub's unary pull may return empty while messages exist.
	EmptyPulls int
	// Now returns the replay time stamped on messages (default time.Now).
	Now func() time.Time
	// Logger receives one line per message (default slog.Default()).
	Logger *slog.Logger
}

// Result counts what a run did.
type Result struct {
	Pulled   int // distinct messages seen in the DLQ
	Replayed int // republished and acked (or, in a dry run, would have been)
	Skipped  int // did not match; left in the DLQ
	Failed   int // republish failed; left in the DLQ
}

// Validate reports every problem with the options at once.
func (o Options) Validate() error {
	var errs []error
	if !validResource(o.Subscription, "subscriptions") {
		errs = append(errs, fmt.Errorf("replay: subscription %q: want projects/PROJECT/subscriptions/NAME (the DLQ subscription to drain)", o.Subscription))
	}
	if !validResource(o.Topic, "topics") {
		errs = append(errs, fmt.Errorf("replay: topic %q: want projects/PROJECT/topics/NAME (the source topic to republish to)", o.Topic))
	}
	if o.Max < 0 {
		errs = append(errs, fmt.Errorf("replay: max %d: must be 0 (no limit) or positive", o.Max))
	}
	if o.Rate < 0 {
		errs = append(errs, fmt.Errorf("replay: rate %g: must be 0 (no limit) or a positive number of messages per second", o.Rate))
	}
	if o.BatchSize < 0 || o.BatchSize > 1000 {
		errs = append(errs, fmt.Errorf("replay: batch size %d: must be 1–1000 (0 for the default 100)", o.BatchSize))
	}
	if o.HoldDeadline != 0 && (o.HoldDeadline < 10*time.Second || o.HoldDeadline > 600*time.Second) {
		errs = append(errs, fmt.Errorf("replay: hold deadline %s: must be 10s–600s (Pub/Sub's ack deadline range)", o.HoldDeadline))
	}
	return errors.Join(errs...)
}

func validResource(name, kind string) bool {
	parts := strings.Split(name, "/")
	return len(parts) == 4 && parts[0] == "projects" && parts[1] != "" && parts[2] == kind && parts[3] != ""
}

func (o Options) withDefaults() Options {
	if o.BatchSize == 0 {
		o.BatchSize = 100
	}
	if o.HoldDeadline == 0 {
		o.HoldDeadline = 60 * time.Second
	}
	if o.EmptyPulls == 0 {
		o.EmptyPulls = 3
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Run drains opts.Subscription into opts.Topic through client and returns
// what it did. It stops when the DLQ is empty, Max is reached or ctx is done;
// messages it held back (filtered out, dry run, failed) are released before
// it returns. It publishes with the synchronous Publish RPC rather than the
// batching Publisher, so that each message's publish is known to have
// succeeded before its DLQ copy is acked; the client's project does not
// constrain the full names in opts.
func Run(ctx context.Context, client *pubsub.Client, opts Options) (Result, error) {
	if err := opts.Validate(); err != nil {
		return Result{}, err
	}
	o := opts.withDefaults()
	r := &run{client: client, o: o, held: map[string]string{}, seen: map[string]bool{}}
	if o.Rate > 0 {
		r.interval = time.Duration(float64(time.Second) / o.Rate)
	}
	err := r.loop(ctx)
	// Release held messages even when ctx is done: use a fresh, bounded context.
	relCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if relErr := r.release(relCtx); relErr != nil {
		err = errors.Join(err, relErr)
	}
	return r.res, err
}

type run struct {
	client   *pubsub.Client
	o        Options
	res      Result
	held     map[string]string // message id -> latest ack id, to release at the end
	seen     map[string]bool   // message ids already decided in this run
	interval time.Duration
	last     time.Time
}

func (r *run) loop(ctx context.Context) error {
	empty := 0
	for r.o.Max == 0 || r.res.Replayed < r.o.Max {
		resp, err := r.client.SubscriptionAdminClient.Pull(ctx, &pubsubpb.PullRequest{Subscription: r.o.Subscription, MaxMessages: int32(r.o.BatchSize)})
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("replay: pull %s: %w", r.o.Subscription, ctx.Err())
			}
			return fmt.Errorf("replay: pull %s: %w", r.o.Subscription, err)
		}
		if len(resp.GetReceivedMessages()) == 0 {
			empty++
			if empty >= r.o.EmptyPulls {
				return nil
			}
			continue
		}
		empty = 0
		for _, rm := range resp.GetReceivedMessages() {
			if err := r.handle(ctx, rm); err != nil {
				return err
			}
		}
	}
	return nil
}

// handle decides one received message: replay it, or hold it back.
func (r *run) handle(ctx context.Context, rm *pubsubpb.ReceivedMessage) error {
	m := rm.GetMessage()
	id := m.GetMessageId()
	log := r.o.Logger.With("messageId", id, "subscription", r.o.Subscription, "topic", r.o.Topic)
	if r.seen[id] || (r.o.Max > 0 && r.res.Replayed >= r.o.Max) {
		// Redelivered while held, or over the limit: keep it invisible until release.
		return r.hold(ctx, id, rm.GetAckId())
	}
	r.seen[id] = true
	r.res.Pulled++
	if !matches(m.GetAttributes(), r.o.Match) {
		r.res.Skipped++
		log.Info("replay skipped: attributes do not match", "outcome", "skipped")
		return r.hold(ctx, id, rm.GetAckId())
	}
	if r.o.DryRun {
		r.res.Replayed++
		log.Info("replay dry run: would republish", "outcome", "would_replay")
		return r.hold(ctx, id, rm.GetAckId())
	}
	if err := r.wait(ctx); err != nil {
		return err
	}
	out := &pubsubpb.PubsubMessage{
		Data:        m.GetData(),
		Attributes:  replayAttributes(rm, r.o.Subscription, r.o.Now()),
		OrderingKey: m.GetOrderingKey(),
	}
	resp, err := r.client.TopicAdminClient.Publish(ctx, &pubsubpb.PublishRequest{Topic: r.o.Topic, Messages: []*pubsubpb.PubsubMessage{out}})
	if err == nil && len(resp.GetMessageIds()) != 1 {
		err = fmt.Errorf("publish returned %d message ids, want 1", len(resp.GetMessageIds()))
	}
	if err != nil {
		r.res.Failed++
		log.Error("replay failed: republish did not succeed; message stays in the DLQ", "outcome", "failed", "error", err.Error())
		if ctx.Err() != nil {
			return fmt.Errorf("replay: publish to %s: %w", r.o.Topic, ctx.Err())
		}
		return r.hold(ctx, id, rm.GetAckId())
	}
	// Only now is it safe to remove the message from the DLQ.
	if err := r.client.SubscriptionAdminClient.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{Subscription: r.o.Subscription, AckIds: []string{rm.GetAckId()}}); err != nil {
		// The copy is published; the DLQ message will come back and be replayed
		// again, which the idempotent consumer tolerates. Report, do not hide it.
		return fmt.Errorf("replay: ack %s after republishing it as %s: %w", id, resp.GetMessageIds()[0], err)
	}
	r.res.Replayed++
	log.Info("replayed", "outcome", "replayed", "newMessageId", resp.GetMessageIds()[0])
	return nil
}

// hold keeps a message invisible for the rest of the run.
func (r *run) hold(ctx context.Context, id, ackID string) error {
	r.held[id] = ackID
	err := r.client.SubscriptionAdminClient.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{
		Subscription: r.o.Subscription, AckIds: []string{ackID}, AckDeadlineSeconds: int32(r.o.HoldDeadline / time.Second),
	})
	if err != nil {
		return fmt.Errorf("replay: extend ack deadline of %s: %w", id, err)
	}
	return nil
}

// release makes every held message available again at once (ack deadline 0).
func (r *run) release(ctx context.Context) error {
	if len(r.held) == 0 {
		return nil
	}
	ids := make([]string, 0, len(r.held))
	for _, ackID := range r.held {
		ids = append(ids, ackID)
	}
	if err := r.client.SubscriptionAdminClient.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{Subscription: r.o.Subscription, AckIds: ids}); err != nil {
		return fmt.Errorf("replay: release %d held messages (they return after their ack deadline): %w", len(ids), err)
	}
	return nil
}

// wait enforces the rate limit between publishes.
func (r *run) wait(ctx context.Context) error {
	if r.interval == 0 {
		return nil
	}
	if !r.last.IsZero() {
		if d := r.interval - time.Since(r.last); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("replay: rate limit wait: %w", ctx.Err())
			case <-t.C:
			}
		}
	}
	r.last = time.Now()
	return nil
}

func matches(attrs, want map[string]string) bool {
	for k, v := range want {
		if got, ok := attrs[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func replayAttributes(rm *pubsubpb.ReceivedMessage, sub string, now time.Time) map[string]string {
	m := rm.GetMessage()
	attrs := map[string]string{}
	maps.Copy(attrs, m.GetAttributes())
	attrs[AttrOriginalMessageID] = m.GetMessageId()
	if pt := m.GetPublishTime(); pt != nil {
		attrs[AttrOriginalPublishTime] = pt.AsTime().UTC().Format(time.RFC3339Nano)
	}
	attrs[AttrDeadLetterSub] = sub
	if rm.GetDeliveryAttempt() > 0 {
		attrs[AttrDeliveryAttempt] = fmt.Sprint(rm.GetDeliveryAttempt())
	}
	attrs[AttrReplayedAt] = now.UTC().Format(time.RFC3339Nano)
	return attrs
}
