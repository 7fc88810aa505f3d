// Package push serves Pub/Sub push deliveries: POST /pubsub/push with the
// push envelope. It authenticates the request (when configured), bounds and
// strictly decodes the body, hands the message to the processor and answers
// with the status seed 001's rules give (2xx acks, anything else nacks).
package push

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/eventpipe/eventpipe/consumer/auth"
	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/consumer/limits"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/process"
)

// Path is where Pub/Sub pushes.
const Path = "/pubsub/push"

// Handler serves Path.
type Handler struct {
	proc     *process.Processor
	verifier *auth.Verifier // nil: authentication is left to Cloud Run IAM
	// maxBody is the largest push body accepted: what the largest Pub/Sub
	// message (10 MB) takes in base64 inside its envelope.
	maxBody int64
	// jsonType is the Content-Type header's value, made once: net/http
	// copies a handler's header when the status is written, so sharing it
	// across responses is safe.
	jsonType []string
	// bodies are the responses' bodies by outcome, made once.
	bodies map[string][]byte
	// deliveries recycles each request's message and result (*delivery).
	deliveries *sync.Pool
}

// delivery is one request's decoded message and its result, recycled:
// neither is used once the response and the log line are written.
type delivery struct {
	msg envelope.Message
	res process.Result
}

// New returns a push handler. verifier may be nil when no audience is
// configured.
func New(proc *process.Processor, verifier *auth.Verifier) *Handler {
	h := &Handler{proc: proc, verifier: verifier, maxBody: limits.MaxPushBodyBytes(limits.MaxMessageBytes), jsonType: []string{"application/json"},
		bodies: map[string][]byte{}, deliveries: &sync.Pool{New: func() any { return new(delivery) }}}
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
			status, level, errType, public := authRefusal(err)
			h.refuse(w, r, status, level, errType, err, public)
			return
		}
	}
	body, err := readBody(w, r, h.maxBody)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			err := fmt.Errorf("push body larger than %d bytes, the most a 10 MB Pub/Sub message takes in base64 inside its envelope: the pusher is not Pub/Sub", h.maxBody)
			h.refuse(w, r, http.StatusRequestEntityTooLarge, slog.LevelError, logfields.ErrorTypePoison, err, err.Error())
			return
		}
		h.refuse(w, r, http.StatusInternalServerError, slog.LevelWarn, logfields.ErrorTypeTransient, fmt.Errorf("read push body: %w", err),
			"the request body could not be read; retry")
		return
	}
	d := h.deliveries.Get().(*delivery)
	defer func() {
		*d = delivery{} // keep no message or error reachable from the pool
		h.deliveries.Put(d)
	}()
	res := &d.res
	if d.msg, err = envelope.DecodePush(body); err != nil {
		peek := envelope.Peek(body)
		res = h.proc.Reject(r.Context(), &peek, err)
	} else {
		// The message holds its decoded data, not the body: the body is
		// garbage from here on, so a delivery holds its message once.
		h.proc.ProcessTo(r.Context(), &d.msg, res)
	}
	ack := logfields.AckActionNack
	if res.HTTPStatus >= 200 && res.HTTPStatus < 300 {
		ack = logfields.AckActionAck
	}
	h.proc.Log(r.Context(), res, slog.Int(logfields.HTTPStatus, res.HTTPStatus), slog.String(logfields.AckAction, ack))
	h.writeJSONStatus(w, res.HTTPStatus, res.Outcome)
}

// readBody reads the request body into one buffer of its declared length
// (a push has one), so reading a large body allocates it once; a body of
// unknown length is read as it comes. Bodies over max fail with
// *http.MaxBytesError.
func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	if r.ContentLength > max {
		return nil, &http.MaxBytesError{Limit: max}
	}
	body := http.MaxBytesReader(w, r.Body, max)
	if r.ContentLength < 0 {
		return io.ReadAll(body)
	}
	buf := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(body, buf); err != nil {
		return nil, err
	}
	return buf, nil
}

// authRefusal is how a push whose token was refused is answered and
// logged: a 401 or 403 at WARNING as a configuration problem (the caller's
// or the subscription's); a 503 at ERROR as transient when Google's keys
// could not be fetched (the consumer's dependency failed: Pub/Sub retries).
// public is the response text, which names no URL or error of the
// consumer's own.
func authRefusal(err error) (status int, level slog.Level, errType, public string) {
	status, transient, public := auth.Refusal(err)
	if transient {
		return status, slog.LevelError, logfields.ErrorTypeTransient, public
	}
	return status, slog.LevelWarn, logfields.ErrorTypeConfiguration, public
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
