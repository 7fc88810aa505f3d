package route

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/consumer/envelope"
	"github.com/eventpipe/eventpipe/consumer/logging"
)

func msg(t *testing.T, payload string) *envelope.Message {
	t.Helper()
	p, err := envelope.DecodePayload([]byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	return &envelope.Message{
		ID: "m-1", Data: []byte(payload), Payload: p, Attributes: map[string]string{},
		PublishTime:  time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Subscription: "projects/p/subscriptions/s",
	}
}

func TestDefaultRoutesApply(t *testing.T) {
	table, err := LoadFile("")
	if err != nil {
		t.Fatalf("embedded default routes invalid: %v", err)
	}
	tests := []struct {
		name     string
		payload  string
		route    string
		doc      string
		fields   map[string]any
		seq      *int64
		at       time.Time
		identity bool // every identity field present
	}{
		{
			name:    "system event",
			payload: `{"service":"Strategy Engine","status":"healthy","version":"1.2.3","region":"eu","producedAt":"2026-01-02T03:00:00Z","sequence":7}`,
			route:   "system_events", doc: "ops_services/prod__strategy_20engine",
			fields: map[string]any{"serviceId": "Strategy Engine", "env": "prod", "status": "healthy", "version": "1.2.3", "region": "eu",
				"updatedAt":       time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC),
				"lastHeartbeatAt": time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC),
				"sequence":        int64(7),
				"source": map[string]any{"topic": "system-events", "messageId": "m-1",
					"publishedAt": time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}},
			seq: ptr(7), at: time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC), identity: true,
		},
		{
			name:    "system event falls back to publishTime",
			payload: `{"service":"api","status":"down"}`,
			route:   "system_events", doc: "ops_services/prod__api",
			at: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		},
		{
			name:    "ingest heartbeat wins over shape match",
			payload: `{"eventType":"ingest_heartbeat","pipeline":"orders","status":"ok","service":"x","heartbeatAt":1767322800}`,
			route:   "ingest_heartbeat", doc: "ingest_pipelines/prod__orders",
			at: time.Unix(1767322800, 0).UTC(), identity: true,
		},
		{
			name:    "validation run started creates the run callbacks update",
			payload: `{"eventType":"validation_run_started","run_id":"run-1","status":"running","startedAt":"2026-01-02T03:00:00Z"}`,
			route:   "validation_run_started", doc: "validation_runs/prod__run-1",
			fields: map[string]any{"runId": "run-1", "env": "prod", "status": "running",
				"startedAt": time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC), "updatedAt": time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)},
			at: time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC), identity: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := msg(t, tt.payload)
			r, err := table.Match(m.Payload)
			if err != nil {
				t.Fatal(err)
			}
			if r.Name != tt.route {
				t.Fatalf("route %s, want %s", r.Name, tt.route)
			}
			p, err := r.Apply(m, "prod")
			if err != nil {
				t.Fatal(err)
			}
			if p.Target.String() != tt.doc {
				t.Fatalf("doc %s, want %s", p.Target, tt.doc)
			}
			for k, want := range tt.fields {
				if got := p.Fields()[k]; !equalJSON(got, want) {
					t.Errorf("field %s = %#v, want %#v", k, got, want)
				}
			}
			if !p.EventTime.Equal(tt.at) || !equalJSON(p.Sequence, tt.seq) {
				t.Errorf("ordering = %v %v, want %v %v", p.EventTime, p.Sequence, tt.at, tt.seq)
			}
			if (len(p.Identity) > 0) != tt.identity {
				t.Errorf("identity %v, want one: %v", p.Identity, tt.identity)
			}
		})
	}
}

func ptr(v int64) *int64 { return &v }

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestApplyPoison(t *testing.T) {
	table, err := LoadFile("")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, payload, field string
	}{
		{"bad timestamp", `{"service":"api","status":"ok","producedAt":"soon"}`, "lastHeartbeatAt"},
		{"bad sequence", `{"service":"api","status":"ok","sequence":"seven"}`, "sequence"},
		{"service not string", `{"service":{"a":1},"status":"ok"}`, "serviceId"},
		{"blank service id", `{"service":"  ","status":"ok"}`, "serviceId"},
		{"heartbeat without pipeline", `{"eventType":"ingest_heartbeat","status":"ok"}`, "pipelineId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := msg(t, tt.payload)
			r, err := table.Match(m.Payload)
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Apply(m, "prod")
			var pe *FieldError
			if !errors.As(err, &pe) || pe.Path != tt.field || pe.Fix == "" {
				t.Fatalf("want FieldError on %s, got %v", tt.field, err)
			}
		})
	}
	if _, err := table.Match(msg(t, `{"hello":"world"}`).Payload); !errors.Is(err, ErrUnroutable) {
		t.Fatalf("want ErrUnroutable, got %v", err)
	}
}

