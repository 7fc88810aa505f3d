package spec_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/spec"
)

func TestAlertsDefaults(t *testing.T) {
	cfg := baseConfig()
	set(cfg, "eventpipe:notificationChannels", "", []any{"projects/acme-dev/notificationChannels/9"})
	st, errs := load(t, cfg)
	if errs != nil {
		t.Fatal(errs)
	}
	if st.Alerts.Thresholds != nil {
		t.Errorf("thresholds without an alerts key = %s, want none (the defaults)", st.Alerts.Thresholds)
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

func TestAlertsOverrides(t *testing.T) {
	cfg := baseConfig()
	set(cfg, "eventpipe:alerts", "", map[string]any{
		"team":       "payments",
		"channels":   map[string]any{"critical": []any{"projects/acme-dev/notificationChannels/1"}},
		"thresholds": map[string]any{"push": map[string]any{"serverErrorWarning": 0.02}},
	})
	set(cfg, "eventpipe:notificationChannels", "", []any{"projects/acme-dev/notificationChannels/2"})
	set(cfg, "eventpipe:pipelines", "orders.alerts.team", "orders-team")
	st, errs := load(t, cfg)
	if errs != nil {
		t.Fatal(errs)
	}
	// The thresholds are kept as written, for the alerts package to read.
	if got := string(st.Alerts.Thresholds); got != `{"push":{"serverErrorWarning":0.02}}` {
		t.Errorf("thresholds = %s", got)
	}
	if got := st.Alerts.Channels; got.Critical[0] != "projects/acme-dev/notificationChannels/1" || got.Warning[0] != "projects/acme-dev/notificationChannels/2" {
		t.Errorf("channels = %+v: critical set explicitly, warning from notificationChannels", got)
	}
	if st.Pipelines["orders"].Alerts.Team != "orders-team" {
		t.Errorf("pipeline team = %q", st.Pipelines["orders"].Alerts.Team)
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
		{"thresholds not an object", al, "thresholds", []any{1}, al + ".thresholds", "an object"},
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
