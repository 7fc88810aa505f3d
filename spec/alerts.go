package spec

import (
	"encoding/json"
	"strconv"

	"github.com/eventpipe/eventpipe/alerts"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// KeyAlerts is the stack-wide alerts key: team, channels per severity and the
// environment's thresholds.
const KeyAlerts = "alerts"

// DefaultTeam labels alert policies of pipelines whose team is not set, so
// unowned alerts are easy to find (eventpipe_team=unowned).
const DefaultTeam = "unowned"

// StackAlerts configures the alerts of every pipeline of the stack.
type StackAlerts struct {
	// Team is the team owning the stack's pipelines unless a pipeline names its own;
	// it labels every alert policy as eventpipe_team (default unowned).
	Team string `json:"team,omitempty"`
	// Channels are the notification channels per severity, {critical: [...], warning: [...]},
	// each projects/P/notificationChannels/ID (default eventpipe:notificationChannels).
	Channels Channels `json:"channels"`
	// Thresholds override the default alert thresholds for this environment; unset keys keep
	// the defaults (docs/alerts.md lists every key). The alerts package reads and checks them.
	Thresholds json.RawMessage `json:"thresholds,omitempty"`
}

// Channels are notification channels per severity.
type Channels struct {
	// Critical are the channels CRITICAL (paging) policies notify.
	Critical []string `json:"critical"`
	// Warning are the channels WARNING (ticket) policies notify.
	Warning []string `json:"warning"`
}

// PipelineAlerts configure a pipeline's alerts: log-based metrics, alert
// policies with runbooks, and an ack-ratio SLO per push subscription.
// Alerts are on by default; opting out is explicit and needs a reason.
type PipelineAlerts struct {
	// OptOut turns the pipeline's alerts off; allowed only with a reason.
	OptOut bool `json:"optOut,omitempty" pulumi:"optOut,optional"`
	// Reason explains an opt-out.
	Reason string `json:"reason,omitempty" pulumi:"reason,optional"`
	// Team is the team owning this pipeline's alerts; it labels every policy eventpipe_team (default
	// eventpipe:alerts.team, else unowned).
	Team string `json:"team,omitempty" pulumi:"team,optional"`
	// CriticalChannels are the notification channels (projects/P/notificationChannels/ID) CRITICAL policies
	// notify; a stack file sets them for every pipeline in eventpipe:alerts.channels.
	CriticalChannels pulumi.StringArrayInput `json:"-" pulumi:"criticalChannels,optional"`
	// WarningChannels are the notification channels WARNING policies notify; a stack file sets them for every
	// pipeline in eventpipe:alerts.channels.
	WarningChannels pulumi.StringArrayInput `json:"-" pulumi:"warningChannels,optional"`
	// Thresholds override the default alert thresholds; unset values keep the defaults. A stack file sets
	// them for every pipeline in eventpipe:alerts.thresholds.
	Thresholds *alerts.Config `json:"-" pulumi:"thresholds,optional"`
}

// Enabled reports whether the pipeline gets its alerts.
func (a PipelineAlerts) Enabled() bool { return !a.OptOut }

// validateAlerts fills the alert defaults into s and records every invalid
// alert setting, stack-wide and per pipeline.
func validateAlerts(c *collector, s *Stack) {
	path := Namespace + ":" + KeyAlerts
	a := &s.Alerts
	if a.Team == "" {
		a.Team = DefaultTeam
	}
	if NormaliseLabelValue(a.Team) != a.Team {
		c.add("", path+".team", strconv.Quote(a.Team), "a label value: lowercase letters, digits, _ or -", "write the team as e.g. "+strconv.Quote(NormaliseLabelValue(a.Team)))
	}
	// Checked before the fallback: eventpipe:notificationChannels is
	// validated on its own.
	checkChannels(c, path+".channels.critical", a.Channels.Critical)
	checkChannels(c, path+".channels.warning", a.Channels.Warning)
	if len(a.Channels.Critical) == 0 {
		a.Channels.Critical = append([]string(nil), s.NotificationChannels...)
	}
	if len(a.Channels.Warning) == 0 {
		a.Channels.Warning = append([]string(nil), s.NotificationChannels...)
	}
	for _, p := range s.SortedPipelines() {
		if p == nil {
			continue
		}
		pp := Namespace + ":" + KeyPipelines + "." + p.Name + ".alerts"
		pa := &p.Alerts
		if pa.OptOut && NormaliseLabelValue(pa.Reason) == "" {
			c.add(p.Name, pp+".reason", quoteOrEmpty(pa.Reason), "a short reason for turning the pipeline's alerts off",
				"say why (e.g. reason: load-test pipeline, deleted after the test), or remove optOut")
		}
		if !pa.OptOut && pa.Reason != "" {
			c.add(p.Name, pp+".reason", strconv.Quote(pa.Reason), "only with alerts.optOut: true", "remove the reason, or set optOut: true if the pipeline really must run without alerts")
		}
		if pa.Team == "" {
			pa.Team = a.Team
		} else if NormaliseLabelValue(pa.Team) != pa.Team {
			c.add(p.Name, pp+".team", strconv.Quote(pa.Team), "a label value: lowercase letters, digits, _ or -", "write the team as e.g. "+strconv.Quote(NormaliseLabelValue(pa.Team)))
		}
	}
}