func TestCompileErrorsNameRouteFieldAndFix(t *testing.T) {
	base := func() Route {
		return Route{
			Name: "svc", Match: Match{Fields: []string{"service"}}, Mode: ModeLatestState,
			Target:   Target{Collection: "ops", ID: "id"},
			Fields:   map[string]Field{"id": {From: []string{"service"}, Type: "string", Required: true}, "at": {From: []string{"$publishTime"}, Type: "timestamp"}},
			Ordering: &Ordering{EventTime: "at"},
		}
	}
	tests := []struct {
		name  string
		edit  func(r *Route)
		field string
	}{
		{"bad name", func(r *Route) { r.Name = "Bad Name" }, "name"},
		{"bad mode", func(r *Route) { r.Mode = "fast" }, "mode"},
		{"no match", func(r *Route) { r.Match = Match{} }, "match"},
		{"types without field", func(r *Route) { r.Match.Types = []string{"x"} }, "match.types"},
		{"bad collection", func(r *Route) { r.Target.Collection = "a/b" }, "target.collection"},
		{"unknown id field", func(r *Route) { r.Target.ID = "nope" }, "target.id"},
		{"optional id field", func(r *Route) { f := r.Fields["id"]; f.Required = false; r.Fields["id"] = f }, "fields.id.required"},
		{"bad type", func(r *Route) { r.Fields["x"] = Field{From: []string{"x"}, Type: "date"} }, "fields.x.type"},
		{"unknown special", func(r *Route) { r.Fields["x"] = Field{From: []string{"$nope"}} }, "fields.x.from[0]"},
		{"unknown ordering", func(r *Route) { r.Ordering.EventTime = "zz" }, "ordering.eventTime"},
		{"sequence not integer", func(r *Route) { r.Ordering.Sequence = "id" }, "fields.id.type"},
		{"untyped ordering", func(r *Route) { r.Fields["at"] = Field{From: []string{"at"}} }, "fields.at.type"},
		{"negative sequence jump", func(r *Route) {
			r.Fields["seq"] = Field{From: []string{"seq"}, Type: "integer"}
			r.Ordering.Sequence, r.Ordering.MaxSequenceJump = "seq", -1
		}, "ordering.maxSequenceJump"},
		{"sequence jump without sequence", func(r *Route) { r.Ordering.MaxSequenceJump = 10 }, "ordering.maxSequenceJump"},
		{"latest-state without ordering", func(r *Route) { r.Ordering = nil }, "ordering.eventTime"},
		{"lease without action", func(r *Route) { r.Mode, r.Target, r.Ordering = ModeLease, Target{}, nil }, "action"},
		{"lease with target", func(r *Route) {
			r.Mode, r.Ordering, r.Action = ModeLease, nil, &Action{URL: "http://x"}
		}, "target"},
		{"lease bad url", func(r *Route) {
			r.Mode, r.Target, r.Ordering, r.Action = ModeLease, Target{}, nil, &Action{URL: "ftp://x"}
		}, "action.url"},
		{"heartbeat too slow", func(r *Route) {
			r.Mode, r.Target, r.Ordering = ModeLease, Target{}, nil
			r.Action = &Action{URL: "http://x", LeaseTTL: Duration(time.Minute), Heartbeat: Duration(time.Minute)}
		}, "action.heartbeat"},
		{"lease aggregate without sequence", func(r *Route) {
			r.Mode, r.Target, r.Ordering = ModeLease, Target{}, nil
			r.Action = &Action{URL: "http://x", Aggregate: "id"}
		}, "action.aggregate"},
		{"lease sequence not integer", func(r *Route) {
			r.Mode, r.Target, r.Ordering = ModeLease, Target{}, nil
			r.Action = &Action{URL: "http://x", Aggregate: "id", Sequence: "at"}
		}, "fields.at.type"},
		{"lease unknown aggregate", func(r *Route) {
			r.Mode, r.Target, r.Ordering = ModeLease, Target{}, nil
			r.Action = &Action{URL: "http://x", Aggregate: "nope", Sequence: "at"}
		}, "action.aggregate"},
		{"receipt on pubsub", func(r *Route) { r.Mode = ModeReceipt; r.Ordering = nil }, "mode"},
		{"callback with match", func(r *Route) { r.Ingress = IngressCallback; r.Mode = ModeReceipt; r.Ordering = nil }, "match"},
		{"nested conflict", func(r *Route) {
			r.Fields["source"] = Field{From: []string{"s"}}
			r.Fields["source.topic"] = Field{From: []string{"$topic"}}
		}, "fields.source"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := base()
			tt.edit(&r)
			_, err := Compile(Config{Routes: []Route{r}})
			if err == nil {
				t.Fatal("accepted")
			}
			want := `routes[0] "` + r.Name + `": ` + tt.field + ":"
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "fix:") {
				t.Fatalf("error does not name %q with a fix:\n%v", want, err)
			}
		})
	}
	if _, err := Compile(Config{Routes: []Route{base()}}); err != nil {
		t.Fatalf("base route rejected: %v", err)
	}
	if _, err := Compile(Config{Routes: []Route{base(), base()}}); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("duplicate names accepted: %v", err)
	}
}

