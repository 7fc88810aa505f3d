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
	"github.com/eventpipe/eventpipe/consumer/store"
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
}

// Processor handles messages. It is safe for concurrent use.
type Processor struct {
	cfg    Config
	engine *engine.Engine
	leases map[string]*leaseRoute
}

// leaseRoute is a lease route with its own engine (its attempt limit and
// lease length are the route's) and resolved URL.
type leaseRoute struct {
	engine *engine.Engine
	url    string
	// toHandler: the action is a call of the handler, whose body is a
	// handler.Delivery rather than the route's output fields.
	toHandler bool
}

// New validates cfg and builds the engines. Missing config is an error
// naming the setting.
func New(cfg Config) (*Processor, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("process: no store (fix: set EVENTPIPE_STORE)")
	case cfg.Routes == nil:
		return nil, errors.New("process: no routes (fix: load EVENTPIPE_ROUTES or the default routes)")
	case cfg.Logger == nil:
		return nil, errors.New("process: no logger")
	}
	cfg.DLQ = cmp.Or(cfg.DLQ, classify.DLQAuto)
	if cfg.Downstream == nil {
		cfg.Downstream = downstream.New(cfg.Tracer.HTTPClient(nil))
	}
	if cfg.LookupEnv == nil {
		cfg.LookupEnv = os.LookupEnv
	}
	base := engine.Config{Store: cfg.Store, Env: cfg.Env, CollectionPrefix: cfg.CollectionPrefix, Owner: cfg.Owner,
		Logger: cfg.Logger, Failpoint: cfg.Failpoint, MaxEventSkew: cfg.MaxEventSkew, MaxWaitingPerDocument: cfg.MaxWaitingPerDocument,
		MaxSequenceJump: cfg.MaxSequenceJump}
	eng, err := engine.New(base)
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
		lc := base
		lc.MaxAttempts = r.Action.MaxAttempts
		lc.LeaseDuration = time.Duration(r.Action.LeaseTTL)
		le, err := engine.New(lc)
		if err != nil {
			return nil, fmt.Errorf("route %s: %w", r.Name, err)
		}
		p.leases[r.Name] = &leaseRoute{engine: le, url: url, toHandler: r.Action.ToHandler()}
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
func (p *Processor) Process(ctx context.Context, msg *envelope.Message) *Result {
	res := &Result{Msg: msg, Started: time.Now()}
	outcome, err := p.apply(ctx, msg, res)
	if err == nil {
		// The effect is committed; the ack has not been sent yet.
		err = p.engine.Hit(ctx, engine.ProjectionBeforeAck)
	}
	p.finish(ctx, res, outcome, err)
	return res
}

// Reject answers a message that could not even be decoded (bad envelope or
// payload): poison. msg.Data (the raw body or data) is kept in the poison
// record when no DLQ will keep the message.
func (p *Processor) Reject(ctx context.Context, msg *envelope.Message, err error) *Result {
	res := &Result{Msg: msg, Started: time.Now()}
	p.finish(ctx, res, "", err)
	return res
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

// lease runs a lease route's action at most once: claim, POST with the
// lease's Idempotency-Key while a heartbeat extends the lease, then
// complete on 2xx or record the failure.
func (p *Processor) lease(ctx context.Context, ev engine.Event, routed *route.Routed, res *Result) (string, error) {
	lr := p.leases[routed.Route.Name]
	act := routed.Route.Action
	res.WriteKind = logfields.WriteKindLease
	l, err := lr.engine.Claim(ctx, ev, engine.LeaseRequest{Handler: routed.Route.Name, Aggregate: routed.AggregateID, Sequence: routed.Sequence})
	res.Reads, res.Writes = l.Ops.Reads, l.Ops.Writes+l.Ops.Deletes
	if err != nil {
		var ee *engine.Error
		if errors.As(err, &ee) {
			switch ee.Type {
			case engine.TypeDuplicate:
				return logfields.OutcomeDuplicate, nil
			case engine.TypeStale:
				return logfields.OutcomeStale, nil
			}
		}
		return "", err
	}
	res.IdemDoc = l.Doc
	var body []byte
	if lr.toHandler {
		body, err = json.Marshal(handler.NewDelivery(l.Doc, routed.Route.Name, l.Attempt, res.Msg, routed.Fields()))
	} else {
		body, err = json.Marshal(routed.Fields())
	}
	if err != nil {
		return "", classify.Poison(fmt.Errorf("action body: %w", err))
	}
	callCtx, cancelCall := context.WithCancel(ctx)
	hb := make(chan struct{})
	var hbOps struct {
		sync.Mutex
		reads, writes int64
	}
	go func() {
		defer close(hb)
		t := time.NewTicker(time.Duration(act.Heartbeat))
		defer t.Stop()
		for {
			select {
			case <-callCtx.Done():
				return
			case <-t.C:
				nl, err := lr.engine.Heartbeat(callCtx, l)
				hbOps.Lock()
				hbOps.reads, hbOps.writes = hbOps.reads+nl.Ops.Reads, hbOps.writes+nl.Ops.Writes
				hbOps.Unlock()
				var ee *engine.Error
				if errors.As(err, &ee) && ee.Type == engine.TypeStale {
					cancelCall() // fenced: another worker owns the action now
					return
				}
			}
		}
	}()
	if err := lr.engine.Hit(ctx, engine.WorkerBeforeApply); err != nil {
		cancelCall()
		<-hb
		return "", err
	}
	status, callErr := p.cfg.Downstream.Post(callCtx, lr.url, l.Doc, body, time.Duration(act.Timeout))
	if callErr == nil {
		callErr = lr.engine.Hit(ctx, engine.WorkerAfterApply)
	}
	fenced := callCtx.Err() != nil && ctx.Err() == nil
	cancelCall()
	<-hb
	res.Reads, res.Writes = res.Reads+hbOps.reads, res.Writes+hbOps.writes
	if fenced {
		return "", classify.InProgress(fmt.Errorf("lease %s was taken over during the action", l.Doc))
	}
	if callErr == nil {
		done, err := lr.engine.Complete(ctx, l, map[string]any{"http_status": status})
		res.Reads, res.Writes = res.Reads+done.Ops.Reads, res.Writes+done.Ops.Writes
		if err != nil {
			return "", err
		}
		return logfields.OutcomeApplied, nil
	}
	poison, err := lr.engine.Fail(ctx, l, ev, callErr)
	if err != nil {
		return "", fmt.Errorf("record failed action (%v): %w", callErr, err)
	}
	if poison {
		// The engine wrote the poison audit record already.
		res.IdemDoc = lr.engine.PoisonDoc(ev)
		return "", &recordedPoison{classify.Poison(fmt.Errorf("action failed %d times: %w", l.Attempt, callErr))}
	}
	return "", callErr
}

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
