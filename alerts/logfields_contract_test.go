package alerts

import (
	"slices"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/logfields"
)

// The metrics repeat the consumer's log field names and values on purpose
// (alerts must not import the consumer). This test, which may import it,
// fails the moment the two drift apart: a renamed field would otherwise
// leave every log-based metric silently counting nothing.
func TestLogFieldsMatchTheConsumer(t *testing.T) {
	fields := []struct{ alerts, consumer string }{
		{fieldEnv, logfields.Env},
		{fieldRoute, logfields.Route},
		{fieldOutcome, logfields.Outcome},
		{fieldErrorCode, logfields.ErrorCode},
		{fieldErrorType, logfields.ErrorType},
		{fieldLeaseEvent, logfields.LeaseEvent},
	}
	for _, f := range fields {
		if f.alerts != f.consumer {
			t.Errorf("alerts reads jsonPayload.%s, the consumer writes %s", f.alerts, f.consumer)
		}
	}
	values := []struct {
		what     string
		alerts   []string
		consumer []string
	}{
		{"outcomes", outcomes(), []string{logfields.OutcomeApplied, logfields.OutcomeDuplicate, logfields.OutcomeStale, logfields.OutcomePoison, logfields.OutcomeRetry}},
		{"lease events", leaseEvents(), []string{logfields.LeaseAcquireFailed, logfields.LeaseHeartbeatFailed, logfields.LeaseStaleFound}},
	}
	for _, v := range values {
		if !slices.Equal(v.alerts, v.consumer) {
			t.Errorf("%s: alerts match %q, the consumer logs %q", v.what, v.alerts, v.consumer)
		}
	}
}
