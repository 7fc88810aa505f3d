package push

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/eventpipe/eventpipe/consumer/classify"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	ct "github.com/eventpipe/eventpipe/internal/testing/consumertest"
)

// FuzzPushDelivery holds the push handler to the consumer's promises for any
// request body, delivered twice (Pub/Sub's at-least-once) to a fresh store
// under each DLQ mode, and once to a store that fails every transaction:
//
//   - every delivery is logged on exactly one line with an outcome, which is
//     one of applied, duplicate, stale_ignored, poison and retry, and which
//     the response body repeats; the line has the documented fields;
//   - the status is the ack rule's: 200 (ack) for applied, duplicate, stale
//     and poison without a DLQ, 400 for poison with one, 5xx for retry;
//   - a poison message's error names what to fix ("fix:"), and without a
//     DLQ the message is kept whole in the poison record the line names;
//   - a redelivery of an applied message is a duplicate that writes
//     nothing, and the target document is the same after it; a redelivery
//     of poison is poison again, kept in the same record;
//   - with the store failing, nothing is acknowledged; and when the k-th
//     transaction of a delivery fails at its commit, after the engine
//     decided (k = 1, 2, 3), a delivery that was acknowledged anyway had
//     its effect committed: its redelivery is a duplicate, or its poison
//     record exists. An ack comes only after the effect is committed.
//
// The seeds, run by go test, are realistic push bodies for every default
// route with each envelope and payload field missing, null, mistyped,
// empty, oversized or in an odd form, and bodies truncated or doubled
// (deliverySeeds); go test -fuzz mutates them further.
func FuzzPushDelivery(f *testing.F) {
	for _, s := range deliverySeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, dlq := range []classify.DLQMode{classify.DLQAuto, classify.DLQOn, classify.DLQOff} {
			checkRedelivery(t, body, dlq)
		}
		checkStoreDown(t, body)
		for k := int64(1); k <= 3; k++ {
			checkCommitFails(t, body, k)
		}
	})
}

// commitFailing is a store whose k-th transaction runs to its end and then
// fails as a commit that did not take: nothing it wrote is kept.
type commitFailing struct {
	store.Store
	k, n atomic.Int64
}

func (s *commitFailing) RunTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	fail := s.n.Add(1) == s.k.Load()
	return s.Store.RunTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := fn(ctx, tx); err != nil {
			return err
		}
		if fail {
			return &store.Error{Op: "commit", Code: "ABORTED", Kind: store.KindTransient, Err: errors.New("commit failed")}
		}
		return nil
	})
}

func checkCommitFails(t *testing.T, body []byte, k int64) {
	st := &commitFailing{Store: memstore.New()}
	st.k.Store(k)
	proc, _, log := ct.NewProcessor(t, ct.Options{Store: st})
	h := New(proc, nil, nil)
	status, first := deliveryLine(t, h, log, body)
	if status >= 300 {
		return // not acknowledged: Pub/Sub delivers it again
	}
	st.k.Store(0) // the store works again
	switch first["outcome"] {
	case "applied":
		if _, again := deliveryLine(t, h, log, body); again["outcome"] != "duplicate" {
			t.Fatalf("acked as applied with transaction %d failing at commit, but the redelivery is %v: the effect was not kept", k, again["outcome"])
		}
	case "poison":
		if _, ok := poisonRecord(t, st, first); !ok && !dlqFor(classify.DLQAuto, first) {
			t.Fatalf("acked as poison with transaction %d failing at commit, but its record %v is missing", k, first["idempotency_doc"])
		}
	}
}

