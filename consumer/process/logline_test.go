package process

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/classify"
	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/logging"
)

// TestLineFieldByFieldIsTheAttrsLine writes results' lines field by field
// (logging.Line, Log's way) and from their attributes (the fallback), at
// one time, and wants the same bytes; and checks that Log falls back to
// slog for a logger that is not logging.New's.
func TestLineFieldByFieldIsTheAttrsLine(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 678000000, time.UTC)
	msg := &envelope.Message{ID: "m-1", Subscription: "projects/p/subscriptions/s", DeliveryAttempt: 3,
		PublishTime: time.Date(2026, 1, 2, 5, 4, 4, 123456789, time.FixedZone("", 2*3600))}
	base := Result{Msg: msg, Route: "system_events", Topic: "system-events", EventType: "heartbeat", SchemaVersion: "1",
		WriteKind: logfields.WriteKindSet, DocPath: "ops_services/t__api", IdemDoc: "eventpipe_dedupe/t__e-1",
		Reads: 1, Writes: 2, Started: now.Add(-1234 * time.Microsecond)}
	results := map[string]Result{}
	for _, outcome := range []string{logfields.OutcomeApplied, logfields.OutcomeDuplicate, logfields.OutcomeStale} {
		r := base
		r.Decision = classify.Decide(outcome, classify.Class{}, false, true)
		results[outcome] = r
	}
	failed := base
	failed.Err = errors.New(`store said "no": ` + strings.Repeat("x", 600))
	failed.Class = classify.Class{Type: logfields.ErrorTypeTransient, Code: "UNAVAILABLE", Retryable: true}
	failed.Decision = classify.Decide("", failed.Class, true, true)
	results["failed"] = failed
	rejected := Result{Msg: &envelope.Message{}, Err: errors.New("bad envelope"), Class: classify.Class{Type: logfields.ErrorTypePoison}, Started: now}
	rejected.Decision = classify.Decide("", rejected.Class, true, false)
	results["rejected without message fields"] = rejected
	results["no message"] = Result{Started: now, Decision: classify.Decide(logfields.OutcomeApplied, classify.Class{}, false, false)}

	ctx := context.Background()
	extra := []slog.Attr{slog.Int(logfields.HTTPStatus, 200), slog.String(logfields.AckAction, logfields.AckActionAck)}
	keys := newLineKeys()
	for name, r := range results {
		var direct, attrs bytes.Buffer
		w := lineWriter{keys: keys}
		if w.line, w.direct = logging.StartLine(ctx, logging.New(&direct, slog.LevelInfo), now, r.Level, "m"); !w.direct {
			t.Fatal("StartLine declined logging.New's logger")
		}
		r.fields(&w, now, extra)
		if !w.line.End() {
			t.Fatalf("%s: the line failed", name)
		}
		w = lineWriter{keys: keys}
		r.fields(&w, now, extra)
		logging.LogAttrsAt(ctx, logging.New(&attrs, slog.LevelInfo), now, r.Level, "m", w.attrs)
		if direct.String() != attrs.String() || direct.Len() == 0 {
			t.Errorf("%s:\nfield by field %s\n   attributes %s", name, direct.String(), attrs.String())
		}
	}

	// A logger of another kind: slog writes the line, same fields.
	var out bytes.Buffer
	p := &Processor{cfg: Config{Logger: slog.New(slog.NewJSONHandler(&out, nil))}, keys: keys,
		attrs: newAttrPool()}
	r := results[logfields.OutcomeDuplicate]
	p.Log(ctx, &r, extra...)
	for _, want := range []string{`"msg":"pubsub message duplicate"`, `"messageId":"m-1"`, `"publishTime":"2026-01-02T03:04:04.123456789Z"`,
		`"error_type":"duplicate"`, `"http_status":200`, `"ack_action":"ack"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("slog's line %s lacks %s", out.String(), want)
		}
	}
}
