package alerts

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/eventpipe/eventpipe/internal/fielderr"
	"github.com/eventpipe/eventpipe/internal/gcpname"
)

// Config holds every alert threshold of one environment. Unset values keep
// their defaults (Defaults, filled in by WithDefaults); Validate rejects
// values that would make an alert useless, noisy or unrenderable.
//
// Field names are the keys of the thresholds block in stack config, e.g.
// `thresholds: {push: {serverErrorWarning: 0.02}}`.
type Config struct {
	// DLQ configures the dead-letter alerts.
	DLQ *DLQThresholds `json:"dlq" yaml:"dlq" pulumi:"dlq,optional"`
	// Push configures the push error-ratio alerts.
	Push *PushThresholds `json:"push" yaml:"push" pulumi:"push,optional"`
	// Backlog configures the backlog age and growth alerts of every subscription.
	Backlog *BacklogThresholds `json:"backlog" yaml:"backlog" pulumi:"backlog,optional"`
	// Firestore configures the store-error alerts.
	Firestore *FirestoreThresholds `json:"firestore" yaml:"firestore" pulumi:"firestore,optional"`
	// Leases configures the lease alerts.
	Leases *LeaseThresholds `json:"leases" yaml:"leases" pulumi:"leases,optional"`
	// SLO configures the ack-ratio SLO of push subscriptions and its burn-rate alerts.
	SLO *SLOConfig `json:"slo" yaml:"slo" pulumi:"slo,optional"`

	// ConfirmFor is how long a windowed count (dead-lettered messages in a
	// window, lease failures per window) must stay over its threshold before
	// the policy opens an incident (default 3m). Pub/Sub and log-based metrics
	// become visible up to about 4 minutes late; holding for at least 2
	// minutes keeps one late batch of points from opening and closing an incident.
	ConfirmFor Duration `json:"confirmFor" yaml:"confirmFor" pulumi:"confirmFor,optional"`
	// AutoClose closes an open incident once its condition has had no data
	// for this long (30m to 7d, default 30m).
	AutoClose Duration `json:"autoClose" yaml:"autoClose" pulumi:"autoClose,optional"`
	// LogMatchRateLimit is the minimum time between two notifications of a
	// log-match policy (at least 5m, default 5m).
	LogMatchRateLimit Duration `json:"logMatchRateLimit" yaml:"logMatchRateLimit" pulumi:"logMatchRateLimit,optional"`
}

// DLQThresholds configure the dead-letter policies.
type DLQThresholds struct {
	// WarningFor is how long a DLQ subscription may hold messages before the warning (default 5m).
	WarningFor Duration `json:"warningFor" yaml:"warningFor" pulumi:"warningFor,optional"`
	// CriticalFor is how long a DLQ subscription may hold messages before the critical alert (default 15m).
	CriticalFor Duration `json:"criticalFor" yaml:"criticalFor" pulumi:"criticalFor,optional"`
	// DeadLetteredCritical is how many messages dead-lettered from the source
	// subscription within DeadLetteredWindow are critical (more than this; default 10).
	DeadLetteredCritical int `json:"deadLetteredCritical" yaml:"deadLetteredCritical" pulumi:"deadLetteredCritical,optional"`
	// DeadLetteredWindow is the window DeadLetteredCritical counts in (default 10m).
	DeadLetteredWindow Duration `json:"deadLetteredWindow" yaml:"deadLetteredWindow" pulumi:"deadLetteredWindow,optional"`
}

