// Code generated from the doc comments by internal/testing/annotategen; DO NOT EDIT.

package alerts

import "github.com/eventpipe/eventpipe/internal/annotate"

// Annotate describes BacklogThresholds and its fields for a component provider's schema.
func (x *BacklogThresholds) Annotate(a annotate.Annotator) {
	a.SetToken("index", "AlertBacklogThresholds")
	a.Describe(x, "BacklogThresholds configure the backlog policies of every subscription.")
	a.Describe(&x.OldestAgeWarning, "The age of the oldest unacked message that warns (default 5m).")
	a.Describe(&x.OldestAgeCritical, "The age of the oldest unacked message that is critical (default 15m).")
	a.Describe(&x.GrowthWarningFor, "How long the undelivered-message count may keep rising (positive slope over GrowthWindow) before the warning (default 15m).")
	a.Describe(&x.GrowthCriticalFor, "How long it may keep rising before the critical alert (default 30m).")
	a.Describe(&x.GrowthWindow, "The range the slope is computed over (default 10m).")
}

// Annotate describes BurnRate and its fields for a component provider's schema.
func (x *BurnRate) Annotate(a annotate.Annotator) {
	a.SetToken("index", "AlertBurnRate")
	a.Describe(x, "BurnRate is one multi-window burn-rate alert.")
	a.Describe(&x.Factor, "How many times faster than sustainable the budget burns (1 uses it up in exactly one SLO period).")
	a.Describe(&x.Long, "The window that measures the burn.")
	a.Describe(&x.Short, "The window that confirms the burn is still happening (about 1/12 of Long).")
	a.Describe(&x.Severity, "CRITICAL (page) or WARNING (ticket).")
}

// Annotate describes Config and its fields for a component provider's schema.
func (x *Config) Annotate(a annotate.Annotator) {
	a.SetToken("index", "AlertThresholds")
	a.Describe(x, "Config holds every alert threshold of one environment. Unset values keep\ntheir defaults (Defaults, filled in by WithDefaults); Validate rejects\nvalues that would make an alert useless, noisy or unrenderable.\n\nField names are the keys of the thresholds block in stack config, e.g.\n`thresholds: {push: {serverErrorWarning: 0.02}}`.")
	a.Describe(&x.DLQ, "Configures the dead-letter alerts.")
	a.Describe(&x.Push, "Configures the push error-ratio alerts.")
	a.Describe(&x.Backlog, "Configures the backlog age and growth alerts of every subscription.")
	a.Describe(&x.Firestore, "Configures the store-error alerts.")
	a.Describe(&x.Leases, "Configures the lease alerts.")
	a.Describe(&x.SLO, "Configures the ack-ratio SLO of push subscriptions and its burn-rate alerts.")
	a.Describe(&x.ConfirmFor, "How long a windowed count (dead-lettered messages in a window, lease failures per window) must stay over its threshold before the policy opens an incident (default 3m). Pub/Sub and log-based metrics become visible up to about 4 minutes late; holding for at least 2 minutes keeps one late batch of points from opening and closing an incident.")
	a.Describe(&x.AutoClose, "Closes an open incident once its condition has had no data for this long (30m to 7d, default 30m).")
	a.Describe(&x.LogMatchRateLimit, "The minimum time between two notifications of a log-match policy (at least 5m, default 5m).")
}

// Annotate describes DLQThresholds and its fields for a component provider's schema.
func (x *DLQThresholds) Annotate(a annotate.Annotator) {
	a.SetToken("index", "AlertDLQThresholds")
	a.Describe(x, "DLQThresholds configure the dead-letter policies.")
	a.Describe(&x.WarningFor, "How long a DLQ subscription may hold messages before the warning (default 5m).")
	a.Describe(&x.CriticalFor, "How long a DLQ subscription may hold messages before the critical alert (default 15m).")
	a.Describe(&x.DeadLetteredCritical, "How many messages dead-lettered from the source subscription within DeadLetteredWindow are critical (more than this; default 10).")
	a.Describe(&x.DeadLetteredWindow, "The window DeadLetteredCritical counts in (default 10m).")
}

