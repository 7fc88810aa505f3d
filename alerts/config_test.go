package alerts

import (
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestDefaultsAreTheDocumentedThresholds(t *testing.T) {
	c := Defaults()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	// The documented starting thresholds, value by value.
	checks := []struct {
		name      string
		got, want any
	}{
		{"dlq warning for", c.DLQ.WarningFor.D(), 5 * time.Minute},
		{"dlq critical for", c.DLQ.CriticalFor.D(), 15 * time.Minute},
		{"dlq dead-lettered critical", c.DLQ.DeadLetteredCritical, 10},
		{"dlq dead-lettered window", c.DLQ.DeadLetteredWindow.D(), 10 * time.Minute},
		{"5xx warning", c.Push.ServerErrorWarning, 0.01},
		{"5xx critical", c.Push.ServerErrorCritical, 0.05},
		{"5xx for", c.Push.ServerErrorFor.D(), 5 * time.Minute},
		{"4xx warning", c.Push.ClientErrorWarning, 0.001},
		{"4xx critical", c.Push.ClientErrorCritical, 0.01},
		{"4xx for", c.Push.ClientErrorFor.D(), 10 * time.Minute},
		{"age warning", c.Backlog.OldestAgeWarning.D(), 5 * time.Minute},
		{"age critical", c.Backlog.OldestAgeCritical.D(), 15 * time.Minute},
		{"growth warning", c.Backlog.GrowthWarningFor.D(), 15 * time.Minute},
		{"growth critical", c.Backlog.GrowthCriticalFor.D(), 30 * time.Minute},
		{"firestore warning/min", c.Firestore.TransientWarningPerMinute, 5.0},
		{"firestore critical/min", c.Firestore.TransientCriticalPerMinute, 20.0},
		{"firestore for", c.Firestore.TransientFor.D(), 10 * time.Minute},
		{"lease acquire", c.Leases.AcquireFailures, 10},
		{"lease heartbeat", c.Leases.HeartbeatFailures, 5},
		{"lease stale", c.Leases.StaleLeases, 3},
		{"lease window", c.Leases.Window.D(), time.Hour},
		{"burn rates", len(c.SLO.BurnRates), 3},
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
	want := []BurnRate{
		{14.4, Dur(time.Hour), Dur(5 * time.Minute), Critical},
		{6, Dur(6 * time.Hour), Dur(30 * time.Minute), Critical},
		{1, Dur(72 * time.Hour), Dur(6 * time.Hour), Warning},
	}
	for i, b := range want {
		if c.SLO.BurnRates[i] != b {
			t.Errorf("burn rate %d = %+v, want %+v", i, c.SLO.BurnRates[i], b)
		}
	}
}

func TestDefaultsAreFresh(t *testing.T) {
	a := Defaults()
	a.SLO.BurnRates[0].Factor = 99
	if Defaults().SLO.BurnRates[0].Factor != 14.4 {
		t.Fatal("Defaults shares its burn-rate slice between calls")
	}
}

func TestValidateRejects(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*Config)
		field  string // FieldError.Path expected, below alerts.
		fix    string // substring of the fix
	}{
		{"ratio as percent", func(c *Config) { c.Push.ServerErrorWarning = 1 }, "push.serverErrorWarning", "fractions"},
		{"negative ratio", func(c *Config) { c.Push.ClientErrorCritical = -0.1 }, "push.clientErrorCritical", "fractions"},
		{"warning above critical ratio", func(c *Config) { c.Push.ServerErrorWarning = 0.06 }, "push.serverErrorWarning", "warning must fire before"},
		{"window below ingestion delay", func(c *Config) { c.DLQ.WarningFor = Dur(time.Minute) }, "dlq.warningFor", "4 minutes late"},
		{"not whole minutes", func(c *Config) { c.Push.ServerErrorFor = Dur(150 * time.Second) }, "push.serverErrorFor", "whole minutes"},
		{"too long", func(c *Config) { c.Firestore.TransientFor = Dur(48 * time.Hour) }, "firestore.transientFor", "lower it"},
		{"dlq critical before warning", func(c *Config) { c.DLQ.CriticalFor = Dur(4 * time.Minute) }, "dlq.warningFor", "warning must fire before"},
		{"zero dead-lettered", func(c *Config) { c.DLQ.DeadLetteredCritical = 0 }, "dlq.deadLetteredCritical", "whole number"},
		{"zero traffic guard", func(c *Config) { c.Push.MinRequests = 0 }, "push.minRequests", "whole number"},
		{"firestore rate zero", func(c *Config) { c.Firestore.TransientWarningPerMinute = 0 }, "firestore.transientWarningPerMinute", "five errors"},
		{"age order", func(c *Config) { c.Backlog.OldestAgeWarning = Dur(20 * time.Minute) }, "backlog.oldestAgeWarning", "warning must fire before"},
		{"lease zero", func(c *Config) { c.Leases.StaleLeases = 0 }, "leases.staleLeases", "whole number"},
		{"slo goal percent", func(c *Config) { c.SLO.Goal = 99.5 }, "slo.goal", "0.995"},
		{"slo period", func(c *Config) { c.SLO.RollingDays = 31 }, "slo.rollingDays", "1 to 30"},
		{"no burn rates", func(c *Config) { c.SLO.BurnRates = nil }, "slo.burnRates", "defaults"},
		{"short not shorter", func(c *Config) { c.SLO.BurnRates[0].Short = Dur(time.Hour) }, "slo.burnRates[0].short", "1/12"},
		{"bad severity", func(c *Config) { c.SLO.BurnRates[2].Severity = "PAGE" }, "slo.burnRates[2].severity", "pick one"},
		{"impossible factor", func(c *Config) { c.SLO.BurnRates[1].Factor = 500 }, "slo.burnRates[1].factor", "lower the factor"},
		{"autoclose short", func(c *Config) { c.AutoClose = Dur(10 * time.Minute) }, "autoClose", "30m"},
		{"rate limit short", func(c *Config) { c.LogMatchRateLimit = Dur(time.Minute) }, "logMatchRateLimit", "at least 5m"},
		{"confirm short", func(c *Config) { c.ConfirmFor = Dur(30 * time.Second) }, "confirmFor", "at least 2m"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			tc.mutate(&c)
			err := c.Validate()
			if err == nil {
				t.Fatal("Validate accepted the bad value")
			}
			var found *FieldError
			for _, e := range unjoin(err) {
				var fe *FieldError
				if errors.As(e, &fe) && fe.Path == "alerts."+tc.field && (found == nil || strings.Contains(fe.Fix, tc.fix)) {
					found = fe
				}
			}
			if found == nil {
				t.Fatalf("no error for field %s in: %v", tc.field, err)
			}
			msg := found.Error()
			for _, part := range []string{"alerts." + tc.field, ": allowed ", tc.fix} {
				if !strings.Contains(msg, part) {
					t.Errorf("error %q lacks %q", msg, part)
				}
			}
			if found.Allowed == "" || found.Value == "" {
				t.Errorf("error lacks range or value: %+v", found)
			}
		})
	}
}

