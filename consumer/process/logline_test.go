package process

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/classify"
	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/logging"
)

// TestLogWritesTheDocumentedFields logs results of every kind with the
// consumer's logger and reads each line back: one JSON line with exactly
// the fields docs/consumer.md documents for it, errors bounded; and a
// logger of another kind gets the same fields.
func TestLogWritesTheDocumentedFields(t *testing.T) {
	started := time.Now().Add(-1234 * time.Microsecond)
	msg := &envelope.Message{ID: "m-1", Subscription: "projects/p/subscriptions/s", DeliveryAttempt: 3,
		PublishTime: time.Date(2026, 1, 2, 5, 4, 4, 123456789, time.FixedZone("", 2*3600))}
	base := Result{Msg: msg, Route: "system_events", Topic: "system-events", EventType: "heartbeat", SchemaVersion: "1",
		WriteKind: logfields.WriteKindSet, DocPath: "ops_services/t__api", IdemDoc: "eventpipe_dedupe/t__e-1",
		Reads: 1, Writes: 2, Started: started}
	baseFields := map[string]any{
		logfields.Subscription: "projects/p/subscriptions/s", logfields.MessageID: "m-1", logfields.PublishTime: "2026-01-02T03:04:04.123456789Z",
		logfields.DeliveryAttempt: 3.0, logfields.Topic: "system-events", logfields.Route: "system_events", logfields.EventType: "heartbeat",
		logfields.SchemaVersion: "1", logfields.WriteKind: logfields.WriteKindSet, logfields.DocPath: "ops_services/t__api",
		logfields.IdempotencyDoc: "eventpipe_dedupe/t__e-1", logfields.StoreReads: 1.0, logfields.StoreWrites: 2.0,
		logfields.Retryable: false, logfields.HTTPStatus: 200.0, logfields.AckAction: logfields.AckActionAck,
	}
	with := func(m map[string]any, kv ...any) map[string]any {
		out := maps.Clone(m)
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(out, kv[i].(string))
			} else {
				out[kv[i].(string)] = kv[i+1]
			}
		}
		return out
	}
	type tc struct {
		res      Result
		severity string
		fields   map[string]any
	}
	tests := map[string]tc{}
	for _, outcome := range []string{logfields.OutcomeApplied, logfields.OutcomeDuplicate, logfields.OutcomeStale} {
		r := base
		r.Decision = classify.Decide(outcome, classify.Class{}, false, true)
		want := with(baseFields, logfields.Outcome, outcome)
		switch outcome {
		case logfields.OutcomeDuplicate:
			want[logfields.ErrorType] = logfields.ErrorTypeDuplicate
		case logfields.OutcomeStale:
			want[logfields.ErrorType] = logfields.ErrorTypeStale
		}
		tests[outcome] = tc{r, "INFO", want}
	}
	failed := base
	failed.Err = errors.New(`store said "no": ` + strings.Repeat("x", 2*logging.MaxFieldLen))
	failed.Class = classify.Class{Type: logfields.ErrorTypeTransient, Code: "UNAVAILABLE", Retryable: true}
	failed.Decision = classify.Decide("", failed.Class, true, true)
	tests["failed"] = tc{failed, "ERROR", with(baseFields, logfields.Outcome, logfields.OutcomeRetry, logfields.ErrorType, logfields.ErrorTypeTransient,
		logfields.ErrorCode, "UNAVAILABLE", logfields.Error, logging.Bound(failed.Err.Error()), logfields.Retryable, true)}
	rejected := Result{Msg: &envelope.Message{}, Err: errors.New("bad envelope"), Class: classify.Class{Type: logfields.ErrorTypePoison}, Started: started}
	rejected.Decision = classify.Decide("", rejected.Class, true, false)
	tests["rejected without message fields"] = tc{rejected, "ERROR", map[string]any{
		logfields.Subscription: "", logfields.MessageID: "", logfields.Topic: "", logfields.Route: "", logfields.EventType: "", logfields.SchemaVersion: "",
		logfields.Outcome: rejected.Outcome, logfields.WriteKind: logfields.WriteKindNone, logfields.DocPath: "", logfields.IdempotencyDoc: "",
		logfields.StoreReads: 0.0, logfields.StoreWrites: 0.0, logfields.ErrorType: logfields.ErrorTypePoison, logfields.ErrorCode: "",
		logfields.Error: "bad envelope", logfields.Retryable: false, logfields.HTTPStatus: 200.0, logfields.AckAction: logfields.AckActionAck}}
	tests["no message"] = tc{Result{Started: started, Decision: classify.Decide(logfields.OutcomeApplied, classify.Class{}, false, false)}, "INFO",
		with(baseFields, logfields.Subscription, nil, logfields.MessageID, nil, logfields.PublishTime, nil, logfields.DeliveryAttempt, nil,
			logfields.Topic, "", logfields.Route, "", logfields.EventType, "", logfields.SchemaVersion, "", logfields.Outcome, logfields.OutcomeApplied,
			logfields.WriteKind, logfields.WriteKindNone, logfields.DocPath, "", logfields.IdempotencyDoc, "", logfields.StoreReads, 0.0, logfields.StoreWrites, 0.0)}

	ctx := context.Background()
	extra := []slog.Attr{slog.Int(logfields.HTTPStatus, 200), slog.String(logfields.AckAction, logfields.AckActionAck)}
	for name, tt := range tests {
		for kind, newLogger := range map[string]func(*bytes.Buffer) *slog.Logger{
			"logging.New": func(b *bytes.Buffer) *slog.Logger { return logging.New(b, slog.LevelInfo) },
			"slog's JSON": func(b *bytes.Buffer) *slog.Logger { return slog.New(slog.NewJSONHandler(b, nil)) },
		} {
			var out bytes.Buffer
			p := &Processor{cfg: Config{Logger: newLogger(&out)}}
			r := tt.res
			p.Log(ctx, &r, extra...)
			var line map[string]any
			if err := json.Unmarshal(out.Bytes(), &line); err != nil || strings.Count(out.String(), "\n") != 1 {
				t.Fatalf("%s, %s: not one JSON line (%v): %q", name, kind, err, out.String())
			}
			if ms, ok := line[logfields.LatencyMS].(float64); !ok || ms < 1.234 {
				t.Errorf("%s, %s: latency_ms %v, want at least 1.234", name, kind, line[logfields.LatencyMS])
			}
			// INFO and ERROR: slog's level names are Cloud Logging's.
			severity, message, level := logfields.Severity, logfields.Message, tt.severity
			if kind == "slog's JSON" {
				severity, message = slog.LevelKey, slog.MessageKey
			}
			if line[severity] != level || line[message] != "pubsub message "+tt.res.Outcome {
				t.Errorf("%s, %s: %s %v, %s %v; want %s, %q", name, kind, severity, line[severity], message, line[message], level, "pubsub message "+tt.res.Outcome)
			}
			for _, k := range []string{severity, message, slog.TimeKey, logfields.LatencyMS} {
				delete(line, k)
			}
			want := tt.fields
			if kind == "slog's JSON" && want[logfields.Error] != nil {
				want = with(want, logfields.Error, tt.res.Err.Error()) // not bounded by another logger
			}
			if !maps.Equal(line, want) {
				t.Errorf("%s, %s:\n got %v\nwant %v", name, kind, line, want)
			}
		}
	}
}