// PushThresholds configure the push error-ratio policies. Ratios are
// fractions: 0.01 is 1 %.
type PushThresholds struct {
	// ServerErrorWarning is the 5xx share of push requests that warns (default 0.01).
	ServerErrorWarning float64 `json:"serverErrorWarning" yaml:"serverErrorWarning" pulumi:"serverErrorWarning,optional"`
	// ServerErrorCritical is the 5xx share of push requests that is critical (default 0.05).
	ServerErrorCritical float64 `json:"serverErrorCritical" yaml:"serverErrorCritical" pulumi:"serverErrorCritical,optional"`
	// ServerErrorFor is how long the 5xx share must stay above its threshold (default 5m).
	ServerErrorFor Duration `json:"serverErrorFor" yaml:"serverErrorFor" pulumi:"serverErrorFor,optional"`
	// ClientErrorWarning is the 4xx share of push requests that warns (default 0.001).
	ClientErrorWarning float64 `json:"clientErrorWarning" yaml:"clientErrorWarning" pulumi:"clientErrorWarning,optional"`
	// ClientErrorCritical is the 4xx share of push requests that is critical (default 0.01).
	ClientErrorCritical float64 `json:"clientErrorCritical" yaml:"clientErrorCritical" pulumi:"clientErrorCritical,optional"`
	// ClientErrorFor is how long the 4xx share must stay above its threshold (default 10m).
	ClientErrorFor Duration `json:"clientErrorFor" yaml:"clientErrorFor" pulumi:"clientErrorFor,optional"`
	// RatioWindow is the range over which request counts are summed before
	// dividing (default 5m).
	RatioWindow Duration `json:"ratioWindow" yaml:"ratioWindow" pulumi:"ratioWindow,optional"`
	// MinRequests is the minimum-traffic guard: a ratio only counts when the
	// subscription made at least this many push requests in RatioWindow, so
	// one failure on an idle pipeline at 3 a.m. does not page anyone (default 100).
	MinRequests int `json:"minRequests" yaml:"minRequests" pulumi:"minRequests,optional"`
}

// BacklogThresholds configure the backlog policies of every subscription.
type BacklogThresholds struct {
	// OldestAgeWarning is the age of the oldest unacked message that warns (default 5m).
	OldestAgeWarning Duration `json:"oldestAgeWarning" yaml:"oldestAgeWarning" pulumi:"oldestAgeWarning,optional"`
	// OldestAgeCritical is the age of the oldest unacked message that is critical (default 15m).
	OldestAgeCritical Duration `json:"oldestAgeCritical" yaml:"oldestAgeCritical" pulumi:"oldestAgeCritical,optional"`
	// GrowthWarningFor is how long the undelivered-message count may keep
	// rising (positive slope over GrowthWindow) before the warning (default 15m).
	GrowthWarningFor Duration `json:"growthWarningFor" yaml:"growthWarningFor" pulumi:"growthWarningFor,optional"`
	// GrowthCriticalFor is how long it may keep rising before the critical alert (default 30m).
	GrowthCriticalFor Duration `json:"growthCriticalFor" yaml:"growthCriticalFor" pulumi:"growthCriticalFor,optional"`
	// GrowthWindow is the range the slope is computed over (default 10m).
	GrowthWindow Duration `json:"growthWindow" yaml:"growthWindow" pulumi:"growthWindow,optional"`
}

// FirestoreThresholds configure the store-error policies: transient errors
// (RESOURCE_EXHAUSTED, UNAVAILABLE, DEADLINE_EXCEEDED) per minute, averaged
// over RateWindow, sustained for TransientFor.
type FirestoreThresholds struct {
	// TransientWarningPerMinute is the transient error rate that warns (default 5 a minute).
	TransientWarningPerMinute float64 `json:"transientWarningPerMinute" yaml:"transientWarningPerMinute" pulumi:"transientWarningPerMinute,optional"`
	// TransientCriticalPerMinute is the transient error rate that is critical (default 20 a minute).
	TransientCriticalPerMinute float64 `json:"transientCriticalPerMinute" yaml:"transientCriticalPerMinute" pulumi:"transientCriticalPerMinute,optional"`
	// TransientFor is how long the rate must stay above its threshold (default 10m).
	TransientFor Duration `json:"transientFor" yaml:"transientFor" pulumi:"transientFor,optional"`
	// RateWindow is the range the rate is averaged over (default 5m).
	RateWindow Duration `json:"rateWindow" yaml:"rateWindow" pulumi:"rateWindow,optional"`
}

// LeaseThresholds configure the lease policies.
// Each counts events in Window and fires when the count exceeds the limit.
type LeaseThresholds struct {
	// AcquireFailures is how many lease acquisition failures per Window are tolerated (default 10).
	AcquireFailures int `json:"acquireFailures" yaml:"acquireFailures" pulumi:"acquireFailures,optional"`
	// HeartbeatFailures is how many lease heartbeat failures per Window are tolerated (default 5).
	HeartbeatFailures int `json:"heartbeatFailures" yaml:"heartbeatFailures" pulumi:"heartbeatFailures,optional"`
	// StaleLeases is how many stale leases found by the sweeper per Window are tolerated (default 3).
	StaleLeases int `json:"staleLeases" yaml:"staleLeases" pulumi:"staleLeases,optional"`
	// Window is the range the lease events are counted in (default 1h).
	Window Duration `json:"window" yaml:"window" pulumi:"window,optional"`
}

