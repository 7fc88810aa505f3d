// Package process handles one Pub/Sub message end to end, whichever way it
// arrived (push or pull): route it, run the route's engine mode, classify
// the result into an ack decision and build its log line.
package process

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/eventpipe/eventpipe/consumer/classify"
	"github.com/eventpipe/eventpipe/consumer/downstream"
	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/consumer/handler"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/logging"
	"github.com/eventpipe/eventpipe/consumer/route"
	"github.com/eventpipe/eventpipe/consumer/settings"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/opcount"
	"github.com/eventpipe/eventpipe/consumer/tracing"
)

// Config configures a Processor.
type Config struct {
	// Store holds every record; required.
	Store store.Store
	// Env qualifies document ids; required.
	Env string
	// CollectionPrefix prefixes the engine's collections (default eventpipe_).
	CollectionPrefix string
	// Routes are the validated routes; required.
	Routes *route.Table
	// DLQ says how to tell whether a subscription has a dead-letter policy.
	DLQ classify.DLQMode
	// Logger receives one line per message, plus lease events; required.
	Logger *slog.Logger
	// Downstream performs lease routes' actions (default: a plain client,
	// traced by Tracer).
	Downstream *downstream.Caller
	// Tracer starts the delivery spans of push and pull (nil: tracing off).
	Tracer *tracing.Tracer
	// LookupEnv resolves lease routes' urlEnv (default os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// HandlerURL is the handler container's base URL (handler.URLEnv):
	// lease routes whose action has no URL of their own send their events
	// there. "" when there is no handler: such routes are an error.
	HandlerURL string
	// Owner names this process in lease records.
	Owner string
	// MaxEventSkew bounds how far ahead of its publish time an event's own
	// time is trusted for ordering (engine.Config.MaxEventSkew).
	MaxEventSkew time.Duration
	// MaxWaitingPerDocument bounds the latest-state deliveries that wait
	// for one document's transaction in flight, to be decided together by
	// the next (engine.Config.MaxWaitingPerDocument; engine.NoCoalescing
	// turns coalescing off).
	MaxWaitingPerDocument int
	// MaxSequenceJump bounds the sequence step trusted across the ordering
	// window (engine.Config.MaxSequenceJump; 0: its default).
	MaxSequenceJump int64
	// Failpoint is the engine's crash-test hook (engine.KillAtFailpoints of
	// EVENTPIPE_FAILPOINT in cmd/consumer); nil for none.
	Failpoint engine.FailpointHook
	// Now is the engine's clock (engine.Config.Now); nil for time.Now.
	Now func() time.Time
}

// Processor handles messages. It is safe for concurrent use.
type Processor struct {
	cfg    Config
	engine *engine.Engine
	leases map[string]*leaseRoute
}

// leaseRoute is a lease route's resolved URL: the reservation's length and
// attempts are the route's, given with each claim of the one engine.
type leaseRoute struct {
	url string
	// toHandler: the action is a call of the handler, whose body is a
	// handler.Delivery rather than the route's output fields.
	toHandler bool
}