// Annotate describes FirestoreThresholds and its fields for a component provider's schema.
func (x *FirestoreThresholds) Annotate(a annotate.Annotator) {
	a.SetToken("index", "AlertFirestoreThresholds")
	a.Describe(x, "FirestoreThresholds configure the store-error policies: transient errors\n(RESOURCE_EXHAUSTED, UNAVAILABLE, DEADLINE_EXCEEDED) per minute, averaged\nover RateWindow, sustained for TransientFor.")
	a.Describe(&x.TransientWarningPerMinute, "The transient error rate that warns (default 5 a minute).")
	a.Describe(&x.TransientCriticalPerMinute, "The transient error rate that is critical (default 20 a minute).")
	a.Describe(&x.TransientFor, "How long the rate must stay above its threshold (default 10m).")
	a.Describe(&x.RateWindow, "The range the rate is averaged over (default 5m).")
}

// Annotate describes LeaseThresholds and its fields for a component provider's schema.
func (x *LeaseThresholds) Annotate(a annotate.Annotator) {
	a.SetToken("index", "AlertLeaseThresholds")
	a.Describe(x, "LeaseThresholds configure the lease policies.\nEach counts events in Window and fires when the count exceeds the limit.")
	a.Describe(&x.AcquireFailures, "How many lease acquisition failures per Window are tolerated (default 10).")
	a.Describe(&x.HeartbeatFailures, "How many lease heartbeat failures per Window are tolerated (default 5).")
	a.Describe(&x.StaleLeases, "How many stale leases found by the sweeper per Window are tolerated (default 3).")
	a.Describe(&x.Window, "The range the lease events are counted in (default 1h).")
}

// Annotate describes PushThresholds and its fields for a component provider's schema.
func (x *PushThresholds) Annotate(a annotate.Annotator) {
	a.SetToken("index", "AlertPushThresholds")
	a.Describe(x, "PushThresholds configure the push error-ratio policies. Ratios are\nfractions: 0.01 is 1 %.")
	a.Describe(&x.ServerErrorWarning, "The 5xx share of push requests that warns (default 0.01).")
	a.Describe(&x.ServerErrorCritical, "The 5xx share of push requests that is critical (default 0.05).")
	a.Describe(&x.ServerErrorFor, "How long the 5xx share must stay above its threshold (default 5m).")
	a.Describe(&x.ClientErrorWarning, "The 4xx share of push requests that warns (default 0.001).")
	a.Describe(&x.ClientErrorCritical, "The 4xx share of push requests that is critical (default 0.01).")
	a.Describe(&x.ClientErrorFor, "How long the 4xx share must stay above its threshold (default 10m).")
	a.Describe(&x.RatioWindow, "The range over which request counts are summed before dividing (default 5m).")
	a.Describe(&x.MinRequests, "The minimum-traffic guard: a ratio only counts when the subscription made at least this many push requests in RatioWindow, so one failure on an idle pipeline at 3 a.m. does not page anyone (default 100).")
}

// Annotate describes SLOConfig and its fields for a component provider's schema.
func (x *SLOConfig) Annotate(a annotate.Annotator) {
	a.SetToken("index", "AlertSLO")
	a.Describe(x, "SLOConfig configures the ack-ratio SLO of push subscriptions and its\nmulti-window burn-rate policies.")
	a.Describe(&x.Goal, "The fraction of push requests that must be acked (0.9 up to 1, default 0.995).")
	a.Describe(&x.RollingDays, "The SLO compliance period in days (1–30, default 30).")
	a.Describe(&x.BurnRates, "The alert windows: a policy fires when the error budget burns faster than Factor over both Long and Short (default 14.4x 1h/5m and 6x 6h/30m critical, 1x 3d/6h warning).")
}