// SLOConfig configures the ack-ratio SLO of push subscriptions and its
// multi-window burn-rate policies.
type SLOConfig struct {
	// Goal is the fraction of push requests that must be acked (0.9 up to 1, default 0.995).
	Goal float64 `json:"goal" yaml:"goal" pulumi:"goal,optional"`
	// RollingDays is the SLO compliance period in days (1–30, default 30).
	RollingDays int `json:"rollingDays" yaml:"rollingDays" pulumi:"rollingDays,optional"`
	// BurnRates are the alert windows: a policy fires when the error budget
	// burns faster than Factor over both Long and Short (default 14.4x 1h/5m
	// and 6x 6h/30m critical, 1x 3d/6h warning).
	BurnRates []BurnRate `json:"burnRates" yaml:"burnRates" pulumi:"burnRates,optional"`
}

// BurnRate is one multi-window burn-rate alert.
type BurnRate struct {
	// Factor is how many times faster than sustainable the budget burns (1 uses it up in exactly one SLO period).
	Factor float64 `json:"factor" yaml:"factor" pulumi:"factor"`
	// Long is the window that measures the burn.
	Long Duration `json:"long" yaml:"long" pulumi:"long"`
	// Short is the window that confirms the burn is still happening (about 1/12 of Long).
	Short Duration `json:"short" yaml:"short" pulumi:"short"`
	// Severity is CRITICAL (page) or WARNING (ticket).
	Severity Severity `json:"severity" yaml:"severity" pulumi:"severity"`
}

// Severity is a Cloud Monitoring alert policy severity.
type Severity string

// The severities eventpipe uses: a CRITICAL policy pages, a WARNING policy
// opens a ticket.
const (
	Critical Severity = "CRITICAL"
	Warning  Severity = "WARNING"
)

// Limits every configured duration must respect.
const (
	// MinWindow is the shortest window or hold time accepted: Pub/Sub and
	// log-based metric points become visible up to about 4 minutes after
	// they happen, so anything shorter than 2 minutes sees partial data.
	MinWindow = 2 * time.Minute
	// MaxDuration is the longest condition hold time Cloud Monitoring allows.
	MaxDuration = 24 * time.Hour
	// MaxWindow bounds PromQL ranges and alignment periods.
	MaxWindow = 7 * 24 * time.Hour
)

// Defaults returns the starting thresholds and
// the SLO burn-rate windows of Google's SRE workbook.
func Defaults() Config {
	return Config{
		DLQ: &DLQThresholds{
			WarningFor:           Dur(5 * time.Minute),
			CriticalFor:          Dur(15 * time.Minute),
			DeadLetteredCritical: 10,
			DeadLetteredWindow:   Dur(10 * time.Minute),
		},
		Push: &PushThresholds{
			ServerErrorWarning:  0.01,
			ServerErrorCritical: 0.05,
			ServerErrorFor:      Dur(5 * time.Minute),
			ClientErrorWarning:  0.001,
			ClientErrorCritical: 0.01,
			ClientErrorFor:      Dur(10 * time.Minute),
			RatioWindow:         Dur(5 * time.Minute),
			// 100 requests: below that a single failure is already ≥ 1 %.
			MinRequests: 100,
		},
		Backlog: &BacklogThresholds{
			OldestAgeWarning:  Dur(5 * time.Minute),
			OldestAgeCritical: Dur(15 * time.Minute),
			GrowthWarningFor:  Dur(15 * time.Minute),
			GrowthCriticalFor: Dur(30 * time.Minute),
			GrowthWindow:      Dur(10 * time.Minute),
		},
		Firestore: &FirestoreThresholds{
			TransientWarningPerMinute:  5,
			TransientCriticalPerMinute: 20,
			TransientFor:               Dur(10 * time.Minute),
			RateWindow:                 Dur(5 * time.Minute),
		},
		Leases: &LeaseThresholds{
			AcquireFailures:   10,
			HeartbeatFailures: 5,
			StaleLeases:       3,
			Window:            Dur(time.Hour),
		},
		SLO: &SLOConfig{
			Goal:        0.995,
			RollingDays: 30,
			BurnRates: []BurnRate{
				{Factor: 14.4, Long: Dur(time.Hour), Short: Dur(5 * time.Minute), Severity: Critical},
				{Factor: 6, Long: Dur(6 * time.Hour), Short: Dur(30 * time.Minute), Severity: Critical},
				{Factor: 1, Long: Dur(3 * 24 * time.Hour), Short: Dur(6 * time.Hour), Severity: Warning},
			},
		},
		ConfirmFor:        Dur(3 * time.Minute),
		AutoClose:         Dur(30 * time.Minute),
		LogMatchRateLimit: Dur(5 * time.Minute),
	}
}