// New validates cfg and builds the engine. Missing config is an error
// naming the setting.
func New(cfg Config) (*Processor, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("process: no store (fix: set " + settings.Store + ")")
	case cfg.Routes == nil:
		return nil, errors.New("process: no routes (fix: load " + settings.Routes + " or the default routes)")
	case cfg.Logger == nil:
		return nil, errors.New("process: no logger")
	}
	cfg.DLQ = cmp.Or(cfg.DLQ, classify.DLQAuto)
	if cfg.Downstream == nil {
		cfg.Downstream = downstream.New(cfg.Tracer.HTTPClient(nil), nil)
	}
	if cfg.LookupEnv == nil {
		cfg.LookupEnv = os.LookupEnv
	}
	eng, err := engine.New(engine.Config{Store: cfg.Store, Env: cfg.Env, CollectionPrefix: cfg.CollectionPrefix, Owner: cfg.Owner,
		Logger: cfg.Logger, Failpoint: cfg.Failpoint, MaxEventSkew: cfg.MaxEventSkew, MaxWaitingPerDocument: cfg.MaxWaitingPerDocument,
		MaxSequenceJump: cfg.MaxSequenceJump, Now: cfg.Now})
	if err != nil {
		return nil, fmt.Errorf("process: %w", err)
	}
	p := &Processor{cfg: cfg, engine: eng, leases: map[string]*leaseRoute{}}
	for _, r := range cfg.Routes.Routes() {
		if r.Mode != route.ModeLease {
			continue
		}
		var url string
		switch {
		case r.Action.ToHandler() && cfg.HandlerURL == "":
			return nil, fmt.Errorf("route %s: its action has no url, so it sends its events to the handler, but %s is not set (fix: set it to the handler container's address, e.g. http://localhost:8081, or give the action a url)", r.Name, handler.URLEnv)
		case r.Action.ToHandler():
			url = handler.DeliveryURL(cfg.HandlerURL, r.Name)
		default:
			if url, err = r.Action.ActionURL(cfg.LookupEnv); err != nil {
				return nil, fmt.Errorf("route %s: %w", r.Name, err)
			}
		}
		if time.Duration(r.Action.LeaseTTL) >= eng.DedupeTTL() {
			return nil, fmt.Errorf("route %s: action.leaseTTL (%s) must be shorter than the records' TTL (%s) (fix: a shorter leaseTTL)", r.Name, time.Duration(r.Action.LeaseTTL), eng.DedupeTTL())
		}
		p.leases[r.Name] = &leaseRoute{url: url, toHandler: r.Action.ToHandler()}
	}
	return p, nil
}

// Engine returns the processor's default engine (shared with callbacks).
func (p *Processor) Engine() *engine.Engine { return p.engine }

// Routes returns the processor's routes.
func (p *Processor) Routes() *route.Table { return p.cfg.Routes }

// Logger returns the processor's logger.
func (p *Processor) Logger() *slog.Logger { return p.cfg.Logger }

// Tracer returns the processor's tracer (nil when tracing is off).
func (p *Processor) Tracer() *tracing.Tracer { return p.cfg.Tracer }

// DLQ returns the processor's DLQ mode.
func (p *Processor) DLQ() classify.DLQMode { return p.cfg.DLQ }

// Result is the outcome of one message and the content of its log line.
type Result struct {
	// Decision is the answer: outcome, HTTP status, ack or nack, severity.
	classify.Decision
	// Class and Err describe the failure, when there was one.
	Class classify.Class
	Err   error

	// Msg is the message handled (partial for a rejected envelope).
	Msg *envelope.Message
	// Route, Topic, EventType and SchemaVersion come from the matched route.
	Route         string
	Topic         string
	EventType     string
	SchemaVersion string
	// WriteKind, DocPath and IdemDoc say what the engine wrote and where.
	WriteKind string
	DocPath   string
	IdemDoc   string
	// Reads and Writes count the store operations this message cost.
	Reads, Writes int64
	// Started is when handling began (for latency_ms).
	Started time.Time
}

// Process handles one decoded message. It never returns an error: every
// failure is in the Result, already classified and decided.
//
// Process and Reject are small enough to inline, and nothing they call
// keeps the result: a caller that keeps it no longer than its own call
// (the push handler) holds it on its stack.
func (p *Processor) Process(ctx context.Context, msg *envelope.Message) *Result {
	res := &Result{Msg: msg}
	p.process(ctx, msg, res)
	return res
}

// process is Process's work, into res.
func (p *Processor) process(ctx context.Context, msg *envelope.Message, res *Result) {
	res.Started = time.Now()
	outcome, err := p.apply(ctx, msg, res)
	if err == nil {
		// The effect is committed; the ack has not been sent yet.
		err = p.engine.Hit(ctx, engine.ProjectionBeforeAck)
	}
	p.finish(ctx, res, outcome, err)
}

// Reject answers a message that could not even be decoded (bad envelope or
// payload): poison. msg.Data (the raw body or data) is kept in the poison
// record when no DLQ will keep the message.
func (p *Processor) Reject(ctx context.Context, msg *envelope.Message, err error) *Result {
	res := &Result{Msg: msg}
	p.reject(ctx, res, err)
	return res
}

