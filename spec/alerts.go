package spec

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/eventpipe/eventpipe/alerts"
)

// KeyAlerts is the stack-wide alerts key: team, channels per severity and the
// environment's thresholds (issue 6).
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
	Channels alerts.Channels `json:"channels"`
	// Thresholds override seed 001's alert thresholds for this environment; unset keys keep
	// the defaults (README, "Alerts and runbooks", lists every key).
	Thresholds alerts.Config `json:"thresholds"`
}

// PipelineAlerts is a pipeline's alerts section. Alerts are on by default;
// opting out is explicit and needs a reason.
type PipelineAlerts struct {
	// OptOut turns the pipeline's alerts off; allowed only with a reason.
	OptOut bool `json:"optOut,omitempty"`
	// Reason explains an opt-out.
	Reason string `json:"reason,omitempty"`
	// Team is the team owning this pipeline's alerts (default eventpipe:alerts.team).
	Team string `json:"team,omitempty"`
}

// Enabled reports whether the pipeline gets its alerts.
func (a PipelineAlerts) Enabled() bool { return !a.OptOut }

// AlertTarget is what the alerts of pipeline p watch: its consumer service,
// its subscriptions and their DLQs, with the stack's channels.
func (s *Stack) AlertTarget(p *Pipeline) alerts.Target {
	t := alerts.Target{
		Project:  s.Project,
		Pipeline: p.Name,
		Env:      s.Env,
		Team:     p.Alerts.Team,
		Service:  p.Consumer.ServiceName,
		Channels: s.Alerts.Channels,
	}
	for _, sub := range p.SortedSubscriptions() {
		as := alerts.Subscription{Name: sub.Name, Topic: p.Topic.Name, Push: sub.Push()}
		if sub.HasDLQ() {
			as.DLQSubscription = sub.DLQSubscriptionName()
			as.DLQTopic = sub.DLQTopicName()
		}
		t.Subscriptions = append(t.Subscriptions, as)
	}
	return t
}

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
	addAlertErrors(c, "", path+".", a.Channels.Validate())
	if len(a.Channels.Critical) == 0 {
		a.Channels.Critical = append([]string(nil), s.NotificationChannels...)
	}
	if len(a.Channels.Warning) == 0 {
		a.Channels.Warning = append([]string(nil), s.NotificationChannels...)
	}
	addAlertErrors(c, "", path+".thresholds.", a.Thresholds.Validate())
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

// addAlertErrors records the field errors of an alerts validation under prefix.
func addAlertErrors(c *collector, pipeline, prefix string, err error) {
	if err == nil {
		return
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		var fe *alerts.FieldError
		if errors.As(e, &fe) {
			c.add(pipeline, prefix+fe.Field, fmt.Sprint(fe.Value), fe.Range, fe.Fix)
			continue
		}
		c.add(pipeline, prefix[:len(prefix)-1], "", "valid alert settings", e.Error())
	}
}