func TestParseRejectsUnknownKeys(t *testing.T) {
	_, err := Parse([]byte(`{"routes":[{"name":"x","mdoe":"lease"}]}`))
	if err == nil || !strings.Contains(err.Error(), "mdoe") {
		t.Fatalf("misspelt key accepted: %v", err)
	}
}

func TestLoadFileSources(t *testing.T) {
	inline := `{"routes":[{"name":"svc","match":{"fields":["service"]},"mode":"latest-state",
		"target":{"collection":"ops","id":"id"},
		"fields":{"id":{"from":["service"],"type":"string","required":true},"at":{"from":["$publishTime"],"type":"timestamp"}},
		"ordering":{"eventTime":"at"}}]}`
	path := t.TempDir() + "/routes.json"
	if err := os.WriteFile(path, []byte(inline), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, arg string
		routes    int
		wantErr   string
	}{
		{"embedded default routes", "", 4, ""},
		{"file", path, 1, ""},
		{"inline JSON", "  " + inline, 1, ""},
		{"missing file", path + ".nope", 0, "read routes file"},
		{"bad inline JSON", `{"routes":[{"name":"x"}]}`, 0, "EVENTPIPE_ROUTES (inline JSON)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table, err := LoadFile(tt.arg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("want error %q, got %v", tt.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n := len(table.Routes()); n != tt.routes {
				t.Fatalf("%d routes, want %d", n, tt.routes)
			}
		})
	}
}

// TestDurationGrammarIsTheStackConfigs: route durations are read like the stack config's
// (internal/durations): Go syntax and whole days, so the "1d" a stack accepts is accepted
// here too; anything else is refused with the value and the fix.
func TestDurationGrammarIsTheStackConfigs(t *testing.T) {
	for in, want := range map[string]time.Duration{`"30s"`: 30 * time.Second, `"1h30m"`: 90 * time.Minute, `"1d"`: 24 * time.Hour, `"14d"`: 14 * 24 * time.Hour} {
		var d Duration
		if err := json.Unmarshal([]byte(in), &d); err != nil || time.Duration(d) != want {
			t.Errorf("%s = %v, %v; want %v", in, time.Duration(d), err, want)
		}
	}
	for _, in := range []string{`"1.5d"`, `"soon"`, `30`} {
		var d Duration
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("%s accepted as %v", in, time.Duration(d))
		}
	}
}

// TestUnroutableErrorBoundsKeys holds, over key counts and key lengths up
// to a megabyte, that the "no route matches" error names at most ten of
// the payload's keys, each bounded like a log field: its text stays a few
// kilobytes however large the keys (it was megabytes, kept by every span
// and in memory per poison delivery).
func TestUnroutableErrorBoundsKeys(t *testing.T) {
	table, err := LoadFile("")
	if err != nil {
		t.Fatal(err)
	}
	for _, keys := range []int{1, 9, 10, 11, 40} {
		for _, keyLen := range []int{1, logging.MaxFieldLen, logging.MaxFieldLen + 1, 1 << 20} {
			var b strings.Builder
			b.WriteString("{")
			for k := range keys {
				if k > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `"%d-%s":%d`, k, strings.Repeat("é", keyLen/2), k)
			}
			b.WriteString("}")
			_, err := table.Match(msg(t, b.String()).Payload)
			if !errors.Is(err, ErrUnroutable) {
				t.Fatalf("%d keys of %d bytes: want ErrUnroutable, got %v", keys, keyLen, err)
			}
			if bound := 11*(logging.MaxFieldLen+1) + 200; len(err.Error()) > bound {
				t.Fatalf("%d keys of %d bytes: error text is %d bytes, want at most %d", keys, keyLen, len(err.Error()), bound)
			}
		}
	}
}
