package alerts

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/logging"
	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/monitoring"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/eventpipe/eventpipe/internal/durations"
)

// ComponentType is the Pulumi type token of the alerts component.
const ComponentType = "eventpipe:index:Alerts"

// formerComponentType is the token stacks deployed before the components
// became a package recorded; the alias keeps their resources in place.
const formerComponentType = "eventpipe:alerts:Alerts"

// Args are the inputs of New.
type Args struct {
	// Target is what the alerts watch.
	Target Target
	// Config holds the environment's thresholds; unset values take Defaults().
	Config Config
	// Project is the project the metrics and policies are created in, when
	// it is only known at deploy time (another resource's output); nil uses
	// Target.Project.
	Project pulumi.StringInput
	// CriticalChannels and WarningChannels replace Target.Channels when the
	// channels are only known at deploy time; nil uses Target.Channels.
	CriticalChannels, WarningChannels pulumi.StringArrayInput
	// Expand turns the runbook text into the policy's documentation. The
	// Pipeline component uses it to fill in names only known at deploy time;
	// nil keeps the text as rendered.
	Expand func(string) pulumi.StringInput
}

// Alerts is one pipeline's log-based metrics, alert policies and ack-ratio
// SLOs, as a Pulumi component.
type Alerts struct {
	pulumi.ResourceState

	// Declared is what was declared, for callers and tests to inspect.
	Declared PolicySet
	// Metrics by metric ID, Policies by PolicySpec.Key, SLOs by subscription.
	Metrics  map[string]*logging.Metric
	Policies map[string]*monitoring.AlertPolicy
	SLOs     map[string]*monitoring.Slo
}

