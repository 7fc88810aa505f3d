// Package tracing gives the consumer its OpenTelemetry spans: one span per
// delivery (a Pub/Sub push, a pulled message, a callback) following the
// messaging semantic conventions, a child span per store transaction (Store)
// and per lease action's downstream call (HTTPClient, which carries the W3C
// traceparent header to the receiver).
//
// A delivery's parent is where Pub/Sub and callers put it: the
// googclient_traceparent message attribute that Google's Pub/Sub clients
// write when their OpenTelemetry tracing is on, and the traceparent header
// of callbacks (and of pushes whose message carries none).
//
// A nil *Tracer is tracing turned off: every method returns its input
// unchanged and starts nothing, so the consumer pays nothing for it. FromEnv
// returns nil unless the standard OTEL_* variables ask for an exporter.
package tracing

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/logging"
)

// ScopeName is the instrumentation scope of the consumer's spans.
const ScopeName = "github.com/eventpipe/eventpipe/consumer"

// MessageAttributePrefix is what Google's Pub/Sub clients put before the
// W3C trace context keys in a message's attributes: the parent of a
// message's consumer span is its googclient_traceparent attribute.
const MessageAttributePrefix = "googclient_"

// Attribute keys of the consumer's own (beyond the semantic conventions).
const (
	// OutcomeKey is the delivery's outcome (logfields.Outcome* values), the
	// same as its log line's outcome field.
	OutcomeKey = attribute.Key("eventpipe.outcome")
	// RouteKey is the matched route.
	RouteKey = attribute.Key("eventpipe.route")
	// AckActionKey is what the delivery's answer means to Pub/Sub: ack, nack or ack_failed.
	AckActionKey = attribute.Key("eventpipe.ack_action")
	// IngressKey says how the delivery arrived: push, pull or callback.
	IngressKey = attribute.Key("eventpipe.ingress")
)

// Ingress values.
const (
	IngressPush     = "push"
	IngressPull     = "pull"
	IngressCallback = "callback"
)

// Tracer starts the consumer's spans. A nil *Tracer traces nothing.
type Tracer struct {
	provider trace.TracerProvider
	tracer   trace.Tracer
	// w3c reads and writes the traceparent and tracestate keys.
	w3c propagation.TraceContext
}

// New returns a Tracer whose spans go to provider.
func New(provider trace.TracerProvider) *Tracer {
	return &Tracer{provider: provider, tracer: provider.Tracer(ScopeName)}
}

// Enabled reports whether t traces.
func (t *Tracer) Enabled() bool { return t != nil }

// messageCarrier reads a message's trace context from its attributes, under
// the prefix Google's clients write it with.
type messageCarrier map[string]string

func (c messageCarrier) Get(key string) string { return c[MessageAttributePrefix+key] }

func (c messageCarrier) Set(key, value string) { c[MessageAttributePrefix+key] = value }

func (c messageCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		if name, ok := strings.CutPrefix(k, MessageAttributePrefix); ok {
			keys = append(keys, name)
		}
	}
	return keys
}

// StartMessage starts the consumer span of a Pub/Sub message that arrived
// by ingress (IngressPush or IngressPull): a CONSUMER span named
// "process SUBSCRIPTION", whose parent is the message's
// googclient_traceparent attribute, else header's traceparent (a push's
// HTTP request; nil for pull), else none. msg may be partial (a push whose
// envelope did not decode). End it with Finish.
func (t *Tracer) StartMessage(ctx context.Context, ingress string, msg *envelope.Message, header http.Header) (context.Context, trace.Span) {
	if t == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	parent := t.w3c.Extract(ctx, messageCarrier(msg.Attributes))
	if !trace.SpanContextFromContext(parent).IsValid() && header != nil {
		parent = t.w3c.Extract(ctx, propagation.HeaderCarrier(header))
	}
	sub := msg.Subscription[strings.LastIndexByte(msg.Subscription, '/')+1:]
	attrs := []attribute.KeyValue{
		semconv.MessagingSystemGCPPubSub,
		semconv.MessagingOperationTypeProcess,
		semconv.MessagingOperationName("process"),
		semconv.MessagingDestinationSubscriptionName(msg.Subscription),
		semconv.MessagingMessageID(msg.ID),
		semconv.MessagingMessageBodySize(len(msg.Data)),
		IngressKey.String(ingress),
	}
	if msg.OrderingKey != "" {
		attrs = append(attrs, semconv.MessagingGCPPubSubMessageOrderingKey(msg.OrderingKey))
	}
	if msg.DeliveryAttempt > 0 {
		attrs = append(attrs, semconv.MessagingGCPPubSubMessageDeliveryAttempt(msg.DeliveryAttempt))
	}
	name := "process"
	if sub != "" {
		name += " " + sub
	}
	return t.tracer.Start(parent, logging.Bound(name), trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(bounded(attrs)...))
}

