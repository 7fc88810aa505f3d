package spec_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/alerts"
	"github.com/eventpipe/eventpipe/spec"
)

func TestAlertsDefaults(t *testing.T) {
	cfg := baseConfig()
	set(cfg, "eventpipe:notificationChannels", "", []any{"projects/acme-dev/notificationChannels/9"})
	st, errs := load(t, cfg)
	if errs != nil {
		t.Fatal(errs)
	}
	if !reflect.DeepEqual(st.Alerts.Thresholds, alerts.Defaults()) {
		t.Errorf("thresholds without an alerts key = %+v, want alerts.Defaults()", st.Alerts.Thresholds)
	}
	if st.Alerts.Team != spec.DefaultTeam || st.Pipelines["orders"].Alerts.Team != spec.DefaultTeam {
		t.Errorf("team = %q / %q, want %q", st.Alerts.Team, st.Pipelines["orders"].Alerts.Team, spec.DefaultTeam)
	}
	// Both severities fall back to eventpipe:notificationChannels.
	want := []string{"projects/acme-dev/notificationChannels/9"}
	if !reflect.DeepEqual(st.Alerts.Channels.Critical, want) || !reflect.DeepEqual(st.Alerts.Channels.Warning, want) {
		t.Errorf("channels = %+v, want both %v", st.Alerts.Channels, want)
	}
	if !st.Pipelines["orders"].Alerts.Enabled() {
		t.Error("alerts are off without an opt-out")
	}
}

func TestAlertsOverridesAndTarget(t *testing.T) {
	cfg := baseConfig()
	set(cfg, "eventpipe:alerts", "", map[string]any{
		"team":       "payments",
		"channels":   map[string]any{"critical": []any{"projects/acme-dev/notificationChannels/1"}},
		"thresholds": map[string]any{"push": map[string]any{"serverErrorWarning": 0.02}, "dlq": map[string]any{"warningFor": "10m"}},
	})
	set(cfg, "eventpipe:notificationChannels", "", []any{"projects/acme-dev/notificationChannels/2"})
	set(cfg, "eventpipe:pipelines", "orders.alerts.team", "orders-team")
	set(cfg, "eventpipe:pipelines", "orders.subscriptions.work.deadLetter", map[string]any{"optOut": true, "reason": "replayed from source"})
	st, errs := load(t, cfg)
	if errs != nil {
		t.Fatal(errs)
	}
	th := st.Alerts.Thresholds
	if th.Push.ServerErrorWarning != 0.02 || th.DLQ.WarningFor.D() != 10*time.Minute || th.Push.ServerErrorCritical != 0.05 {
		t.Errorf("thresholds = %+v", th)
	}
	if got := st.Alerts.Channels; got.Critical[0] != "projects/acme-dev/notificationChannels/1" || got.Warning[0] != "projects/acme-dev/notificationChannels/2" {
		t.Errorf("channels = %+v: critical set explicitly, warning from notificationChannels", got)
	}
	tg := st.AlertTarget(st.Pipelines["orders"])
	want := alerts.Target{
		Project: "acme-dev", Pipeline: "orders", Env: "dev", Team: "orders-team", Service: "orders-consumer",
		Subscriptions: []alerts.Subscription{
			{Name: "orders-main", Topic: "orders", DLQSubscription: "orders-main.dlq-sub", DLQTopic: "orders-main.dlq", Push: true},
			{Name: "orders-work", Topic: "orders"},
		},
		Channels: st.Alerts.Channels,
	}
	if !reflect.DeepEqual(tg, want) {
		t.Errorf("target =\n%+v\nwant\n%+v", tg, want)
	}
	if err := tg.Validate(); err != nil {
		t.Errorf("target from a valid stack does not validate: %v", err)
	}
}

func TestAlertsValidation(t *testing.T) {
	const al, pl = "eventpipe:alerts", "eventpipe:pipelines"
	cases := []struct {
		name, key, path string
		value           any
		wantPath        string
		wantAllowed     string
	}{
		{"ratio as percent", al, "thresholds.push.serverErrorCritical", 5, al + ".thresholds.push.serverErrorCritical", "between 0 and 1"},
		{"ratio as string", al, "thresholds.push.serverErrorWarning", "1%", al + ".thresholds.push.serverErrorWarning", "a number"},
		{"duration as number", al, "thresholds.dlq.warningFor", 300, al + ".thresholds.dlq.warningFor", "a duration string"},
		{"duration too short", al, "thresholds.backlog.growthWindow", "30s", al + ".thresholds.backlog.growthWindow", "whole number of minutes"},
		{"unknown threshold", al, "thresholds.push.errorRate", 0.1, al + ".thresholds.push.errorRate", "the keys"},
		{"bad channel", al, "channels.warning", []any{"#oncall"}, al + ".channels.warning[0]", "notificationChannels/ID"},
		{"bad team", al, "team", "Payments Team", al + ".team", "label value"},
		{"opt-out without reason", pl, "orders.alerts.optOut", true, pl + ".orders.alerts.reason", "short reason"},
		{"reason without opt-out", pl, "orders.alerts.reason", "noisy", pl + ".orders.alerts.reason", "only with alerts.optOut"},
		{"bad pipeline team", pl, "orders.alerts.team", "Orders!", pl + ".orders.alerts.team", "label value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig()
			set(cfg, tc.key, tc.path, tc.value)
			_, errs := load(t, cfg)
			if len(errs) != 1 {
				t.Fatalf("got %d errors, want 1: %v", len(errs), errs)
			}
			e := errs[0]
			if e.Path != tc.wantPath || !strings.Contains(e.Allowed, tc.wantAllowed) || e.Fix == "" {
				t.Errorf("error = %q\nwant path %q allowing %q, with a fix", e.Error(), tc.wantPath, tc.wantAllowed)
			}
			if strings.HasPrefix(e.Path, pl+".orders") != (e.Pipeline == "orders") {
				t.Errorf("pipeline = %q for path %s", e.Pipeline, e.Path)
			}
		})
	}
}

func TestAlertsOptOut(t *testing.T) {
	cfg := baseConfig()
	set(cfg, "eventpipe:pipelines", "orders.alerts", map[string]any{"optOut": true, "reason": "load test"})
	st, errs := load(t, cfg)
	if errs != nil {
		t.Fatal(errs)
	}
	if st.Pipelines["orders"].Alerts.Enabled() {
		t.Error("opted-out pipeline still has alerts enabled")
	}
}