// New validates args and declares the alerts of one pipeline. name must be
// unique in the stack; every child's name starts with it.
func New(ctx *pulumi.Context, name string, args Args, opts ...pulumi.ResourceOption) (*Alerts, error) {
	ps, err := NewPolicySet(args.Target, args.Config.WithDefaults())
	if err != nil {
		return nil, fmt.Errorf("alerts %s: %w", name, err)
	}
	a := &Alerts{
		Declared: ps,
		Metrics:  map[string]*logging.Metric{},
		Policies: map[string]*monitoring.AlertPolicy{},
		SLOs:     map[string]*monitoring.Slo{},
	}
	opts = append(opts[:len(opts):len(opts)], pulumi.Aliases([]pulumi.Alias{{Type: pulumi.String(formerComponentType)}}))
	if err := ctx.RegisterComponentResource(ComponentType, name, a, opts...); err != nil {
		return nil, fmt.Errorf("alerts %s: register component: %w", name, err)
	}
	child := pulumi.Parent(a)
	var project pulumi.StringInput = pulumi.String(args.Target.Project)
	if args.Project != nil {
		project = args.Project
	}
	channels := map[Severity]pulumi.StringArrayInput{
		Critical: pulumi.ToStringArray(args.Target.Channels.Critical),
		Warning:  pulumi.ToStringArray(args.Target.Channels.Warning),
	}
	if args.CriticalChannels != nil {
		channels[Critical] = args.CriticalChannels
	}
	if args.WarningChannels != nil {
		channels[Warning] = args.WarningChannels
	}
	expand := args.Expand
	if expand == nil {
		expand = func(s string) pulumi.StringInput { return pulumi.String(s) }
	}

	var metricDeps []pulumi.Resource
	for _, m := range ps.Metrics {
		labels := logging.MetricMetricDescriptorLabelArray{}
		for _, k := range slices.Sorted(maps.Keys(m.Labels)) {
			labels = append(labels, logging.MetricMetricDescriptorLabelArgs{Key: pulumi.String(k), ValueType: pulumi.String("STRING")})
		}
		res, err := logging.NewMetric(ctx, name+"-"+strings.ReplaceAll(m.ID, "_", "-"), &logging.MetricArgs{
			Project:     project,
			Name:        pulumi.String(m.Name),
			Description: pulumi.String(m.Description),
			Filter:      pulumi.String(m.Filter),
			MetricDescriptor: &logging.MetricMetricDescriptorArgs{
				MetricKind:  pulumi.String("DELTA"),
				ValueType:   pulumi.String("INT64"),
				Unit:        pulumi.String("1"),
				DisplayName: pulumi.String(m.Description),
				Labels:      labels,
			},
			LabelExtractors: pulumi.ToStringMap(m.Labels),
			// The name holds the environment, so environments sharing a
			// project keep their own metrics. The provider would update a
			// renamed metric in place, which the Logging API does by
			// creating the new name and leaving the old metric behind:
			// replace it instead, so the old one is deleted once the
			// policies read the new one.
		}, child, pulumi.ReplaceOnChanges([]string{"name"}))
		if err != nil {
			return nil, fmt.Errorf("alerts %s: metric %s: %w", name, m.ID, err)
		}
		a.Metrics[m.ID] = res
		metricDeps = append(metricDeps, res)
	}

	for _, p := range ps.Policies {
		res, err := monitoring.NewAlertPolicy(ctx, name+"-"+strings.ReplaceAll(p.Key, "/", "-"), policyArgs(project, args.Target, p, channels[p.Severity], expand(p.Documentation)),
			// Policies on log-based metrics fail to create before the metric
			// exists; ordering on every metric is cheap and always right.
			child, pulumi.DependsOn(metricDeps))
		if err != nil {
			return nil, fmt.Errorf("alerts %s: policy %s: %w", name, p.Key, err)
		}
		a.Policies[p.Key] = res
	}

	if len(ps.SLOs) > 0 {
		svc, err := monitoring.NewCustomService(ctx, name+"-service", &monitoring.CustomServiceArgs{
			Project:     project,
			ServiceId:   pulumi.String(sloServiceID(args.Target)),
			DisplayName: pulumi.String(fmt.Sprintf("eventpipe %s/%s", args.Target.Env, args.Target.Pipeline)),
			UserLabels:  pulumi.ToStringMap(args.Target.labels("")),
		}, child)
		if err != nil {
			return nil, fmt.Errorf("alerts %s: SLO service: %w", name, err)
		}
		for _, s := range ps.SLOs {
			res, err := monitoring.NewSlo(ctx, name+"-"+s.Subscription+"-ack-slo", &monitoring.SloArgs{
				Project:           project,
				Service:           svc.ServiceId,
				DisplayName:       pulumi.String(fmt.Sprintf("%s acks %s%% of push requests", s.Subscription, num(s.Goal*100))),
				Goal:              pulumi.Float64(s.Goal),
				RollingPeriodDays: pulumi.Int(s.RollingDays),
				RequestBasedSli: &monitoring.SloRequestBasedSliArgs{
					GoodTotalRatio: &monitoring.SloRequestBasedSliGoodTotalRatioArgs{
						GoodServiceFilter:  pulumi.String(s.GoodFilter),
						TotalServiceFilter: pulumi.String(s.TotalFilter),
					},
				},
				UserLabels: pulumi.ToStringMap(args.Target.labels(s.Subscription)),
			}, child)
			if err != nil {
				return nil, fmt.Errorf("alerts %s: SLO of %s: %w", name, s.Subscription, err)
			}
			a.SLOs[s.Subscription] = res
		}
	}

	outputs := pulumi.Map{
		"policyCount": pulumi.Int(len(ps.Policies)),
		"metricCount": pulumi.Int(len(ps.Metrics)),
	}
	if err := ctx.RegisterResourceOutputs(a, outputs); err != nil {
		return nil, fmt.Errorf("alerts %s: register outputs: %w", name, err)
	}
	return a, nil
}

// sloServiceID is the Cloud Monitoring service ID of a pipeline's SLOs.
func sloServiceID(t Target) string {
	return labelValue("eventpipe-" + t.Env + "-" + t.Pipeline)
}