// deliveryLine posts body and returns the status, the response's outcome
// and the one line logged with an outcome. Other lines (the ordering
// guards' warnings) may come before it but carry no outcome.
func deliveryLine(t *testing.T, h http.Handler, log *ct.Log, body []byte) (int, map[string]any) {
	t.Helper()
	before := len(log.Lines(t))
	w := post(t, h, body)
	var lines []map[string]any
	for _, l := range log.Lines(t)[before:] {
		if _, ok := l["outcome"]; ok {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("%d lines with an outcome for one delivery, want 1: %v", len(lines), lines)
	}
	line := lines[0]
	var resp struct{ Outcome string }
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil || resp.Outcome != line["outcome"] {
		t.Fatalf("response %q does not repeat the logged outcome %v", w.Body, line["outcome"])
	}
	return w.Code, line
}

// checkLine checks one delivery's status and line against the ack rules
// and returns the outcome.
func checkLine(t *testing.T, st store.Store, status int, line map[string]any, dlq bool) string {
	t.Helper()
	outcome, _ := line["outcome"].(string)
	for _, k := range []string{"severity", "message", "outcome", "http_status", "ack_action", "write_kind", "store_reads", "store_writes", "latency_ms", "retryable"} {
		if _, ok := line[k]; !ok {
			t.Fatalf("line lacks %s: %v", k, line)
		}
	}
	if line["http_status"] != float64(status) {
		t.Fatalf("logged http_status %v, answered %d", line["http_status"], status)
	}
	ack := status >= 200 && status < 300
	if (line["ack_action"] == "ack") != ack {
		t.Fatalf("ack_action %v for status %d", line["ack_action"], status)
	}
	switch outcome {
	case "applied", "duplicate", "stale_ignored":
		if status != http.StatusOK {
			t.Fatalf("%s answered %d, want 200", outcome, status)
		}
	case "poison":
		errText, _ := line["error"].(string)
		if !strings.Contains(errText, "fix:") {
			t.Fatalf("poison error does not say how to fix it: %q", errText)
		}
		if line["error_type"] != "poison" {
			t.Fatalf("poison with error_type %v", line["error_type"])
		}
		want := http.StatusOK
		if dlq {
			want = http.StatusBadRequest
		}
		if status != want {
			t.Fatalf("poison (DLQ %v) answered %d, want %d", dlq, status, want)
		}
		if !dlq {
			if _, ok := poisonRecord(t, st, line); !ok {
				t.Fatalf("poison acked without its record (idempotency_doc %v)", line["idempotency_doc"])
			}
		}
	case "retry":
		if status < 500 {
			t.Fatalf("retry answered %d, want 5xx", status)
		}
	default:
		t.Fatalf("outcome %q is none of the five", outcome)
	}
	return outcome
}

// dlqFor says whether the delivery of body has a DLQ under mode, as the
// consumer decides it: the envelope's deliveryAttempt in auto mode.
func dlqFor(mode classify.DLQMode, line map[string]any) bool {
	_, attempt := line["deliveryAttempt"]
	return mode.HasDLQ(attempt)
}

func checkRedelivery(t *testing.T, body []byte, mode classify.DLQMode) {
	proc, st, log := ct.NewProcessor(t, ct.Options{DLQ: mode})
	h := New(proc, nil, nil)
	status, first := deliveryLine(t, h, log, body)
	dlq := dlqFor(mode, first)
	outcome := checkLine(t, st, status, first, dlq)
	target := targetDoc(t, st, first)
	status, second := deliveryLine(t, h, log, body)
	again := checkLine(t, st, status, second, dlq)
	switch outcome {
	case "applied":
		if again != "duplicate" || second["store_writes"] != 0.0 || second["write_kind"] != "none" {
			t.Fatalf("redelivery of an applied message: %s with %v writes (%v), want a duplicate writing nothing", again, second["store_writes"], second["write_kind"])
		}
		if after := targetDoc(t, st, second); !reflect.DeepEqual(after, target) {
			t.Fatalf("redelivery changed %v:\n%v\n%v", first["doc_path"], target, after)
		}
	case "poison":
		if again != "poison" || second["idempotency_doc"] != first["idempotency_doc"] {
			t.Fatalf("redelivery of poison: %s in %v, want poison in %v", again, second["idempotency_doc"], first["idempotency_doc"])
		}
	case "duplicate", "stale_ignored":
		t.Fatalf("the first delivery to an empty store was %s", outcome)
	}
}

// targetDoc reads the document a line names in doc_path (nil if none).
func targetDoc(t *testing.T, st store.Store, line map[string]any) map[string]any {
	coll, id, ok := strings.Cut(fmt.Sprint(line["doc_path"]), "/")
	if !ok || line["write_kind"] == "poison" {
		return nil
	}
	doc, _ := ct.Get(t, st, store.Key{Collection: coll, ID: id})
	return doc.Fields
}

func checkStoreDown(t *testing.T, body []byte) {
	fs := &ct.FailingStore{Store: memstore.New()}
	fs.SetErr(&store.Error{Op: "commit", Code: "UNAVAILABLE", Kind: store.KindTransient, Err: errors.New("store down")})
	proc, _, log := ct.NewProcessor(t, ct.Options{Store: fs})
	status, line := deliveryLine(t, New(proc, nil, nil), log, body)
	if status < 300 {
		t.Fatalf("acked (%d, %v) while the store fails every transaction", status, line["outcome"])
	}
}

// deliverySeeds builds push bodies from realistic messages of every
// default route, each with one field of the envelope or the payload
// changed to a missing, null, mistyped, empty or odd value, and whole
// bodies cut or doubled.
func deliverySeeds(t testing.TB) [][]byte {
	payloads := map[string]map[string]any{
		"system_events": {"service": "checkout", "status": "degraded", "producedAt": "2026-01-02T03:00:00.123Z",
			"version": "1.4.2", "region": "europe-west1", "sequence": 17, "eventId": "evt-1"},
		"ingest_heartbeat": {"eventType": "ingest_heartbeat", "pipeline": "orders", "status": "ok", "heartbeatAt": "2026-01-02T03:00:00Z",
			"recordsIngested": 1200, "lagSeconds": 1.5, "sequence": 9},
		"validation_run_started": {"eventType": "validation_run_started", "run_id": "run-7", "status": "running", "startedAt": "2026-01-02T03:00:00Z"},
		"unroutable":             {"hello": "world"},
	}
	odd := []any{nil, "", 0, -1, 1.5, 1e300, "99999999999999999999", json.Number("99999999999999999999"), json.Number("1e400"),
		true, []any{}, map[string]any{}, map[string]any{"a": "b"}, "x\u0000y", "Ab/Cd É ☃ 😀", "\ud7ff\ue000", strings.Repeat("k", 1600),
		"2026-01-02t03:00:00z", "2026-01-02 03:00:00Z", "2016-12-31T23:59:60Z", "0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z",
		"2026-01-02T03:00:00.123456789123+14:00", "2026-01-02", 1767322800, 1767322800000, "__x__", ".."}
	var bodies [][]byte
	envelope := func(data []byte, tweak func(msg, env map[string]any)) []byte {
		msg := map[string]any{"data": base64.StdEncoding.EncodeToString(data), "messageId": "17263940", "message_id": "17263940",
			"publishTime": "2026-01-02T03:00:01.5Z", "publish_time": "2026-01-02T03:00:01.5Z", "attributes": map[string]any{"origin": "svc"}}
		env := map[string]any{"message": msg, "subscription": ct.Subscription}
		if tweak != nil {
			tweak(msg, env)
		}
		b, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, name := range slices.Sorted(maps.Keys(payloads)) {
		p := payloads[name]
		data, _ := json.Marshal(p)
		bodies = append(bodies, envelope(data, nil))
		// Each payload field with each odd value, and missing.
		for _, k := range slices.Sorted(maps.Keys(p)) {
			for _, v := range append(odd, deleted{}) {
				q := maps.Clone(p)
				if _, del := v.(deleted); del {
					delete(q, k)
				} else {
					q[k] = v
				}
				var buf bytes.Buffer
				enc := json.NewEncoder(&buf)
				enc.SetEscapeHTML(false)
				if err := enc.Encode(q); err != nil {
					continue // a value JSON cannot hold
				}
				bodies = append(bodies, envelope(bytes.TrimSpace(buf.Bytes()), nil))
			}
		}
		// Payload text JSON encoders do not write.
		for _, raw := range []string{
			strings.TrimSuffix(string(data), "}") + `,"status":"other"}`, // a key twice
			strings.TrimSuffix(string(data), "}") + `,"x":"\ud800"}`,     // a lone surrogate
			strings.TrimSuffix(string(data), "}") + ",\"x\":\"\xff\"}",   // invalid UTF-8
			strings.TrimSuffix(string(data), "}") + `,"x":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
			"\ufeff" + string(data), string(data) + " " + string(data), string(data)[:len(data)/2], "[" + string(data) + "]",
			`"` + string(data) + `"`, "null", "",
		} {
			bodies = append(bodies, envelope([]byte(raw), nil))
		}
	}
	data, _ := json.Marshal(payloads["system_events"])
	// Each envelope field with each odd value, and missing.
	for _, field := range []string{"message", "subscription", "deliveryAttempt", "message.data", "message.messageId", "message.message_id",
		"message.publishTime", "message.publish_time", "message.attributes", "message.orderingKey"} {
		values := append(slices.Clone(odd), deleted{}, 3, 3.0, "3", map[string]any{"n": 1}, map[string]any{"n": nil}, map[string]any{"n": true},
			"e30=", "e30", "ey J9", "%%%", "projects/p/subscriptions/s", "projects/p/subscriptions/s/x", "17263941")
		for _, v := range values {
			bodies = append(bodies, envelope(data, func(msg, env map[string]any) {
				m, key := env, field
				if k, ok := strings.CutPrefix(field, "message."); ok {
					m, key = msg, k
				}
				if _, del := v.(deleted); del {
					delete(m, key)
				} else {
					m[key] = v
				}
			}))
		}
	}
	// Whole bodies: cut at every tenth of their length, doubled, with
	// trailing bytes, a key twice, or nothing.
	whole := envelope(data, nil)
	for i := range 10 {
		bodies = append(bodies, whole[:len(whole)*i/10])
	}
	bodies = append(bodies, append(slices.Clone(whole), whole...), append(slices.Clone(whole), " x"...),
		bytes.Replace(whole, []byte(`"messageId":"17263940"`), []byte(`"messageId":"17263940","messageId":"99"`), 1),
		bytes.Replace(whole, []byte(`{"message":`), []byte(`{"message":{},"message":`), 1),
		[]byte("   "), []byte("null"), []byte("[]"), []byte(`{"message":null}`))
	return bodies
}

// deleted marks a seed field to remove.
type deleted struct{}