// WithDefaults returns c with every unset (zero) value taken from
// Defaults(): a stack or program names only the thresholds it changes. No
// threshold is valid at zero (ratios, counts and windows are all positive),
// so zero always means "not set".
func (c Config) WithDefaults() Config {
	fillZero(reflect.ValueOf(&c).Elem(), reflect.ValueOf(Defaults()))
	return c
}

// fillZero sets every zero leaf of dst (a settable struct) to def's value;
// a section (pointer to a struct) set by the caller is copied, not changed.
func fillZero(dst, def reflect.Value) {
	for i := range dst.NumField() {
		f := dst.Field(i)
		switch {
		case f.Kind() == reflect.Pointer && !f.IsNil():
			section := reflect.New(f.Type().Elem())
			section.Elem().Set(f.Elem())
			fillZero(section.Elem(), def.Field(i).Elem())
			f.Set(section)
		case f.IsZero() || (f.Kind() == reflect.Slice && f.Len() == 0):
			f.Set(def.Field(i))
		}
	}
}

// FieldError is one invalid configuration value: its Path below the stack's
// alerts block ("alerts.push.serverErrorWarning"), the Value as written, the
// Allowed range and the Fix. It is fielderr.Error, eventpipe's one field error.
type FieldError = fielderr.Error

// validator collects every FieldError of one Validate call.
type validator struct{ errs []error }

func (v *validator) add(field string, value any, rng, fix string) {
	if d, ok := value.(Duration); ok {
		value = string(d) // as written: an unparsable value has no canonical form
	}
	v.errs = append(v.errs, &FieldError{Path: "alerts." + field, Value: fmt.Sprint(value), Allowed: rng, Fix: fix})
}

// window checks a window or hold time: a whole number of minutes between
// MinWindow and max.
func (v *validator) window(field string, d Duration, max time.Duration) {
	rng := fmt.Sprintf("a whole number of minutes from %s to %s", promDuration(MinWindow), promDuration(max))
	if _, err := d.Parse(); err != nil {
		v.add(field, fmt.Sprintf("%q", string(d)), rng, err.Error())
		return
	}
	switch {
	case d.D() < MinWindow:
		v.add(field, d, rng, "metrics arrive up to ~4 minutes late, so shorter windows see partial data: raise it to at least "+promDuration(MinWindow))
	case d.D() > max:
		v.add(field, d, rng, "lower it to "+promDuration(max)+" or less")
	case d.D()%time.Minute != 0:
		v.add(field, d, rng, "Cloud Monitoring durations are whole minutes: round it, e.g. to "+promDuration(d.D().Round(time.Minute)))
	}
}

// ratio checks a fraction in (0, 1).
func (v *validator) ratio(field string, r float64) {
	if !(r > 0 && r < 1) || math.IsNaN(r) {
		v.add(field, r, "a fraction between 0 and 1 (exclusive)", "write percentages as fractions: 1 % is 0.01")
	}
}

// positive checks a count limit.
func (v *validator) positive(field string, n int, max int) {
	if n < 1 || n > max {
		v.add(field, n, fmt.Sprintf("an integer from 1 to %d", max), "set a whole number of events")
	}
}