// reject is Reject's work, into res.
func (p *Processor) reject(ctx context.Context, res *Result, err error) {
	res.Started = time.Now()
	p.finish(ctx, res, "", err)
}

func (p *Processor) apply(ctx context.Context, msg *envelope.Message, res *Result) (string, error) {
	r, err := p.cfg.Routes.Match(msg.Payload)
	if err != nil {
		return "", err
	}
	res.Route, res.Topic = r.Name, r.Topic
	if res.Topic == "" {
		res.Topic = msg.Attributes["topic"]
	}
	routed, err := r.Apply(msg, p.cfg.Env)
	if err != nil {
		return "", err
	}
	res.EventType, res.SchemaVersion = routed.EventType, routed.SchemaVersion
	ev := engine.Event{MessageID: msg.ID, PublishTime: msg.PublishTime, EventID: routed.EventID, Identity: routed.Identity, Payload: msg.Data,
		Attributes: msg.Attributes, OrderingKey: msg.OrderingKey}
	switch r.Mode {
	case route.ModeLatestState:
		return p.materialize(ctx, ev, routed, res)
	case route.ModeLease:
		return p.lease(ctx, ev, routed, res)
	default:
		return "", classify.Configuration(fmt.Errorf("route %s: mode %s cannot take Pub/Sub messages", r.Name, r.Mode))
	}
}

func (p *Processor) materialize(ctx context.Context, ev engine.Event, routed *route.Routed, res *Result) (string, error) {
	w := engine.Write{
		Collection: routed.Target.Collection, ID: routed.AggregateID, Source: routed,
		EventTime: routed.EventTime, Sequence: routed.Sequence, Mode: engine.ModeLatest,
		DedupeMarker: routed.Route.Dedupe != nil, MaxSequenceJump: routed.Route.Ordering.MaxSequenceJump,
	}
	out, err := p.engine.Materialize(ctx, ev, w)
	res.DocPath, res.IdemDoc, res.WriteKind = out.DocPath, out.IdempotencyDoc, out.WriteKind
	res.Reads, res.Writes = out.Reads(), out.Writes()
	if res.DocPath == "" {
		res.DocPath = routed.Target.String()
	}
	if err != nil {
		return "", err
	}
	return string(out.Outcome), nil
}

