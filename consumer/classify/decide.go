package classify

import (
	"log/slog"
	"net/http"

	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/logging"
)

// DLQMode says how the consumer learns whether a subscription has a
// dead-letter policy.
type DLQMode string

// DLQ modes.
const (
	// DLQAuto infers it from the delivery: Pub/Sub sends deliveryAttempt only
	// when the subscription has a dead-letter policy.
	DLQAuto DLQMode = "auto"
	// DLQOn treats every subscription as having a DLQ.
	DLQOn DLQMode = "on"
	// DLQOff treats no subscription as having a DLQ.
	DLQOff DLQMode = "off"
)

// ParseDLQMode parses a DLQ mode; the empty string is DLQAuto.
func ParseDLQMode(s string) (DLQMode, bool) {
	switch DLQMode(s) {
	case "", DLQAuto:
		return DLQAuto, true
	case DLQOn, DLQOff:
		return DLQMode(s), true
	}
	return "", false
}

// HasDLQ applies the mode to one delivery.
func (m DLQMode) HasDLQ(deliveryAttemptPresent bool) bool {
	switch m {
	case DLQOn:
		return true
	case DLQOff:
		return false
	default:
		return deliveryAttemptPresent
	}
}

// Decision is how one message is answered.
type Decision struct {
	Outcome      string     // logfields.Outcome*
	HTTPStatus   int        // push and callback status
	Ack          bool       // pull: ack (true) or nack (false)
	RecordPoison bool       // write a poison audit record before acking
	Level        slog.Level // log severity
}

// Decide applies the ack/nack rules. outcome is the engine's
// outcome for success (applied, duplicate, stale_ignored); when err is not
// nil its class decides instead.
//
//	applied, duplicate, stale   2xx / ack                     INFO
//	poison, DLQ                 400 / nack (to dead-letter)   ERROR
//	poison, no DLQ              200 / ack + audit record      ERROR
//	transient, in progress      500 / nack                    ERROR
//	configuration               500 / nack                    CRITICAL
func Decide(outcome string, c Class, failed, dlq bool) Decision {
	if !failed {
		return Decision{Outcome: outcome, HTTPStatus: http.StatusOK, Ack: true, Level: slog.LevelInfo}
	}
	switch c.Type {
	case logfields.ErrorTypePoison:
		if dlq {
			return Decision{Outcome: logfields.OutcomePoison, HTTPStatus: http.StatusBadRequest, Level: slog.LevelError}
		}
		return Decision{Outcome: logfields.OutcomePoison, HTTPStatus: http.StatusOK, Ack: true, RecordPoison: true, Level: slog.LevelError}
	case logfields.ErrorTypeConfiguration:
		return Decision{Outcome: logfields.OutcomeRetry, HTTPStatus: http.StatusInternalServerError, Level: logging.LevelCritical}
	default:
		return Decision{Outcome: logfields.OutcomeRetry, HTTPStatus: http.StatusInternalServerError, Level: slog.LevelError}
	}
}
