package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/store"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	"github.com/eventpipe/eventpipe/consumer/store/opcount"
)

func TestNewValidatesConfig(t *testing.T) {
	st := memstore.New()
	tests := []struct {
		name    string
		cfg     engine.Config
		mention string
	}{
		{"no store", engine.Config{Env: "prod"}, "Config.Store"},
		{"no env", engine.Config{Store: st}, "Config.Env"},
		{"blank env", engine.Config{Store: st, Env: "  "}, "Config.Env"},
		{"bad prefix", engine.Config{Store: st, Env: "prod", CollectionPrefix: "a/b"}, "Config.CollectionPrefix"},
		{"negative ttl", engine.Config{Store: st, Env: "prod", DedupeTTL: -time.Second}, "Config.DedupeTTL"},
		{"negative attempts", engine.Config{Store: st, Env: "prod", MaxAttempts: -1}, "Config.MaxAttempts"},
		{"lease outlives record", engine.Config{Store: st, Env: "prod", LeaseDuration: time.Hour, DedupeTTL: time.Minute}, "Config.LeaseDuration"},
		{"bad mode", engine.Config{Store: st, Env: "prod", Fingerprint: "loud"}, "Config.Fingerprint"},
		{"negative skew", engine.Config{Store: st, Env: "prod", MaxEventSkew: -time.Minute}, "Config.MaxEventSkew"},
		{"negative sequence jump", engine.Config{Store: st, Env: "prod", MaxSequenceJump: -1}, "Config.MaxSequenceJump"},
		{"bad coalescing bound", engine.Config{Store: st, Env: "prod", MaxWaitingPerDocument: -2}, "Config.MaxWaitingPerDocument"},
	}
	for _, tc := range tests {
		_, err := engine.New(tc.cfg)
		var ee *engine.Error
		if !errors.As(err, &ee) || ee.Type != engine.TypeConfiguration || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%s: %v; want a configuration error naming %s", tc.name, err, tc.mention)
		}
	}
	eng, err := engine.New(engine.Config{Store: st, Env: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	d, l, r, p := eng.Collections()
	if d != "eventpipe_dedupe" || l != "eventpipe_leases" || r != "eventpipe_receipts" || p != "eventpipe_poison" {
		t.Errorf("default collections: %s %s %s %s", d, l, r, p)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		err      error
		typ      engine.ErrorType
		code     string
		retrying bool
	}{
		{&store.Error{Code: "UNAVAILABLE", Kind: store.KindTransient, Err: errors.New("x")}, engine.TypeTransient, "UNAVAILABLE", true},
		{&store.Error{Code: "40001", Kind: store.KindTransient, Err: errors.New("x")}, engine.TypeTransient, "40001", true},
		{&store.Error{Code: "PERMISSION_DENIED", Kind: store.KindConfiguration, Err: errors.New("x")}, engine.TypeConfiguration, "PERMISSION_DENIED", true},
		{fmt.Errorf("wrapped: %w", &store.Error{Code: "42P01", Kind: store.KindConfiguration, Err: errors.New("x")}), engine.TypeConfiguration, "42P01", true},
		{context.DeadlineExceeded, engine.TypeTransient, "DEADLINE_EXCEEDED", true},
		{fmt.Errorf("wait: %w", context.Canceled), engine.TypeTransient, "CANCELLED", true},
		{errors.New("nobody anticipated this"), engine.TypeTransient, "UNKNOWN", true},
		{&store.Error{Kind: store.KindTransient, Err: errors.New("a store without codes")}, engine.TypeTransient, "UNKNOWN", true},
		{&engine.Error{Type: engine.TypePoison, Code: "FINGERPRINT_MISMATCH", Err: errors.New("x")}, engine.TypePoison, "FINGERPRINT_MISMATCH", false},
		{&engine.Error{Type: engine.TypeInProgress, Err: errors.New("x")}, engine.TypeInProgress, "", true},
	}
	for _, tc := range tests {
		typ, code := engine.Classify(tc.err)
		if typ != tc.typ || code != tc.code {
			t.Errorf("Classify(%v) = %s, %q; want %s, %q", tc.err, typ, code, tc.typ, tc.code)
		}
		ee := &engine.Error{Type: typ, Code: code}
		if ee.Retryable() != tc.retrying {
			t.Errorf("%s: Retryable() = %v", typ, ee.Retryable())
		}
	}
}

func TestKillAtFailpointsParses(t *testing.T) {
	if h, err := engine.KillAtFailpoints(""); h != nil || err != nil {
		t.Errorf("empty spec: %v, %v; want no hook", h != nil, err)
	}
	h, err := engine.KillAtFailpoints(" worker-after-claim , projection-before-ack ")
	if err != nil || h == nil {
		t.Fatalf("valid spec: %v", err)
	}
	// An unarmed point returns at once.
	if err := h(context.Background(), engine.WorkerBeforeApply); err != nil {
		t.Errorf("unarmed failpoint: %v", err)
	}
	_, err = engine.KillAtFailpoints("worker-after-clam")
	if errType, _ := engine.Classify(err); errType != engine.TypeConfiguration || !strings.Contains(err.Error(), "worker-after-claim") {
		t.Errorf("typo: %v; want a configuration error listing the valid names", err)
	}
}

// TestOperationCountsPerOutcome prints and asserts store operations per
// message and outcome, measured by the op-counting wrapper around the store
// (not by the engine's own tally), for latest-state routes without and with a
// dedupe marker, insert-once writes, leases and receipts.
func TestOperationCountsPerOutcome(t *testing.T) {
	ctx := context.Background()
	counted := opcount.Wrap(memstore.New())
	eng, err := engine.New(engine.Config{Store: counted, Env: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 8, 10, 0, 0, 0, time.UTC)
	ev := func(id string, sec int) engine.Event {
		return engine.Event{MessageID: "m-" + id, EventID: id, PublishTime: t0.Add(time.Duration(sec) * time.Second),
			Payload: []byte(`{"eventId":"` + id + `"}`)}
	}
	latest := func(id string, sec int, marker bool) func() (string, error) {
		return func() (string, error) {
			r, err := eng.Materialize(ctx, ev(id, sec), engine.Write{Collection: "ops_services", ID: "svc",
				EventTime: t0.Add(time.Duration(sec) * time.Second), Fields: map[string]any{"v": sec}, DedupeMarker: marker})
			return string(r.Outcome), err
		}
	}
	create := func(id string) func() (string, error) {
		return func() (string, error) {
			r, err := eng.Materialize(ctx, ev(id, 0), engine.Write{Collection: "findings", Mode: engine.ModeCreate})
			return string(r.Outcome), err
		}
	}
	rows := []struct {
		what          string
		run           func() (string, error)
		outcome       string
		reads, writes int64
	}{
		{"latest-state", latest("a", 10, false), "applied", 1, 1},
		{"latest-state", latest("a", 10, false), "duplicate", 1, 0},
		{"latest-state", latest("b", 5, false), "stale_ignored", 1, 0},
		{"latest-state + dedupe marker", latest("c", 20, true), "applied", 1, 2},
		{"latest-state + dedupe marker", latest("c", 20, true), "duplicate", 1, 0},
		{"latest-state + dedupe marker", latest("d", 30, true), "applied", 1, 2},
		{"  superseded event again", latest("c", 20, true), "duplicate", 2, 0},
		{"insert-once (create)", create("f1"), "applied", 0, 1},
		{"insert-once (create)", create("f1"), "duplicate", 1, 1},
	}
	t.Logf("%-30s %-14s %5s %6s   (a separate dedupe document: 2 reads + 2 writes per applied message)", "route kind", "outcome", "reads", "writes")
	for _, r := range rows {
		before := counted.Counts()
		outcome, err := r.run()
		if err != nil {
			t.Fatalf("%s: %v", r.what, err)
		}
		d := counted.Counts().Sub(before)
		t.Logf("%-30s %-14s %5d %6d", r.what, outcome, d.Reads, d.Writes+d.Deletes)
		if outcome != r.outcome || d.Reads != r.reads || d.Writes+d.Deletes != r.writes {
			t.Errorf("%s: %s with %d reads + %d writes; want %s with %d + %d", r.what, outcome, d.Reads, d.Writes+d.Deletes, r.outcome, r.reads, r.writes)
		}
	}
}

func TestMaterializeRejectsReservedFields(t *testing.T) {
	eng, err := engine.New(engine.Config{Store: memstore.New(), Env: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	ev := engine.Event{MessageID: "m1"}
	for _, field := range []string{engine.MetaField, store.ExpireAtField} {
		_, err := eng.Materialize(context.Background(), ev, engine.Write{Collection: "c", ID: "a", Fields: map[string]any{field: 1}})
		if typ, _ := engine.Classify(err); typ != engine.TypeConfiguration || !strings.Contains(err.Error(), field) {
			t.Errorf("field %s: %v; want a configuration error naming it", field, err)
		}
	}
	for _, w := range []engine.Write{{Collection: "a/b", ID: "x"}, {Collection: "c"}, {Collection: "c", ID: "x", Mode: "append"}} {
		if _, err := eng.Materialize(context.Background(), ev, w); err == nil {
			t.Errorf("%+v: want an error", w)
		}
	}
}

// TestWriteKind keeps Result.WriteKind inside the closed set of the log
// field write_kind.
func TestWriteKind(t *testing.T) {
	eng, err := engine.New(engine.Config{Store: memstore.New(), Env: "prod"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ev := engine.Event{MessageID: "m1", EventID: "e1"}
	for i, w := range []engine.Write{
		{Collection: "c", ID: "a", DedupeMarker: true},
		{Collection: "d", Mode: engine.ModeCreate},
	} {
		for _, want := range []string{logfields.WriteKindSet, logfields.WriteKindNone} {
			r, err := eng.Materialize(ctx, ev, w)
			if err != nil || r.WriteKind != want {
				t.Errorf("write %d: %s with write kind %q (%v); want %q", i, r.Outcome, r.WriteKind, err, want)
			}
		}
	}
}

// TestEventTimeBeyondSkewIsLogged: an event dated far ahead of its publish
// time is ordered by its own time (every copy of it must rank the same:
// engine.Ordering), and one WARNING line gives both.
func TestEventTimeBeyondSkewIsLogged(t *testing.T) {
	var buf bytes.Buffer
	eng, err := engine.New(engine.Config{Store: memstore.New(), Env: "prod", MaxEventSkew: time.Minute,
		Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	published := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	future := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	ev := engine.Event{MessageID: "m1", PublishTime: published, EventID: "e1", Payload: []byte(`{"a":1}`)}
	w := engine.Write{Collection: "svc", ID: "checkout", EventTime: future, Fields: map[string]any{"status": "x"}}
	if _, err := eng.Materialize(context.Background(), ev, w); err != nil {
		t.Fatal(err)
	}
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("want one JSON line, got %q: %v", buf.String(), err)
	}
	if line["level"] != "WARN" || line[logfields.EventTime] != future.Format(time.RFC3339Nano) ||
		line[logfields.PublishTime] != published.Format(time.RFC3339Nano) || line[logfields.MessageID] != "m1" {
		t.Errorf("skew line = %v, want WARN with the event time, the publish time and the message id", line)
	}
	// Within the skew: no line.
	buf.Reset()
	ev.MessageID, ev.EventID, w.EventTime = "m2", "e2", published.Add(30*time.Second)
	if _, err := eng.Materialize(context.Background(), ev, w); err != nil || buf.Len() != 0 {
		t.Errorf("within the skew: %v, logged %q", err, buf.String())
	}
}
