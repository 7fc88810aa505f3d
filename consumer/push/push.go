// Package push serves Pub/Sub push deliveries: POST /pubsub/push with the
// push envelope. It authenticates the request (when configured), bounds and
// strictly decodes the body, hands the message to the processor and answers
// with the status the ack/nack rules give (2xx acks, anything else nacks).
package push

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/eventpipe/eventpipe/consumer/auth"
	"github.com/eventpipe/eventpipe/consumer/budget"
	"github.com/eventpipe/eventpipe/consumer/classify"
	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/consumer/limits"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/process"
	"github.com/eventpipe/eventpipe/consumer/tracing"
)

// Path is where Pub/Sub pushes.
const Path = "/pubsub/push"

// Handler serves Path.
type Handler struct {
	proc     *process.Processor
	verifier *auth.Verifier // nil: authentication is left to Cloud Run IAM
	// door is the push door: its largest body is what the largest Pub/Sub
	// message (10 MB) takes in base64 inside its envelope.
	door limits.Door
	// jsonType is the Content-Type header's value, made once: net/http
	// copies a handler's header when the status is written, so sharing it
	// across responses is safe.
	jsonType []string
	// bodies are the responses' bodies by outcome, made once.
	bodies map[string][]byte
	// budget is the instance's memory budget for the requests in flight,
	// shared with the other doors.
	budget *budget.Budget
}

// New returns a push handler. verifier may be nil when no audience is
// configured. b is the instance's memory budget (nil: none): a push whose
// delivery does not fit beside the requests in flight is answered 503 with
// Retry-After before its body is read, and Pub/Sub delivers it again.
func New(proc *process.Processor, verifier *auth.Verifier, b *budget.Budget) *Handler {
	h := &Handler{proc: proc, verifier: verifier, door: limits.PushDoor(), jsonType: []string{"application/json"},
		bodies: map[string][]byte{}, budget: b}
	for _, outcome := range []string{logfields.OutcomeApplied, logfields.OutcomeDuplicate, logfields.OutcomeStale,
		logfields.OutcomePoison, logfields.OutcomeRetry} {
		h.bodies[outcome] = jsonStatusBody(nil, outcome)
	}
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		err := fmt.Errorf("method %s: Pub/Sub pushes with POST", r.Method)
		h.refuse(w, r, http.StatusMethodNotAllowed, slog.LevelWarn, logfields.ErrorTypeConfiguration, err, err.Error())
		return
	}
	if h.verifier != nil {
		if _, err := h.verifier.Verify(r); err != nil {
			// A refused token is answered 401 or 403 and logged at WARNING as a
			// configuration problem (the caller's or the subscription's); a 503
			// when Google's keys could not be fetched, at ERROR as transient (the
			// consumer's dependency failed: Pub/Sub retries). public names no URL
			// or error of the consumer's own.
			status, transient, public := auth.Refusal(err)
			level, errType := slog.LevelWarn, logfields.ErrorTypeConfiguration
			if transient {
				level, errType = slog.LevelError, logfields.ErrorTypeTransient
			}
			h.refuse(w, r, status, level, errType, err, public)
			return
		}
	}
	if r.ContentLength > h.door.MaxBody {
		h.refuseTooLarge(w, r)
		return
	}
	release, err := h.budget.Take(h.door, r.ContentLength)
	if err != nil {
		h.refuse(w, r, budget.Refuse(w), slog.LevelWarn, logfields.ErrorTypeTransient, err,
			"the instance is at its memory budget for requests in flight; retry")
		return
	}
	defer release()
	body, err := budget.ReadBody(w, r, h.door.MaxBody)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.refuseTooLarge(w, r)
			return
		}
		h.refuse(w, r, http.StatusInternalServerError, slog.LevelWarn, logfields.ErrorTypeTransient, fmt.Errorf("read push body: %w", err),
			"the request body could not be read; retry")
		return
	}
	// The data is decoded in place, in body: the message's data is part of
	// it, and the delivery holds one buffer, the body's.
	decoded, decodeErr := envelope.DecodePush(body)
	msg := &decoded
	if decodeErr != nil && decoded.Data == nil {
		// Refused before its data was decoded: body is as sent.
		peek := envelope.Peek(body)
		msg = &peek
		if h := unwrappedHeader(r.Header); h != "" && peek.ID == "" {
			// Not a bad message: a subscription the consumer cannot read.
			// Nack it (500, CRITICAL) so that Pub/Sub keeps every message
			// until the subscription is fixed.
			decodeErr = classify.Configuration(fmt.Errorf("the push carries %s and no envelope: the subscription pushes unwrapped payloads (pushConfig.noWrapper), "+
				"and the consumer reads Pub/Sub's wrapped envelope (fix: turn payload unwrapping off on the subscription; the messages are kept meanwhile)", h))
		}
	}
	ctx := r.Context()
	var span trace.Span
	if tr := h.proc.Tracer(); tr.Enabled() {
		ctx, span = tr.StartMessage(ctx, tracing.IngressPush, msg, r.Header)
	}
	var res *process.Result
	if decodeErr != nil {
		res = h.proc.Reject(ctx, msg, decodeErr)
	} else {
		res = h.proc.Process(ctx, msg)
	}
	ack := logfields.AckActionNack
	if res.HTTPStatus >= 200 && res.HTTPStatus < 300 {
		ack = logfields.AckActionAck
	}
	h.proc.Log(ctx, res, slog.Int(logfields.HTTPStatus, res.HTTPStatus), slog.String(logfields.AckAction, ack))
	if span != nil {
		tracing.Finish(span, res.Outcome, res.Err, tracing.RouteKey.String(res.Route),
			semconv.HTTPResponseStatusCode(res.HTTPStatus), tracing.AckActionKey.String(ack))
	}
	h.writeJSONStatus(w, res.HTTPStatus, res.Outcome)
}