func TestValidateReportsEveryError(t *testing.T) {
	c := Defaults()
	c.Push.ServerErrorWarning = 2
	c.Leases.Window = Dur(time.Second)
	c.SLO.Goal = 0
	errs := unjoin(c.Validate())
	fields := map[string]bool{}
	for _, e := range errs {
		var fe *FieldError
		if errors.As(e, &fe) {
			fields[strings.TrimPrefix(fe.Path, "alerts.")] = true
		}
	}
	for _, f := range []string{"push.serverErrorWarning", "leases.window", "slo.goal"} {
		if !fields[f] {
			t.Errorf("missing error for %s; got %v", f, fields)
		}
	}
}

// unjoin flattens an errors.Join tree.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoin(e)...)
		}
		return out
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// TestConfigOverridesFromJSON is how stack config arrives: a partial JSON
// object decoded over Defaults() changes only the keys it names.
func TestConfigOverridesFromJSON(t *testing.T) {
	c := Defaults()
	in := `{"push":{"serverErrorWarning":0.02,"minRequests":500},"dlq":{"warningFor":"10m"},"slo":{"goal":0.999},"autoClose":"1h"}`
	if err := json.Unmarshal([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	if c.Push.ServerErrorWarning != 0.02 || c.Push.MinRequests != 500 || c.DLQ.WarningFor.D() != 10*time.Minute ||
		c.SLO.Goal != 0.999 || c.AutoClose.D() != time.Hour {
		t.Errorf("overrides not applied: %+v", c)
	}
	d := Defaults()
	if c.Push.ServerErrorCritical != d.Push.ServerErrorCritical || c.DLQ.CriticalFor != d.DLQ.CriticalFor || len(c.SLO.BurnRates) != 3 {
		t.Errorf("keys not named in the override changed: %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("overridden config invalid: %v", err)
	}
}

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		out  string
	}{
		{"90s", 90 * time.Second, "90s"},
		{"5m", 5 * time.Minute, "5m"},
		{"90m", 90 * time.Minute, "90m"},
		{"1h", time.Hour, "1h"},
		{"72h", 72 * time.Hour, "3d"},
		{"3d", 72 * time.Hour, "3d"},
		{" 6h ", 6 * time.Hour, "6h"},
	} {
		if d := Duration(tc.in); d.D() != tc.want || d.String() != tc.out {
			t.Errorf("%q = %v (%s), want %v (%s)", tc.in, d.D(), d, tc.want, tc.out)
		}
	}
	// A value that does not parse is reported by Validate, as written.
	for _, bad := range []string{"5", "5x", "-3d", "1.5d", "d", "-5m"} {
		c := Defaults()
		c.DLQ.WarningFor = Duration(bad)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "alerts.dlq.warningFor = "+strconv.Quote(bad)+":") {
			t.Errorf("%q: err = %v, want it reported on dlq.warningFor as written", bad, err)
		}
	}
	var c Config
	if err := json.Unmarshal([]byte(`{"autoClose": 1800}`), &c); err == nil {
		t.Error("a bare number was accepted as a duration")
	}
}

