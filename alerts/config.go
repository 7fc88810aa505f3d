package alerts

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"time"
)

// Config holds every alert threshold of one environment. Defaults returns
// seed 001's starting values (seed 003 for leases); a stack's config
// overrides any subset of them, and Validate rejects values that would make
// an alert useless, noisy or unrenderable.
//
// Field names are the keys of the `alerts` block in stack config, e.g.
// `alerts: {push: {serverErrorWarning: 0.02}}`.
type Config struct {
	DLQ       DLQThresholds       `json:"dlq" yaml:"dlq"`
	Push      PushThresholds      `json:"push" yaml:"push"`
	Backlog   BacklogThresholds   `json:"backlog" yaml:"backlog"`
	Firestore FirestoreThresholds `json:"firestore" yaml:"firestore"`
	Leases    LeaseThresholds     `json:"leases" yaml:"leases"`
	SLO       SLOConfig           `json:"slo" yaml:"slo"`

	// ConfirmFor is how long a windowed count (dead-lettered messages in 10
	// minutes, lease failures per hour) must stay over its threshold before
	// the policy opens an incident. Pub/Sub and log-based metrics become
	// visible up to about 4 minutes late; holding for at least 2 minutes
	// keeps one late batch of points from opening and closing an incident.
	ConfirmFor Duration `json:"confirmFor" yaml:"confirmFor"`
	// AutoClose closes an open incident once its condition has had no data
	// for this long (Cloud Monitoring accepts 30 minutes to 7 days).
	AutoClose Duration `json:"autoClose" yaml:"autoClose"`
	// LogMatchRateLimit is the minimum time between two notifications of a
	// log-match policy; Cloud Monitoring requires it and accepts ≥ 5 minutes.
	LogMatchRateLimit Duration `json:"logMatchRateLimit" yaml:"logMatchRateLimit"`
}

// DLQThresholds configure the dead-letter policies.
type DLQThresholds struct {
	// WarningFor: the DLQ subscription holds messages (> 0) for this long.
	WarningFor Duration `json:"warningFor" yaml:"warningFor"`
	// CriticalFor: the DLQ subscription holds messages for this long.
	CriticalFor Duration `json:"criticalFor" yaml:"criticalFor"`
	// DeadLetteredCritical: more than this many messages dead-lettered from
	// the source subscription within DeadLetteredWindow is critical.
	DeadLetteredCritical int      `json:"deadLetteredCritical" yaml:"deadLetteredCritical"`
	DeadLetteredWindow   Duration `json:"deadLetteredWindow" yaml:"deadLetteredWindow"`
}

// PushThresholds configure the push error-ratio policies. Ratios are
// fractions: 0.01 is 1 %.
type PushThresholds struct {
	ServerErrorWarning  float64  `json:"serverErrorWarning" yaml:"serverErrorWarning"`
	ServerErrorCritical float64  `json:"serverErrorCritical" yaml:"serverErrorCritical"`
	ServerErrorFor      Duration `json:"serverErrorFor" yaml:"serverErrorFor"`
	ClientErrorWarning  float64  `json:"clientErrorWarning" yaml:"clientErrorWarning"`
	ClientErrorCritical float64  `json:"clientErrorCritical" yaml:"clientErrorCritical"`
	ClientErrorFor      Duration `json:"clientErrorFor" yaml:"clientErrorFor"`
	// RatioWindow is the range over which request counts are summed before
	// dividing.
	RatioWindow Duration `json:"ratioWindow" yaml:"ratioWindow"`
	// MinRequests is the minimum-traffic guard: a ratio only counts when the
	// subscription made at least this many push requests in RatioWindow, so
	// one failure on an idle pipeline at 3 a.m. does not page anyone.
	MinRequests int `json:"minRequests" yaml:"minRequests"`
}

