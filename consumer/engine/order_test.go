package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/engine"
	"github.com/eventpipe/eventpipe/consumer/logfields"
	"github.com/eventpipe/eventpipe/consumer/store/memstore"
	"github.com/eventpipe/eventpipe/internal/testing/storetest"
)

// FuzzOrdering runs the ordering property of the conformance suite
// (storetest.OrderingProperty: no message freezes a document; deliveries
// inside the window converge) on the memory store, for the cases
// generated from each seed; plain go test runs the seed corpus. The store
// is guarded: no document the engine read may change (store.Tx).
func FuzzOrdering(f *testing.F) {
	for seed := range uint64(200) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		storetest.OrderingProperty(t, storetest.Guard(t, memstore.New()), seed)
	})
}

// orderLog is an engine on a memory store whose WARNING lines are kept.
type orderLog struct {
	t   *testing.T
	eng *engine.Engine
	buf bytes.Buffer
	now time.Time
}

func newOrderLog(t *testing.T, mod func(*engine.Config)) *orderLog {
	o := &orderLog{t: t, now: time.Date(2026, 1, 8, 10, 0, 0, 0, time.UTC)}
	cfg := engine.Config{Store: memstore.New(), Env: "prod", Now: func() time.Time { return o.now },
		Logger: slog.New(slog.NewJSONHandler(&o.buf, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if mod != nil {
		mod(&cfg)
	}
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	o.eng = eng
	return o
}

// deliver materialises event id at the clock's time, published at
// published with event time at, and returns its outcome and the lines
// logged for it.
func (o *orderLog) deliver(id string, published, at time.Time, seq *int64, mod func(*engine.Write)) (engine.Outcome, []map[string]any) {
	o.t.Helper()
	o.buf.Reset()
	w := engine.Write{Collection: "svc", ID: "checkout", EventTime: at, Sequence: seq, Fields: map[string]any{"from": id}}
	if mod != nil {
		mod(&w)
	}
	r, err := o.eng.Materialize(context.Background(), engine.Event{MessageID: "m-" + id, EventID: id, PublishTime: published,
		Payload: []byte(fmt.Sprintf(`{"id":%q}`, id))}, w)
	if err != nil {
		o.t.Fatalf("deliver %s: %v", id, err)
	}
	var lines []map[string]any
	dec := json.NewDecoder(&o.buf)
	dec.UseNumber()
	for dec.More() {
		var line map[string]any
		if err := dec.Decode(&line); err != nil {
			o.t.Fatalf("log: %v", err)
		}
		lines = append(lines, line)
	}
	return r.Outcome, lines
}

func seq(v int64) *int64 { return &v }

// TestSequenceJumpIsLogged: a sequence more than MaxSequenceJump away from
// the stored one is logged at WARNING with both values, on the message
// that jumps and on those that meet the jump stored; inside the window
// the sequences still order, beyond it the later update wins.
func TestSequenceJumpIsLogged(t *testing.T) {
	o := newOrderLog(t, func(c *engine.Config) { c.MaxSequenceJump = 10 })
	t0 := o.now
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	for _, step := range []struct {
		id        string
		published time.Duration
		seq       int64
		want      engine.Outcome
		stored    int64 // the stored sequence a WARNING line names; 0 for no line
	}{
		{"e41", 0, 41, engine.Applied, 0},
		{"e-max", time.Second, math.MaxInt64, engine.Applied, 41},
		{"e42", 2 * time.Second, 42, engine.Stale, math.MaxInt64}, // inside the window: the sequence orders
		{"e43", time.Hour, 43, engine.Applied, math.MaxInt64},     // beyond it: not held back
		{"e44", time.Hour + time.Second, 44, engine.Applied, 0},
	} {
		o.now = at(step.published)
		got, lines := o.deliver(step.id, at(step.published), at(step.published), seq(step.seq), nil)
		if got != step.want {
			t.Errorf("%s: %s, want %s", step.id, got, step.want)
		}
		switch {
		case step.stored == 0 && len(lines) > 0:
			t.Errorf("%s: logged %v, want nothing", step.id, lines)
		case step.stored != 0 && (len(lines) != 1 || lines[0]["level"] != "WARN" ||
			lines[0]["sequence"] != json.Number(fmt.Sprint(step.seq)) || lines[0]["stored_sequence"] != json.Number(fmt.Sprint(step.stored)) ||
			lines[0]["max_sequence_jump"] != json.Number("10") || lines[0][logfields.Outcome] != string(step.want)):
			t.Errorf("%s: logged %v, want one WARN line with sequence %d, stored_sequence %d, max_sequence_jump 10 and outcome %s",
				step.id, lines, step.seq, step.stored, step.want)
		}
	}
}

// TestWriteMaxSequenceJump: across the window a sequence step counts up to
// the route's bound (Write.MaxSequenceJump, else Config's); beyond it the
// event time decides. A negative bound is a configuration error.
func TestWriteMaxSequenceJump(t *testing.T) {
	for _, tc := range []struct {
		bound int64
		want  engine.Outcome
	}{{0, engine.Applied}, {5, engine.Applied}, {4, engine.Stale}} {
		o := newOrderLog(t, nil)
		t0 := o.now
		// A producer instance whose clock runs fast by a minute publishes 10.
		o.deliver("e10", t0, t0.Add(time.Minute), seq(10), nil)
		// Ten minutes later one whose clock is 20 minutes slow publishes 15.
		o.now = t0.Add(10 * time.Minute)
		got, _ := o.deliver("e15", o.now, o.now.Add(-20*time.Minute), seq(15), func(w *engine.Write) { w.MaxSequenceJump = tc.bound })
		if got != tc.want {
			t.Errorf("bound %d: sequence 15 after 10, published beyond the window, older by its event time: %s, want %s", tc.bound, got, tc.want)
		}
	}
	o := newOrderLog(t, nil)
	_, err := o.eng.Materialize(context.Background(), engine.Event{MessageID: "m", EventID: "e"},
		engine.Write{Collection: "svc", ID: "x", MaxSequenceJump: -1, Fields: map[string]any{}})
	if typ, _ := engine.Classify(err); typ != engine.TypeConfiguration || !strings.Contains(err.Error(), "Write.MaxSequenceJump") {
		t.Errorf("negative Write.MaxSequenceJump: %v, want a configuration error naming it", err)
	}
}

// TestPublishTimeAheadOfClockIsLogged: a publish time beyond the clock
// tolerance ahead of the clock is not trusted: the time received orders it
// and one WARNING line gives both, so the window a later update must be
// published beyond starts then.
func TestPublishTimeAheadOfClockIsLogged(t *testing.T) {
	o := newOrderLog(t, func(c *engine.Config) { c.MaxEventSkew = time.Minute })
	t0 := o.now
	future := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	got, lines := o.deliver("e-future", future, t0, seq(math.MaxInt64), nil)
	if got != engine.Applied || len(lines) != 1 || lines[0]["level"] != "WARN" ||
		lines[0][logfields.PublishTime] != future.Format(time.RFC3339Nano) || lines[0]["received_at"] != t0.Format(time.RFC3339Nano) {
		t.Fatalf("publish time 9999-12-31: %s, logged %v; want applied and one WARN line with the publish time and the time received", got, lines)
	}
	o.now = t0.Add(time.Minute + time.Second)
	if got, _ := o.deliver("e-next", o.now, o.now, seq(1), nil); got != engine.Applied {
		t.Errorf("an update published beyond the window after the time received: %s, want applied", got)
	}
	// Within the tolerance ahead of the clock: trusted, no line.
	if got, lines := o.deliver("e-ahead", o.now.Add(engine.ClockTolerance), o.now, seq(2), nil); got != engine.Applied || len(lines) != 0 {
		t.Errorf("publish time within the clock tolerance ahead: %s, logged %v", got, lines)
	}
	// Beyond it (a minute: once within the window, the bound before the
	// tolerance): the time received orders it.
	if _, lines := o.deliver("e-later", o.now.Add(time.Minute), o.now, seq(3), nil); len(lines) != 1 || lines[0]["received_at"] != o.now.Format(time.RFC3339Nano) {
		t.Errorf("publish time a minute ahead of the clock: logged %v, want one WARN line with the time received", lines)
	}
}
