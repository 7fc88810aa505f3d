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

	"github.com/eventpipe/eventpipe/consumer/auth"
	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/logging"
	"github.com/eventpipe/eventpipe/consumer/process"
)

// Path is where Pub/Sub pushes.
const Path = "/pubsub/push"

// Handler serves Path.
type Handler struct {
	proc     *process.Processor
	verifier *auth.Verifier // nil: authentication is left to Cloud Run IAM
	maxBody  int64
}

// New returns a push handler. verifier may be nil when no audience is
// configured.
func New(proc *process.Processor, verifier *auth.Verifier) *Handler {
	return &Handler{proc: proc, verifier: verifier, maxBody: envelope.MaxPushBody}
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.refuse(w, r, http.StatusMethodNotAllowed, slog.LevelWarn, logfields.ErrorTypeConfiguration, fmt.Errorf("method %s: Pub/Sub pushes with POST", r.Method))
		return
	}
	if h.verifier != nil {
		if _, err := h.verifier.Verify(r); err != nil {
			status := http.StatusUnauthorized
			var ae *auth.Error
			if errors.As(err, &ae) {
				status = ae.Status
			}
			h.refuse(w, r, status, slog.LevelWarn, logfields.ErrorTypeConfiguration, err)
			return
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.refuse(w, r, http.StatusRequestEntityTooLarge, slog.LevelError, logfields.ErrorTypePoison,
				fmt.Errorf("push body larger than %d bytes: Pub/Sub messages are at most 10 MB; the subscription's pusher is not Pub/Sub or the limit is wrong", h.maxBody))
			return
		}
		h.refuse(w, r, http.StatusInternalServerError, slog.LevelWarn, logfields.ErrorTypeTransient, fmt.Errorf("read push body: %w", err))
		return
	}
	var res *process.Result
	msg, err := envelope.DecodePush(body)
	if err != nil {
		peek := envelope.Peek(body)
		res = h.proc.Reject(r.Context(), &peek, err)
	} else {
		res = h.proc.Process(r.Context(), &msg)
	}
	ack := logfields.AckActionNack
	if res.HTTPStatus >= 200 && res.HTTPStatus < 300 {
		ack = logfields.AckActionAck
	}
	h.proc.Log(r.Context(), res, slog.Int(logfields.HTTPStatus, res.HTTPStatus), slog.String(logfields.AckAction, ack))
	writeJSONStatus(w, res.HTTPStatus, res.Outcome)
}

// refuse answers a request that never reached the processor and logs it.
// Pub/Sub will deliver it again: the outcome is retry.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, status int, level slog.Level, errType string, err error) {
	h.proc.Logger().LogAttrs(r.Context(), level, "push request refused",
		slog.String(logfields.Outcome, logfields.OutcomeRetry),
		slog.String(logfields.ErrorType, errType),
		slog.Int(logfields.HTTPStatus, status),
		slog.String(logfields.AckAction, logfields.AckActionNack),
		slog.String(logfields.Error, logging.Bound(err.Error())),
	)
	http.Error(w, http.StatusText(status)+": "+err.Error(), status)
}

// writeJSONStatus answers with a one-field JSON body; Pub/Sub only reads the
// status, people reading curl output read the outcome.
func writeJSONStatus(w http.ResponseWriter, status int, outcome string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	var buf [64]byte
	body := append(buf[:0], `{"outcome":`...)
	body = strconv.AppendQuote(body, outcome) // as fmt's %q
	_, _ = w.Write(append(body, "}\n"...))
}