// BacklogThresholds configure the backlog policies of every subscription.
type BacklogThresholds struct {
	OldestAgeWarning  Duration `json:"oldestAgeWarning" yaml:"oldestAgeWarning"`
	OldestAgeCritical Duration `json:"oldestAgeCritical" yaml:"oldestAgeCritical"`
	// GrowthWarningFor / GrowthCriticalFor: the undelivered-message count
	// keeps rising (positive slope over GrowthWindow) for this long.
	GrowthWarningFor  Duration `json:"growthWarningFor" yaml:"growthWarningFor"`
	GrowthCriticalFor Duration `json:"growthCriticalFor" yaml:"growthCriticalFor"`
	GrowthWindow      Duration `json:"growthWindow" yaml:"growthWindow"`
}

// FirestoreThresholds configure the store-error policies.
type FirestoreThresholds struct {
	// Transient errors (RESOURCE_EXHAUSTED, UNAVAILABLE, DEADLINE_EXCEEDED)
	// per minute, averaged over RateWindow, sustained for TransientFor.
	TransientWarningPerMinute  float64  `json:"transientWarningPerMinute" yaml:"transientWarningPerMinute"`
	TransientCriticalPerMinute float64  `json:"transientCriticalPerMinute" yaml:"transientCriticalPerMinute"`
	TransientFor               Duration `json:"transientFor" yaml:"transientFor"`
	RateWindow                 Duration `json:"rateWindow" yaml:"rateWindow"`
}

// LeaseThresholds configure the lease policies (seed 003, "Monitoring").
// Each counts events in Window and fires when the count exceeds the limit.
type LeaseThresholds struct {
	AcquireFailures   int      `json:"acquireFailures" yaml:"acquireFailures"`
	HeartbeatFailures int      `json:"heartbeatFailures" yaml:"heartbeatFailures"`
	StaleLeases       int      `json:"staleLeases" yaml:"staleLeases"`
	Window            Duration `json:"window" yaml:"window"`
}

// SLOConfig configures the ack-ratio SLO of push subscriptions and its
// multi-window burn-rate policies.
type SLOConfig struct {
	// Goal is the fraction of push requests that must be acked.
	Goal float64 `json:"goal" yaml:"goal"`
	// RollingDays is the SLO compliance period (Cloud Monitoring: 1–30).
	RollingDays int `json:"rollingDays" yaml:"rollingDays"`
	// BurnRates are the alert windows: a policy fires when the error budget
	// burns faster than Factor over both Long and Short.
	BurnRates []BurnRate `json:"burnRates" yaml:"burnRates"`
}

