// Package pull consumes Pub/Sub subscriptions by streaming pull
// (cloud.google.com/go/pubsub/v2) and answers each message by the ack/nack
// rules: ack applied, duplicate, stale and recorded poison; nack transient
// and configuration failures, and poison on dead-letter subscriptions so
// Pub/Sub moves it to the DLQ after maxDeliveryAttempts.
//
// Every ack is sent with AckWithResult and its result awaited: on an
// exactly-once subscription an ack can fail (an expired ack id), and the
// message is then not acked — it is logged as ack_failed, and the
// redelivery is a duplicate for the idempotency engine. On other
// subscriptions the result is immediately successful.
package pull

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/process"
	"github.com/eventpipe/eventpipe/consumer/tracing"
)

// Config configures a Runner.
type Config struct {
	// Client is the Pub/Sub client (it honours PUBSUB_EMULATOR_HOST).
	Client *pubsub.Client
	// Subscriptions are full names, projects/P/subscriptions/S.
	Subscriptions []string
	// Settings is the flow control of every subscription. Leave
	// ShutdownOptions nil: the client's default graceful shutdown waits for
	// in-flight messages and flushes their acks; a timed shutdown can return
	// before the acks are sent (they would be redelivered as duplicates).
	Settings pubsub.ReceiveSettings
	// Processor handles each message.
	Processor *process.Processor
	// HandleTimeout bounds one message's processing. Processing does not
	// stop when Run's context is cancelled (shutdown): in-flight messages
	// finish and are acked or nacked, within this timeout.
	HandleTimeout time.Duration
	// Cut, when set, cancels the processing of the messages in flight when
	// it is done (the shutdown deadline): a message cut short is not acked.
	Cut context.Context
	// StartupRetry is how long after Run starts a subscription that is not
	// there (NotFound) or not readable (PermissionDenied) is tried again
	// instead of stopping the consumer: in a first deployment the
	// subscription or the consumer's grant on it may still be propagating.
	// Default DefaultStartupRetry; negative turns retrying off.
	StartupRetry time.Duration
	// StartupBackoff is the first wait between those tries, doubled up to
	// 30s (default 2s).
	StartupBackoff time.Duration
	// Logger receives the start-up retry lines (default slog.Default()).
	Logger *slog.Logger
}

// Defaults of Config.
const (
	DefaultHandleTimeout  = 60 * time.Second
	DefaultStartupRetry   = 5 * time.Minute
	DefaultStartupBackoff = 2 * time.Second
	maxStartupBackoff     = 30 * time.Second
)

// ValidSubscription reports why name is not a full subscription name.
func ValidSubscription(name string) error {
	parts := strings.Split(name, "/")
	if len(parts) != 4 || parts[0] != "projects" || parts[2] != "subscriptions" || parts[1] == "" || parts[3] == "" {
		return fmt.Errorf("%q is not a full subscription name (fix: use projects/PROJECT/subscriptions/SUBSCRIPTION)", name)
	}
	return nil
}