// TestWithDefaultsFillsOnlyUnsetValues: a program names the thresholds it
// changes; every other one, nested and in lists, takes its default.
func TestWithDefaultsFillsOnlyUnsetValues(t *testing.T) {
	c := Config{Push: &PushThresholds{MinRequests: 500}, DLQ: &DLQThresholds{WarningFor: "10m"}}
	got := c.WithDefaults()
	want := Defaults()
	want.Push.MinRequests = 500
	want.DLQ.WarningFor = "10m"
	if !reflect.DeepEqual(got, want) {
		t.Errorf("WithDefaults =\n%+v\nwant\n%+v", got, want)
	}
	if err := (Config{}).WithDefaults().Validate(); err != nil {
		t.Errorf("an empty config with defaults is invalid: %v", err)
	}
	if c.SLO != nil || c.Push.ClientErrorFor != "" {
		t.Error("WithDefaults changed its receiver or a section it was given")
	}
}

func TestChannelsValidate(t *testing.T) {
	ok := Channels{Critical: []string{"projects/p/notificationChannels/1"}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := Channels{Critical: []string{"projects/p/notificationChannels/1"}, Warning: []string{"slack-oncall"}}
	err := bad.Validate()
	if err == nil || !strings.Contains(err.Error(), "channels.warning[0]") || !strings.Contains(err.Error(), "gcloud beta monitoring channels list") {
		t.Fatalf("err = %v", err)
	}
}