// lease runs a lease route's action once per event, through the one
// reservation and the one call (docs/handlers.md): claim the event's
// reservation (its length and attempts are the route's), call with the
// reservation's Idempotency-Key and attempt while a heartbeat extends it,
// then settle it by the answer table. A call still running at
// action.timeout runs on, up to action.leaseTTL, and its answer settles
// the event later (settleLate); this delivery is nacked meanwhile, and
// its redeliveries are in progress until then.
func (p *Processor) lease(ctx context.Context, ev engine.Event, routed *route.Routed, res *Result) (string, error) {
	lr := p.leases[routed.Route.Name]
	act := routed.Route.Action
	res.WriteKind = logfields.WriteKindLease
	rv, err := p.engine.Claim(ctx, engine.Request{Scope: routed.Route.Name, Event: &ev, Lease: time.Duration(act.LeaseTTL),
		MaxAttempts: act.MaxAttempts, Aggregate: routed.AggregateID, Sequence: routed.Sequence})
	res.Reads, res.Writes = rv.Ops.Reads, rv.Ops.Writes+rv.Ops.Deletes
	if rv.Doc != "" {
		res.IdemDoc = rv.Doc
	}
	if err != nil {
		var ee *engine.Error
		if errors.As(err, &ee) && ee.Type == engine.TypeStale {
			return logfields.OutcomeStale, nil
		}
		return "", err
	}
	if rv.Replayed {
		if rv.Status == engine.StatusRejected {
			// A final refusal is remembered: the handler is not called again.
			return "", classify.Poison(fmt.Errorf("%s refused this event before (HTTP %v), for good: it is not called again (fix the event or the receiver, then publish it anew)",
				routed.Route.Name, rv.Result[resultStatus]))
		}
		return logfields.OutcomeDuplicate, nil
	}
	var body []byte
	if lr.toHandler {
		body, err = json.Marshal(handler.NewDelivery(rv.Doc, routed.Route.Name, rv.Attempt, res.Msg, routed.Fields()))
	} else {
		body, err = json.Marshal(routed.Fields())
	}
	if err != nil {
		_, rerr := p.engine.Release(ctx, rv, err, false)
		return "", errors.Join(classify.Poison(fmt.Errorf("action body: %w", err)), rerr)
	}
	if err := p.engine.Hit(ctx, engine.WorkerBeforeApply); err != nil {
		return "", err
	}
	var hbOps struct {
		sync.Mutex
		reads, writes int64
	}
	call := downstream.Call{URL: lr.url, Key: rv.Doc, Attempt: rv.Attempt, Body: body,
		Timeout: time.Duration(act.Timeout), Bound: max(time.Duration(act.Timeout), time.Duration(act.LeaseTTL)),
		Heartbeat: time.Duration(act.Heartbeat),
		Extend: func(ctx context.Context) error {
			nrv, err := p.engine.Extend(ctx, rv)
			hbOps.Lock()
			hbOps.reads, hbOps.writes = hbOps.reads+nrv.Ops.Reads, hbOps.writes+nrv.Ops.Writes
			hbOps.Unlock()
			return err
		},
		Late: func(a downstream.Answer) { p.settleLate(context.WithoutCancel(ctx), rv, ev, routed.Route.Name, a) },
	}
	a, err := p.cfg.Downstream.Do(ctx, call)
	hbOps.Lock()
	res.Reads, res.Writes = res.Reads+hbOps.reads, res.Writes+hbOps.writes
	hbOps.Unlock()
	if errors.Is(err, downstream.ErrLate) {
		return "", classify.InProgress(fmt.Errorf("%s did not answer within action.timeout (%s): the call runs on, at most action.leaseTTL (%s), keeping %s; its answer settles the event, and redeliveries are in progress until then",
			lr.url, time.Duration(act.Timeout), time.Duration(act.LeaseTTL), rv.Doc))
	}
	outcome, ops, err := p.settle(ctx, rv, ev, a)
	res.Reads, res.Writes = res.Reads+ops.Reads, res.Writes+ops.Writes+ops.Deletes
	if isRecordedPoison(err) {
		res.IdemDoc = p.engine.PoisonDoc(ev)
	}
	return outcome, err
}

// resultStatus is the field of a lease reservation's result holding the
// handler's status.
const resultStatus = "http_status"

// settle ends rv by the answer table: done completes it (applied), a
// refusal rejects it for good (poison, remembered), retry and in doubt
// release it (the redelivery is the next attempt; once attempts run out
// the event is poison, its record written); an abandoned call (shutdown,
// takeover) leaves it held.
func (p *Processor) settle(ctx context.Context, rv engine.Reservation, ev engine.Event, a downstream.Answer) (string, opcount.Counts, error) {
	if err := p.engine.Hit(ctx, engine.WorkerAfterApply); err != nil {
		return "", opcount.Counts{}, err
	}
	switch a.Verdict {
	case downstream.Done, downstream.Refused:
		status := engine.StatusCompleted
		if a.Verdict == downstream.Refused {
			status = engine.StatusRejected
		}
		done, err := p.engine.Settle(ctx, rv, engine.Settlement{Status: status, Result: map[string]any{resultStatus: int64(a.Status)}})
		if err != nil {
			return "", done.Ops, err
		}
		if a.Verdict == downstream.Refused {
			return "", done.Ops, a.Err
		}
		return logfields.OutcomeApplied, done.Ops, nil
	case downstream.Retry, downstream.Unknown:
		exhausted, err := p.engine.Release(ctx, rv, a.Err, a.Verdict == downstream.Unknown)
		if err != nil {
			return "", opcount.Counts{}, fmt.Errorf("release the event after %v: %w", a.Err, err)
		}
		if exhausted {
			// The engine wrote the poison audit record already.
			return "", opcount.Counts{}, &recordedPoison{classify.Poison(fmt.Errorf("action failed %d times: %w", rv.Attempt, a.Err))}
		}
		return "", opcount.Counts{}, a.Err
	default: // Abandoned: held until its reservation lapses, or the taker's
		return "", opcount.Counts{}, a.Err
	}
}