// unwrappedHeader returns the name of a header Pub/Sub writes on an
// unwrapped push with metadata (x-goog-pubsub-*), or "".
func unwrappedHeader(h http.Header) string {
	first := ""
	for name := range h {
		if strings.HasPrefix(name, "X-Goog-Pubsub-") && (first == "" || name < first) {
			first = name
		}
	}
	return first
}

// refuseTooLarge answers a push whose body is over the largest a Pub/Sub
// message makes.
func (h *Handler) refuseTooLarge(w http.ResponseWriter, r *http.Request) {
	err := fmt.Errorf("push body larger than %d bytes, the most a 10 MB Pub/Sub message takes in base64 inside its envelope: the pusher is not Pub/Sub", h.door.MaxBody)
	h.refuse(w, r, http.StatusRequestEntityTooLarge, slog.LevelError, logfields.ErrorTypePoison, err, err.Error())
}

// refuse answers a request that never reached the processor with public
// (the error itself is only logged). Pub/Sub will deliver it again: the
// outcome is retry.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, status int, level slog.Level, errType string, err error, public string) {
	h.proc.Logger().LogAttrs(r.Context(), level, "push request refused",
		slog.String(logfields.Outcome, logfields.OutcomeRetry),
		slog.String(logfields.ErrorType, errType),
		slog.Int(logfields.HTTPStatus, status),
		slog.String(logfields.AckAction, logfields.AckActionNack),
		slog.String(logfields.Error, err.Error()),
	)
	http.Error(w, public, status)
}

// writeJSONStatus answers with a one-field JSON body; Pub/Sub only reads the
// status, people reading curl output read the outcome.
func (h *Handler) writeJSONStatus(w http.ResponseWriter, status int, outcome string) {
	w.Header()["Content-Type"] = h.jsonType
	w.WriteHeader(status)
	body, ok := h.bodies[outcome]
	if !ok {
		body = jsonStatusBody(nil, outcome)
	}
	_, _ = w.Write(body)
}

// jsonStatusBody appends the response body for outcome to b.
func jsonStatusBody(b []byte, outcome string) []byte {
	b = append(b, `{"outcome":`...)
	b = strconv.AppendQuote(b, outcome) // as fmt's %q
	return append(b, "}\n"...)
}