// Run receives from every subscription until ctx is cancelled, then waits
// for in-flight messages. It returns nil after a clean stop, or the first
// subscription's receive error (e.g. permission denied, missing
// subscription, once Config.StartupRetry has passed).
func Run(ctx context.Context, cfg Config) error {
	if cfg.Client == nil || cfg.Processor == nil {
		return errors.New("pull: Client and Processor are required")
	}
	if cfg.HandleTimeout <= 0 {
		cfg.HandleTimeout = DefaultHandleTimeout
	}
	if cfg.StartupRetry == 0 {
		cfg.StartupRetry = DefaultStartupRetry
	}
	if cfg.StartupBackoff <= 0 {
		cfg.StartupBackoff = DefaultStartupBackoff
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	started := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(cfg.Subscriptions))
	for _, name := range cfg.Subscriptions {
		if err := ValidSubscription(name); err != nil {
			return fmt.Errorf("pull: EVENTPIPE_PULL_SUBSCRIPTIONS: %w", err)
		}
		sub := cfg.Client.Subscriber(name)
		sub.ReceiveSettings = cfg.Settings
		go func() {
			err := receive(ctx, cfg, name, sub, started)
			if err != nil {
				err = fmt.Errorf("pull %s: %w", name, err)
				cancel() // one subscription failing stops all: the process should restart
			}
			errs <- err
		}()
	}
	var first error
	for range cfg.Subscriptions {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// receive receives from sub (named name) until ctx is cancelled or it
// fails. Until cfg.StartupRetry after started, and as long as no message
// came, a subscription that is missing or not readable yet is tried again
// with backoff, each time with a log line saying so; after that its error
// is returned.
func receive(ctx context.Context, cfg Config, name string, sub *pubsub.Subscriber, started time.Time) error {
	backoff := cfg.StartupBackoff
	for {
		var received atomic.Bool
		err := sub.Receive(ctx, func(rctx context.Context, m *pubsub.Message) {
			received.Store(true)
			handle(rctx, cfg, name, m)
		})
		code := status.Code(err)
		waited := time.Since(started)
		if err == nil || received.Load() || code != codes.NotFound && code != codes.PermissionDenied || cfg.StartupRetry < 0 || waited+backoff > cfg.StartupRetry {
			return err
		}
		cfg.Logger.WarnContext(ctx, "pull subscription not readable yet; retrying while it is created or the consumer's grant propagates",
			"subscription", name, "code", code.String(), "error", err.Error(), "retry_in", backoff.String(),
			"gives_up_in", (cfg.StartupRetry - waited).Round(time.Second).String())
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		backoff = min(2*backoff, maxStartupBackoff)
	}
}

// message converts a pulled message to the consumer's view.
func message(sub string, m *pubsub.Message) envelope.Message {
	msg := envelope.Message{ID: m.ID, Data: m.Data, Attributes: m.Attributes, PublishTime: m.PublishTime,
		OrderingKey: m.OrderingKey, Subscription: sub}
	if msg.Attributes == nil {
		msg.Attributes = map[string]string{}
	}
	if m.DeliveryAttempt != nil {
		msg.DeliveryAttempt = *m.DeliveryAttempt
	}
	return msg
}

func handle(rctx context.Context, cfg Config, sub string, m *pubsub.Message) {
	if rctx.Err() != nil {
		// Shutting down (Run's context ended): take no new message, so no
		// work starts that the shutdown deadline could cut. Pub/Sub
		// delivers it again, to another instance.
		m.Nack()
		cfg.Logger.LogAttrs(rctx, slog.LevelWarn, "pulled message nacked: shutting down",
			slog.String(logfields.Outcome, logfields.OutcomeRetry), slog.String(logfields.ErrorType, logfields.ErrorTypeTransient),
			slog.String(logfields.AckAction, logfields.AckActionNack), slog.String(logfields.MessageID, m.ID), slog.String("subscription", sub))
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(rctx), cfg.HandleTimeout)
	defer cancel()
	if cfg.Cut != nil {
		defer context.AfterFunc(cfg.Cut, cancel)()
	}
	p := cfg.Processor
	msg := message(sub, m)
	var span trace.Span
	if tr := p.Tracer(); tr.Enabled() {
		ctx, span = tr.StartMessage(ctx, tracing.IngressPull, &msg, nil)
	}
	var res *process.Result
	if err := envelope.DecodePulled(&msg); err != nil {
		res = p.Reject(ctx, &msg, err)
	} else {
		res = p.Process(ctx, &msg)
	}
	action, ackErr := answer(ctx, m, res)
	if ackErr != nil {
		// Not acked: Pub/Sub will redeliver, and the engine will find the
		// effect already applied. Log it as an error so the rate is visible.
		res.Level = slog.LevelError
		p.Log(ctx, res, slog.String(logfields.AckAction, action), slog.String(logfields.AckError, ackErr.Error()))
	} else {
		p.Log(ctx, res, slog.String(logfields.AckAction, action))
	}
	if span != nil {
		tracing.Finish(span, res.Outcome, res.Err, tracing.RouteKey.String(res.Route), tracing.AckActionKey.String(action))
	}
}

// answer acks or nacks m as res decides and returns the ack action, with
// the error of an ack that failed (ack_failed: the message is not acked).
func answer(ctx context.Context, m *pubsub.Message, res *process.Result) (action string, ackErr error) {
	if !res.Ack {
		m.Nack()
		return logfields.AckActionNack, nil
	}
	status, err := m.AckWithResult().Get(ctx)
	if err == nil && status != pubsub.AcknowledgeStatusSuccess {
		err = fmt.Errorf("ack status %d", status)
	}
	if err != nil {
		return logfields.AckActionAckFailed, err
	}
	return logfields.AckActionAck, nil
}