// settleLate settles an event whose call outlived action.timeout, when it
// ends, and logs the outcome (the delivery's own line said retry).
func (p *Processor) settleLate(ctx context.Context, rv engine.Reservation, ev engine.Event, routeName string, a downstream.Answer) {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	outcome, _, err := p.settle(ctx, rv, ev, a)
	level, attrs := slog.LevelInfo, []any{logfields.Route, routeName, logfields.MessageID, ev.MessageID, logfields.IdempotencyDoc, rv.Doc,
		"attempt", rv.Attempt, "verdict", string(a.Verdict), logfields.HTTPStatus, a.Status, logfields.LatencyMS, a.Took.Milliseconds()}
	if err != nil {
		c := classify.Of(err)
		level, outcome = slog.LevelWarn, logfields.OutcomeRetry
		if c.Type == logfields.ErrorTypePoison {
			outcome = logfields.OutcomePoison
		}
		attrs = append(attrs, logfields.ErrorType, c.Type, logfields.ErrorCode, c.Code, logfields.Error, err.Error())
	}
	p.cfg.Logger.Log(ctx, level, "late handler answer settled", append(attrs, logfields.Outcome, outcome)...)
}

// settleTimeout bounds the store writes that settle a call's key once it
// ended (the delivery's own deadline may be spent by then).
const settleTimeout = 10 * time.Second

// recordedPoison is poison whose audit record exists already.
type recordedPoison struct{ error }

func (e *recordedPoison) Unwrap() error { return e.error }

// isRecordedPoison reports whether err wraps a *recordedPoison. Its target
// lives only here, so only messages to record as poison allocate it.
func isRecordedPoison(err error) bool {
	var rp *recordedPoison
	return errors.As(err, &rp)
}

// finish decides the response, records poison when no DLQ will keep the
// message, and fills the result.
func (p *Processor) finish(ctx context.Context, res *Result, outcome string, err error) {
	res.Err = err
	dlq := p.cfg.DLQ.HasDLQ(res.Msg != nil && res.Msg.DeliveryAttempt > 0)
	if err != nil {
		res.Class = classify.Of(err)
	}
	res.Decision = classify.Decide(outcome, res.Class, err != nil, dlq)
	if res.RecordPoison && !isRecordedPoison(err) {
		if perr := p.recordPoison(ctx, res); perr != nil {
			// Acking now would lose the message: retry instead, whatever
			// kept it from being recorded.
			res.Err = fmt.Errorf("%v; and recording it as poison failed: %w", err, perr)
			res.Class = classify.Of(perr)
			if res.Class.Type == logfields.ErrorTypePoison {
				res.Class = classify.Class{Type: logfields.ErrorTypeTransient, Code: res.Class.Code, Retryable: true}
			}
			res.Decision = classify.Decide("", res.Class, true, dlq)
			res.Outcome = logfields.OutcomeRetry
		}
	}
	if res.RecordPoison && res.WriteKind == "" {
		res.WriteKind = logfields.WriteKindPoison
	}
}

func (p *Processor) recordPoison(ctx context.Context, res *Result) error {
	m := res.Msg
	var ev engine.Event
	rec := engine.PoisonRecord{Route: res.Route, Reason: logging.Bound(res.Err.Error()), ErrorType: engine.ErrorType(res.Class.Type),
		ErrorCode: res.Class.Code}
	if m != nil {
		ev = engine.Event{MessageID: m.ID, PublishTime: m.PublishTime, Payload: m.Data, Attributes: m.Attributes, OrderingKey: m.OrderingKey}
		rec.Source, rec.Attempts = m.Subscription, int64(m.DeliveryAttempt)
	}
	doc, err := p.engine.RecordPoison(ctx, ev, rec)
	if err != nil {
		return err
	}
	res.IdemDoc = doc
	res.Writes++
	return nil
}