// StartCallback starts the SERVER span of a callback request to route,
// whose parent is the request's traceparent header. End it with Finish.
func (t *Tracer) StartCallback(r *http.Request, route string) (context.Context, trace.Span) {
	ctx := r.Context()
	if t == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	parent := t.w3c.Extract(ctx, propagation.HeaderCarrier(r.Header))
	return t.tracer.Start(parent, r.Method+" /callbacks/{route}", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(bounded([]attribute.KeyValue{
			semconv.HTTPRequestMethodKey.String(r.Method),
			semconv.HTTPRoute("/callbacks/{route}"),
			semconv.URLPath(r.URL.Path),
			RouteKey.String(route),
			IngressKey.String(IngressCallback),
		})...))
}

// Finish ends a delivery's span with its outcome: the outcome attribute,
// attrs (route, status, ack action), and an error status when the delivery
// failed (outcome retry or poison), with err recorded. Every string it
// writes is bounded like a log field (logging.Bound).
func Finish(span trace.Span, outcome string, err error, attrs ...attribute.KeyValue) {
	if !span.IsRecording() {
		span.End()
		return
	}
	span.SetAttributes(OutcomeKey.String(logging.Bound(outcome)))
	span.SetAttributes(bounded(attrs)...)
	if outcome == logfields.OutcomeRetry || outcome == logfields.OutcomePoison {
		if err != nil {
			fail(span, err)
		} else {
			span.SetStatus(codes.Error, logging.Bound(outcome))
		}
	}
	span.End()
}

// fail records err on span as an exception event and an error status, the
// way span.RecordError and SetStatus do, with the error text bounded like
// a log field (logging.Bound): an error may name megabytes of a message's
// keys, and a span keeps its status and events until it is exported.
func fail(span trace.Span, err error) {
	text := logging.Bound(err.Error())
	span.AddEvent(semconv.ExceptionEventName, trace.WithAttributes(
		semconv.ExceptionType(logging.Bound(fmt.Sprintf("%T", err))),
		semconv.ExceptionMessage(text)))
	span.SetStatus(codes.Error, text)
}

// bounded returns attrs with every string value (and every string of a
// slice value) bounded like a log field (logging.Bound). It changes attrs
// in place.
func bounded(attrs []attribute.KeyValue) []attribute.KeyValue {
	for i, a := range attrs {
		switch a.Value.Type() {
		case attribute.STRING:
			if s := a.Value.AsString(); len(s) > logging.MaxFieldLen {
				attrs[i] = a.Key.String(logging.Bound(s))
			}
		case attribute.STRINGSLICE:
			ss := a.Value.AsStringSlice()
			for j, s := range ss {
				ss[j] = logging.Bound(s)
			}
			attrs[i] = a.Key.StringSlice(ss)
		}
	}
	return attrs
}

// HTTPClient returns a client whose requests are CLIENT spans carrying the
// W3C traceparent header, sent through base's transport (a new client when
// base is nil). With t nil it returns base as it is.
func (t *Tracer) HTTPClient(base *http.Client) *http.Client {
	if t == nil {
		return base
	}
	c := &http.Client{}
	if base != nil {
		*c = *base
	}
	c.Transport = otelhttp.NewTransport(c.Transport, otelhttp.WithTracerProvider(t.provider), otelhttp.WithPropagators(t.w3c))
	return c
}