// ordered checks that a warning threshold is below its critical one, so the
// warning fires first and the two never describe the same condition.
func (v *validator) ordered(warnField string, warn, crit float64, critField string) {
	if warn >= crit {
		v.add(warnField, warn, "below "+critField+fmt.Sprintf(" (%v)", crit), "the warning must fire before the critical: lower the warning or raise the critical")
	}
}

// orderedDur is ordered for two durations, shown as written.
func (v *validator) orderedDur(warnField string, warn, crit Duration, critField string) {
	if warn.D() >= crit.D() {
		v.add(warnField, warn, "shorter than "+critField+" ("+crit.String()+")", "the warning must fire before the critical: lower the warning or raise the critical")
	}
}

// Validate reports every invalid value in c, joined; nil means c renders.
// A section left nil is checked as if all its values were zero: every one
// is reported (WithDefaults fills unset values instead).
func (c Config) Validate() error {
	v := &validator{}
	// A nil section is checked as a section of zero values: a new one, in this copy of c.
	fields := reflect.ValueOf(&c).Elem()
	for i := range fields.NumField() {
		if f := fields.Field(i); f.Kind() == reflect.Pointer && f.IsNil() {
			f.Set(reflect.New(f.Type().Elem()))
		}
	}
	v.window("dlq.warningFor", c.DLQ.WarningFor, MaxDuration)
	v.window("dlq.criticalFor", c.DLQ.CriticalFor, MaxDuration)
	v.orderedDur("dlq.warningFor", c.DLQ.WarningFor, c.DLQ.CriticalFor, "dlq.criticalFor")
	v.positive("dlq.deadLetteredCritical", c.DLQ.DeadLetteredCritical, 1_000_000)
	v.window("dlq.deadLetteredWindow", c.DLQ.DeadLetteredWindow, MaxDuration)

	v.ratio("push.serverErrorWarning", c.Push.ServerErrorWarning)
	v.ratio("push.serverErrorCritical", c.Push.ServerErrorCritical)
	v.ordered("push.serverErrorWarning", c.Push.ServerErrorWarning, c.Push.ServerErrorCritical, "push.serverErrorCritical")
	v.window("push.serverErrorFor", c.Push.ServerErrorFor, MaxDuration)
	v.ratio("push.clientErrorWarning", c.Push.ClientErrorWarning)
	v.ratio("push.clientErrorCritical", c.Push.ClientErrorCritical)
	v.ordered("push.clientErrorWarning", c.Push.ClientErrorWarning, c.Push.ClientErrorCritical, "push.clientErrorCritical")
	v.window("push.clientErrorFor", c.Push.ClientErrorFor, MaxDuration)
	v.window("push.ratioWindow", c.Push.RatioWindow, MaxDuration)
	v.positive("push.minRequests", c.Push.MinRequests, 1_000_000)

	v.window("backlog.oldestAgeWarning", c.Backlog.OldestAgeWarning, MaxWindow)
	v.window("backlog.oldestAgeCritical", c.Backlog.OldestAgeCritical, MaxWindow)
	v.orderedDur("backlog.oldestAgeWarning", c.Backlog.OldestAgeWarning, c.Backlog.OldestAgeCritical, "backlog.oldestAgeCritical")
	v.window("backlog.growthWarningFor", c.Backlog.GrowthWarningFor, MaxDuration)
	v.window("backlog.growthCriticalFor", c.Backlog.GrowthCriticalFor, MaxDuration)
	v.orderedDur("backlog.growthWarningFor", c.Backlog.GrowthWarningFor, c.Backlog.GrowthCriticalFor, "backlog.growthCriticalFor")
	v.window("backlog.growthWindow", c.Backlog.GrowthWindow, MaxDuration)

	for _, f := range []struct {
		name string
		val  float64
	}{
		{"firestore.transientWarningPerMinute", c.Firestore.TransientWarningPerMinute},
		{"firestore.transientCriticalPerMinute", c.Firestore.TransientCriticalPerMinute},
	} {
		if !(f.val > 0) || math.IsInf(f.val, 0) {
			v.add(f.name, f.val, "a positive number of errors per minute", "set e.g. 5 for five errors a minute")
		}
	}
	v.ordered("firestore.transientWarningPerMinute", c.Firestore.TransientWarningPerMinute, c.Firestore.TransientCriticalPerMinute, "firestore.transientCriticalPerMinute")
	v.window("firestore.transientFor", c.Firestore.TransientFor, MaxDuration)
	v.window("firestore.rateWindow", c.Firestore.RateWindow, MaxDuration)

	v.positive("leases.acquireFailures", c.Leases.AcquireFailures, 1_000_000)
	v.positive("leases.heartbeatFailures", c.Leases.HeartbeatFailures, 1_000_000)
	v.positive("leases.staleLeases", c.Leases.StaleLeases, 1_000_000)
	v.window("leases.window", c.Leases.Window, MaxDuration)

	if !(c.SLO.Goal >= 0.9 && c.SLO.Goal < 1) {
		v.add("slo.goal", c.SLO.Goal, "a fraction from 0.9 up to (not including) 1", "write 99.5 % as 0.995")
	}
	if c.SLO.RollingDays < 1 || c.SLO.RollingDays > 30 {
		v.add("slo.rollingDays", c.SLO.RollingDays, "an integer from 1 to 30", "Cloud Monitoring rolling SLO periods are 1 to 30 days")
	}
	if len(c.SLO.BurnRates) == 0 {
		v.add("slo.burnRates", "[]", "at least one burn-rate window", "keep the defaults (14.4x 1h/5m, 6x 6h/30m, 1x 3d/6h) or list your own")
	}
	for i, b := range c.SLO.BurnRates {
		f := fmt.Sprintf("slo.burnRates[%d]", i)
		if !(b.Factor > 0) || math.IsInf(b.Factor, 0) {
			v.add(f+".factor", b.Factor, "a positive number", "1 burns the whole budget in exactly one SLO period")
		} else if b.Factor*(1-c.SLO.Goal) >= 1 {
			v.add(f+".factor", b.Factor, fmt.Sprintf("below %.4g for goal %v", 1/(1-c.SLO.Goal), c.SLO.Goal), "an error ratio cannot exceed 1: lower the factor")
		}
		v.window(f+".long", b.Long, MaxWindow)
		v.window(f+".short", b.Short, MaxWindow)
		if b.Short.D() >= b.Long.D() {
			v.add(f+".short", b.Short, "shorter than "+f+".long ("+b.Long.String()+")", "the short window confirms the burn is still happening: use about 1/12 of the long window")
		}
		if b.Severity != Critical && b.Severity != Warning {
			v.add(f+".severity", b.Severity, `"CRITICAL" (page) or "WARNING" (ticket)`, "pick one of the two")
		}
	}

	v.window("confirmFor", c.ConfirmFor, MaxDuration)
	if c.AutoClose.D() < 30*time.Minute || c.AutoClose.D() > 7*24*time.Hour {
		v.add("autoClose", c.AutoClose, "from 30m to 7d", "Cloud Monitoring rejects other values: use e.g. 30m")
	}
	if c.LogMatchRateLimit.D() < 5*time.Minute || c.LogMatchRateLimit.D() > MaxDuration {
		v.add("logMatchRateLimit", c.LogMatchRateLimit, "from 5m to 24h", "log-match policies need a notification rate limit of at least 5m")
	}
	return errors.Join(v.errs...)
}

// Channels are the notification channels per severity, as Cloud Monitoring
// resource names (projects/P/notificationChannels/ID).
type Channels struct {
	Critical []string `json:"critical" yaml:"critical"`
	Warning  []string `json:"warning" yaml:"warning"`
}

// For returns the channels of severity s.
func (c Channels) For(s Severity) []string {
	if s == Critical {
		return c.Critical
	}
	return c.Warning
}

// Validate reports channel names that are not notification channel
// resource names.
func (c Channels) Validate() error {
	v := &validator{}
	for _, set := range []struct {
		field string
		names []string
	}{{"channels.critical", c.Critical}, {"channels.warning", c.Warning}} {
		for i, n := range set.names {
			if !gcpname.Channel(n) {
				v.add(fmt.Sprintf("%s[%d]", set.field, i), fmt.Sprintf("%q", n), "projects/PROJECT/notificationChannels/ID",
					"copy the channel's full resource name from `gcloud beta monitoring channels list --format='value(name)'`")
			}
		}
	}
	return errors.Join(v.errs...)
}