// BurnRate is one multi-window burn-rate alert.
type BurnRate struct {
	Factor   float64  `json:"factor" yaml:"factor"`
	Long     Duration `json:"long" yaml:"long"`
	Short    Duration `json:"short" yaml:"short"`
	Severity Severity `json:"severity" yaml:"severity"`
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

// Defaults returns seed 001's starting thresholds (seed 003 for leases) and
// the SLO burn-rate windows of Google's SRE workbook.
func Defaults() Config {
	return Config{
		DLQ: DLQThresholds{
			WarningFor:           Duration(5 * time.Minute),
			CriticalFor:          Duration(15 * time.Minute),
			DeadLetteredCritical: 10,
			DeadLetteredWindow:   Duration(10 * time.Minute),
		},
		Push: PushThresholds{
			ServerErrorWarning:  0.01,
			ServerErrorCritical: 0.05,
			ServerErrorFor:      Duration(5 * time.Minute),
			ClientErrorWarning:  0.001,
			ClientErrorCritical: 0.01,
			ClientErrorFor:      Duration(10 * time.Minute),
			RatioWindow:         Duration(5 * time.Minute),
			// 100 requests: below that a single failure is already ≥ 1 %.
			MinRequests: 100,
		},
		Backlog: BacklogThresholds{
			OldestAgeWarning:  Duration(5 * time.Minute),
			OldestAgeCritical: Duration(15 * time.Minute),
			GrowthWarningFor:  Duration(15 * time.Minute),
			GrowthCriticalFor: Duration(30 * time.Minute),
			GrowthWindow:      Duration(10 * time.Minute),
		},
		Firestore: FirestoreThresholds{
			TransientWarningPerMinute:  5,
			TransientCriticalPerMinute: 20,
			TransientFor:               Duration(10 * time.Minute),
			RateWindow:                 Duration(5 * time.Minute),
		},
		Leases: LeaseThresholds{
			AcquireFailures:   10,
			HeartbeatFailures: 5,
			StaleLeases:       3,
			Window:            Duration(time.Hour),
		},
		SLO: SLOConfig{
			Goal:        0.995,
			RollingDays: 30,
			BurnRates: []BurnRate{
				{Factor: 14.4, Long: Duration(time.Hour), Short: Duration(5 * time.Minute), Severity: Critical},
				{Factor: 6, Long: Duration(6 * time.Hour), Short: Duration(30 * time.Minute), Severity: Critical},
				{Factor: 1, Long: Duration(3 * 24 * time.Hour), Short: Duration(6 * time.Hour), Severity: Warning},
			},
		},
		ConfirmFor:        Duration(3 * time.Minute),
		AutoClose:         Duration(30 * time.Minute),
		LogMatchRateLimit: Duration(5 * time.Minute),
	}
}

// FieldError is one invalid configuration value: which field, what value,
// the accepted range and how to fix it.
type FieldError struct {
	Field string // path below the alerts block, e.g. "push.serverErrorWarning"
	Value any
	Range string
	Fix   string
}

// Error renders the problem on one line: field, value, allowed range, fix.
func (e *FieldError) Error() string {
	return fmt.Sprintf("alerts.%s = %v: must be %s; %s", e.Field, e.Value, e.Range, e.Fix)
}

// validator collects every FieldError of one Validate call.
type validator struct{ errs []error }

func (v *validator) add(field string, value any, rng, fix string) {
	v.errs = append(v.errs, &FieldError{Field: field, Value: value, Range: rng, Fix: fix})
}

// window checks a window or hold time: a whole number of minutes between
// MinWindow and max.
func (v *validator) window(field string, d Duration, max time.Duration) {
	rng := fmt.Sprintf("a whole number of minutes from %s to %s", promDuration(MinWindow), promDuration(max))
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

// Validate reports every invalid value in c, joined; nil means c renders.
func (c Config) Validate() error {
	v := &validator{}
	v.window("dlq.warningFor", c.DLQ.WarningFor, MaxDuration)
	v.window("dlq.criticalFor", c.DLQ.CriticalFor, MaxDuration)
	v.ordered("dlq.warningFor", float64(c.DLQ.WarningFor), float64(c.DLQ.CriticalFor), "dlq.criticalFor")
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
	v.ordered("backlog.oldestAgeWarning", float64(c.Backlog.OldestAgeWarning), float64(c.Backlog.OldestAgeCritical), "backlog.oldestAgeCritical")
	v.window("backlog.growthWarningFor", c.Backlog.GrowthWarningFor, MaxDuration)
	v.window("backlog.growthCriticalFor", c.Backlog.GrowthCriticalFor, MaxDuration)
	v.ordered("backlog.growthWarningFor", float64(c.Backlog.GrowthWarningFor), float64(c.Backlog.GrowthCriticalFor), "backlog.growthCriticalFor")
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
		if b.Short >= b.Long {
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

var channelName = regexp.MustCompile(`^projects/[^/]+/notificationChannels/[^/]+$`)

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
			if !channelName.MatchString(n) {
				v.add(fmt.Sprintf("%s[%d]", set.field, i), fmt.Sprintf("%q", n), "projects/PROJECT/notificationChannels/ID",
					"copy the channel's full resource name from `gcloud beta monitoring channels list --format='value(name)'`")
			}
		}
	}
	return errors.Join(v.errs...)
}