// policyArgs converts a PolicySpec of target t to the provider's arguments.
func policyArgs(project pulumi.StringInput, t Target, p PolicySpec, channels pulumi.StringArrayInput, doc pulumi.StringInput) *monitoring.AlertPolicyArgs {
	conds := monitoring.AlertPolicyConditionArray{}
	for _, c := range p.Conditions {
		cond := monitoring.AlertPolicyConditionArgs{DisplayName: pulumi.String(c.DisplayName)}
		switch c.Kind {
		case Threshold:
			agg := monitoring.AlertPolicyConditionConditionThresholdAggregationArgs{
				AlignmentPeriod:  pulumi.String(durations.Seconds(c.Window)),
				PerSeriesAligner: pulumi.String(c.Aligner),
			}
			if c.Reducer != "" {
				agg.CrossSeriesReducer = pulumi.String(c.Reducer)
			}
			cond.ConditionThreshold = &monitoring.AlertPolicyConditionConditionThresholdArgs{
				Filter:                pulumi.String(c.Filter),
				Comparison:            pulumi.String(c.Comparison),
				ThresholdValue:        pulumi.Float64(c.Threshold),
				Duration:              pulumi.String(durations.Seconds(c.Duration)),
				Aggregations:          monitoring.AlertPolicyConditionConditionThresholdAggregationArray{agg},
				EvaluationMissingData: pulumi.String(c.MissingData),
				Trigger:               &monitoring.AlertPolicyConditionConditionThresholdTriggerArgs{Count: pulumi.Int(1)},
			}
		case PromQL:
			pq := &monitoring.AlertPolicyConditionConditionPrometheusQueryLanguageArgs{
				Query:              pulumi.String(c.Query),
				Duration:           pulumi.String(durations.Seconds(c.Duration)),
				EvaluationInterval: pulumi.String("60s"),
				RuleGroup:          pulumi.String(promRuleGroup(t)),
				AlertRule:          pulumi.String(promRuleName(t, p.Key)),
			}
			if c.DisableMetricValidation {
				pq.DisableMetricValidation = pulumi.Bool(true)
			}
			cond.ConditionPrometheusQueryLanguage = pq
		case LogMatch:
			cond.ConditionMatchedLog = &monitoring.AlertPolicyConditionConditionMatchedLogArgs{
				Filter:          pulumi.String(c.Filter),
				LabelExtractors: pulumi.ToStringMap(c.LabelExtractors),
			}
		}
		conds = append(conds, cond)
	}
	strategy := &monitoring.AlertPolicyAlertStrategyArgs{AutoClose: pulumi.String(durations.Seconds(p.AutoClose))}
	if p.NotificationRateLimit > 0 {
		strategy.NotificationRateLimit = &monitoring.AlertPolicyAlertStrategyNotificationRateLimitArgs{
			Period: pulumi.String(durations.Seconds(p.NotificationRateLimit)),
		}
	}
	return &monitoring.AlertPolicyArgs{
		Project:              project,
		DisplayName:          pulumi.String(p.DisplayName),
		Combiner:             pulumi.String(p.Combiner),
		Conditions:           conds,
		Severity:             pulumi.String(string(p.Severity)),
		NotificationChannels: channels,
		UserLabels:           pulumi.ToStringMap(p.UserLabels),
		AlertStrategy:        strategy,
		Documentation: &monitoring.AlertPolicyDocumentationArgs{
			MimeType: pulumi.String("text/markdown"),
			Subject:  pulumi.String(p.DisplayName),
			Content:  doc,
		},
	}
}

// promRuleGroup is the Prometheus rule group of t's PromQL conditions: one
// per pipeline and environment.
func promRuleGroup(t Target) string {
	return "eventpipe_" + promSafe(t.Env+"_"+t.Pipeline)
}

// promRuleName turns a policy key of t into a Prometheus alert name
// ([a-zA-Z_][a-zA-Z0-9_]*) unique in the project: it names the environment
// and pipeline, so two pipelines' alerts never share a name.
func promRuleName(t Target, key string) string {
	return promRuleGroup(t) + "_" + promSafe(key)
}
