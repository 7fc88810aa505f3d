package alerts

import (
	"errors"
	"fmt"
	"iter"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Alert names: one per kind of alert, each with its runbook. A subscription
// or pipeline gets one policy per alert and severity.
const (
	AlertDLQ                 = "dlq"
	AlertPush5xx             = "push-5xx"
	AlertPush4xx             = "push-4xx"
	AlertBacklogAge          = "backlog-age"
	AlertBacklogGrowth       = "backlog-growth"
	AlertFirestoreTransient  = "firestore-transient"
	AlertFirestorePermission = "firestore-permission"
	AlertLeaseAcquire        = "lease-acquire"
	AlertLeaseHeartbeat      = "lease-heartbeat"
	AlertLeaseStale          = "lease-stale"
	AlertSLOBurn             = "slo-burn"
)

// ConditionKind is the Cloud Monitoring condition type.
type ConditionKind string

// Condition kinds.
const (
	// Threshold compares a metric time series with a value (conditionThreshold).
	Threshold ConditionKind = "threshold"
	// PromQL evaluates a PromQL expression (conditionPrometheusQueryLanguage):
	// used for ratios, rates and slopes, as Google recommends now that MQL is
	// deprecated.
	PromQL ConditionKind = "promql"
	// LogMatch fires on a single matching log entry (conditionMatchedLog).
	LogMatch ConditionKind = "logmatch"
)

// Cloud Monitoring enum values used below.
const (
	comparisonGT = "COMPARISON_GT"
	alignMax     = "ALIGN_MAX"
	alignSum     = "ALIGN_SUM"
	reduceSum    = "REDUCE_SUM"
	// missingInactive treats "no points" as "not violating": right for
	// sparse DELTA counters (no error logs means no errors) and for an idle
	// subscription's gauges.
	missingInactive = "EVALUATION_MISSING_DATA_INACTIVE"
	// gaugeAlignment aligns Pub/Sub gauges, sampled every 60 s, over two
	// samples so a single late point does not leave the window empty.
	gaugeAlignment = 2 * time.Minute
)

// ConditionSpec is one condition of a policy. Which fields are set depends
// on Kind: Threshold uses MetricType, Filter, Comparison, Threshold,
// Duration, Window, Aligner, Reducer and MissingData; PromQL uses MetricType
// (the metric the query reads), Query, Comparison, Threshold (the comparison
// inside the query) and Duration; LogMatch uses Filter and LabelExtractors.
type ConditionSpec struct {
	DisplayName     string
	Kind            ConditionKind
	MetricType      string
	Filter          string
	Comparison      string
	Threshold       float64
	Duration        time.Duration
	Window          time.Duration
	Aligner         string
	Reducer         string
	MissingData     string
	Query           string
	LabelExtractors map[string]string
	// DisableMetricValidation is set on PromQL conditions over the
	// pipeline's log-based metrics. Cloud Monitoring checks that the metrics
	// a condition reads exist when the policy is created; a log-based metric
	// created in the same deployment stays invisible to it for up to about
	// ten minutes, so without this the first `pulumi up` of a stack fails
	// with "Cannot find metric(s)".
	DisableMetricValidation bool
}

// PolicySpec is one alert policy, ready to become a monitoring.AlertPolicy.
type PolicySpec struct {
	// Key is unique within a pipeline: [SUBSCRIPTION/]ALERT-SEVERITY.
	Key          string
	Alert        string // one of the Alert* names
	Subscription string // "" for pipeline-wide policies
	Severity     Severity
	DisplayName  string
	Combiner     string // "OR": any condition opens an incident
	Conditions   []ConditionSpec
	// Documentation is the policy's markdown runbook.
	Documentation string
	UserLabels    map[string]string
	Channels      []string
	AutoClose     time.Duration
	// NotificationRateLimit is set for log-match policies only.
	NotificationRateLimit time.Duration
}

// SLOSpec is the request-based ack-ratio SLO of one push subscription.
type SLOSpec struct {
	Subscription string
	Goal         float64
	RollingDays  int
	GoodFilter   string // push requests Pub/Sub counted as acked
	TotalFilter  string // all push requests
}

// PolicySet is everything one pipeline's alerts consist of: its log-based
// metrics, alert policies and SLOs, as plain values.
type PolicySet struct {
	Metrics  []MetricSpec
	Policies []PolicySpec
	SLOs     []SLOSpec
}

// NewPolicySet validates t and c and builds the set. Policies are sorted by
// Key, so renders are stable.
func NewPolicySet(t Target, c Config) (PolicySet, error) {
	if err := errors.Join(t.Validate(), c.Validate()); err != nil {
		return PolicySet{}, err
	}
	b := builder{t: t, c: c}
	b.pipelinePolicies()
	for _, s := range t.Subscriptions {
		b.subscriptionPolicies(s)
	}
	tpl, err := parseRunbook()
	if err != nil {
		return PolicySet{}, err
	}
	for i := range b.policies {
		doc, err := runbook(tpl, t, c, b.policies[i])
		if err != nil {
			return PolicySet{}, err
		}
		b.policies[i].Documentation = doc
	}
	sort.Slice(b.policies, func(i, j int) bool { return b.policies[i].Key < b.policies[j].Key })
	return PolicySet{Metrics: Metrics(t), Policies: b.policies, SLOs: b.slos}, nil
}

// builder accumulates the policies of one PolicySet.
type builder struct {
	t        Target
	c        Config
	policies []PolicySpec
	slos     []SLOSpec
}

// add appends a policy with the labels, channels and strategy every policy
// shares.
func (b *builder) add(alert, sub string, sev Severity, title string, conds ...ConditionSpec) {
	key := alert + "-" + strings.ToLower(string(sev))
	labels := b.t.labels(sub)
	labels["eventpipe_alert"] = alert
	labels["eventpipe_severity"] = strings.ToLower(string(sev))
	scope := b.t.Pipeline
	if sub != "" {
		key = sub + "/" + key
		scope += "/" + sub
	}
	p := PolicySpec{
		Key:          key,
		Alert:        alert,
		Subscription: sub,
		Severity:     sev,
		DisplayName:  fmt.Sprintf("[eventpipe %s] %s: %s (%s)", b.t.Env, scope, title, strings.ToLower(string(sev))),
		Combiner:     "OR",
		Conditions:   conds,
		UserLabels:   labels,
		Channels:     append([]string(nil), b.t.Channels.For(sev)...),
		AutoClose:    b.c.AutoClose.D(),
	}
	if len(conds) == 1 && conds[0].Kind == LogMatch {
		p.NotificationRateLimit = b.c.LogMatchRateLimit.D()
	}
	b.policies = append(b.policies, p)
}

// pipelinePolicies adds the policies on the consumer's log-based metrics.
func (b *builder) pipelinePolicies() {
	c, t := b.c, b.t
	errType := MetricSpec{Name: metricName(t, MetricFirestoreErrors)}.Type()
	transient := logSelector(t, errType, `error_code=~"`+strings.Join(transientCodes(), "|")+`"`)
	for sev, perMinute := range levels(c.Firestore.TransientWarningPerMinute, c.Firestore.TransientCriticalPerMinute) {
		b.add(AlertFirestoreTransient, "", sev, "Firestore transient errors", ConditionSpec{
			DisplayName: fmt.Sprintf("transient Firestore errors ≥ %s/min for %s", num(perMinute), c.Firestore.TransientFor),
			Kind:        PromQL,
			MetricType:  errType,
			Query:       fmt.Sprintf("sum(rate(%s[%s])) * 60 >= %s", transient, c.Firestore.RateWindow, num(perMinute)),
			Comparison:  ">=",
			Threshold:   perMinute,
			Duration:    c.Firestore.TransientFor.D(),
			Window:      c.Firestore.RateWindow.D(),
			// The metric is created in the same deployment: see DisableMetricValidation.
			DisableMetricValidation: true,
		})
	}
	b.add(AlertFirestorePermission, "", Critical, "Firestore permission denied", ConditionSpec{
		DisplayName: "consumer logged PERMISSION_DENIED or UNAUTHENTICATED",
		Kind:        LogMatch,
		Filter:      logBase(t) + " AND " + anyOf(fieldErrorCode, permissionCodes()),
		LabelExtractors: map[string]string{
			"error_code": extract(fieldErrorCode),
			"route":      extract(fieldRoute),
		},
	})

	// Lease failures are counted with PromQL rather than a threshold
	// condition: a threshold condition on a log-based metric is validated
	// against the metric when the policy is created, and a metric made in the
	// same deployment is not visible to Cloud Monitoring for minutes.
	leaseType := MetricSpec{Name: metricName(t, MetricLeaseEvents)}.Type()
	for _, l := range []struct {
		alert, event, what string
		limit              int
	}{
		{AlertLeaseAcquire, "acquire_failed", "lease acquisition failures", c.Leases.AcquireFailures},
		{AlertLeaseHeartbeat, "heartbeat_failed", "lease heartbeat failures", c.Leases.HeartbeatFailures},
		{AlertLeaseStale, "stale_found", "stale leases found by the sweeper", c.Leases.StaleLeases},
	} {
		events := logSelector(t, leaseType, fieldLeaseEvent+"="+strconv.Quote(l.event))
		b.add(l.alert, "", Warning, strings.ToUpper(l.what[:1])+l.what[1:], ConditionSpec{
			DisplayName:             fmt.Sprintf("%s > %d per %s", l.what, l.limit, c.Leases.Window),
			Kind:                    PromQL,
			MetricType:              leaseType,
			Query:                   fmt.Sprintf("sum(increase(%s[%s])) > %d", events, c.Leases.Window, l.limit),
			Comparison:              ">",
			Threshold:               float64(l.limit),
			Duration:                c.ConfirmFor.D(),
			Window:                  c.Leases.Window.D(),
			DisableMetricValidation: true,
		})
	}
}

// subscriptionPolicies adds the DLQ, backlog and (push) error and SLO
// policies of s.
func (b *builder) subscriptionPolicies(s Subscription) {
	c := b.c
	if s.HasDLQ() {
		undelivered := func(d Duration) ConditionSpec {
			return pubsubThreshold(fmt.Sprintf("DLQ %s holds messages for %s", s.DLQSubscription, d),
				"num_undelivered_messages", s.DLQSubscription, 0, d.D(), gaugeAlignment, alignMax)
		}
		b.add(AlertDLQ, s.Name, Warning, "dead-lettered messages waiting", undelivered(c.DLQ.WarningFor))
		b.add(AlertDLQ, s.Name, Critical, "dead-lettered messages waiting", undelivered(c.DLQ.CriticalFor),
			pubsubThreshold(fmt.Sprintf("> %d messages dead-lettered from %s in %s", c.DLQ.DeadLetteredCritical, s.Name, c.DLQ.DeadLetteredWindow),
				"dead_letter_message_count", s.Name, float64(c.DLQ.DeadLetteredCritical), c.ConfirmFor.D(), c.DLQ.DeadLetteredWindow.D(), alignSum))
	}

	for sev, age := range levels(c.Backlog.OldestAgeWarning, c.Backlog.OldestAgeCritical) {
		b.add(AlertBacklogAge, s.Name, sev, "oldest unacked message is old",
			pubsubThreshold(fmt.Sprintf("oldest unacked message older than %s", age),
				"oldest_unacked_message_age", s.Name, age.D().Seconds(), c.ConfirmFor.D(), gaugeAlignment, alignMax))
	}
	for sev, hold := range levels(c.Backlog.GrowthWarningFor, c.Backlog.GrowthCriticalFor) {
		b.add(AlertBacklogGrowth, s.Name, sev, "backlog keeps growing", ConditionSpec{
			DisplayName: fmt.Sprintf("undelivered messages rising for %s", hold),
			Kind:        PromQL,
			MetricType:  pubsubMetric("num_undelivered_messages"),
			Query:       fmt.Sprintf("deriv(%s[%s]) > 0", pubsubSelector("num_undelivered_messages", s.Name), c.Backlog.GrowthWindow),
			Comparison:  ">",
			Threshold:   0,
			Duration:    hold.D(),
			Window:      c.Backlog.GrowthWindow.D(),
		})
	}
	if !s.Push {
		return
	}

	for _, e := range []struct {
		alert, class, what string
		warn, crit         float64
		hold               Duration
	}{
		{AlertPush5xx, "remote_server_5xx", "push 5xx ratio", c.Push.ServerErrorWarning, c.Push.ServerErrorCritical, c.Push.ServerErrorFor},
		{AlertPush4xx, "remote_server_4xx", "push 4xx ratio", c.Push.ClientErrorWarning, c.Push.ClientErrorCritical, c.Push.ClientErrorFor},
	} {
		for sev, ratio := range levels(e.warn, e.crit) {
			b.add(e.alert, s.Name, sev, e.what+" high", ConditionSpec{
				DisplayName: fmt.Sprintf("%s > %s%% for %s (≥ %d requests per %s)", e.what, num(ratio*100), e.hold, c.Push.MinRequests, c.Push.RatioWindow),
				Kind:        PromQL,
				MetricType:  pubsubMetric("push_request_count"),
				Query:       pushRatioQuery(s.Name, e.class, c.Push.RatioWindow, ratio, c.Push.MinRequests),
				Comparison:  ">",
				Threshold:   ratio,
				Duration:    e.hold.D(),
				Window:      c.Push.RatioWindow.D(),
			})
		}
	}

	b.slos = append(b.slos, SLOSpec{
		Subscription: s.Name,
		Goal:         c.SLO.Goal,
		RollingDays:  c.SLO.RollingDays,
		GoodFilter:   pubsubFilter("push_request_count", s.Name) + ` AND metric.labels.response_class="ack"`,
		TotalFilter:  pubsubFilter("push_request_count", s.Name),
	})
	for _, sev := range []Severity{Critical, Warning} {
		var clauses, names []string
		var shortest time.Duration
		for _, br := range c.SLO.BurnRates {
			if br.Severity != sev {
				continue
			}
			clauses = append(clauses, burnClause(s.Name, br, c.SLO.Goal, c.Push.MinRequests))
			names = append(names, fmt.Sprintf("%sx over %s and %s", num(br.Factor), br.Long, br.Short))
			if shortest == 0 || br.Short.D() < shortest {
				shortest = br.Short.D()
			}
		}
		if len(clauses) == 0 {
			continue
		}
		b.add(AlertSLOBurn, s.Name, sev, "ack-ratio error budget burning", ConditionSpec{
			DisplayName: "ack-ratio SLO burn rate " + strings.Join(names, "; "),
			Kind:        PromQL,
			MetricType:  pubsubMetric("push_request_count"),
			Query:       strings.Join(clauses, "\nor\n"),
			Comparison:  ">",
			Threshold:   clean(1 - c.SLO.Goal),
			Duration:    c.ConfirmFor.D(),
			Window:      shortest,
		})
	}
}

// levels yields the warning and then the critical value of one threshold: each is a
// policy of its own, since Cloud Monitoring sets severity once per policy.
func levels[T any](warning, critical T) iter.Seq2[Severity, T] {
	return func(yield func(Severity, T) bool) {
		_ = yield(Warning, warning) && yield(Critical, critical)
	}
}

// pubsubMetric is the Cloud Monitoring type of a Pub/Sub subscription metric.
func pubsubMetric(m string) string { return "pubsub.googleapis.com/subscription/" + m }

// pubsubThreshold is a threshold condition "metric m of subscription sub >
// threshold for hold", aligned with aligner over window. DELTA counters
// (aligned by sum) are also summed across series.
func pubsubThreshold(title, m, sub string, threshold float64, hold, window time.Duration, aligner string) ConditionSpec {
	c := ConditionSpec{
		DisplayName: title,
		Kind:        Threshold,
		MetricType:  pubsubMetric(m),
		Filter:      pubsubFilter(m, sub),
		Comparison:  comparisonGT,
		Threshold:   threshold,
		Duration:    hold,
		Window:      window,
		Aligner:     aligner,
		MissingData: missingInactive,
	}
	if aligner == alignSum {
		c.Reducer = reduceSum
	}
	return c
}

// pubsubFilter is the monitoring filter of metric m on subscription sub.
func pubsubFilter(m, sub string) string {
	return fmt.Sprintf(`metric.type=%s AND resource.type="pubsub_subscription" AND resource.labels.subscription_id=%s`,
		quote(pubsubMetric(m)), quote(sub))
}

// pubsubSelector is the PromQL selector of metric m on subscription sub,
// with extra label matchers appended.
func pubsubSelector(m, sub string, extra ...string) string {
	matchers := append([]string{`monitored_resource="pubsub_subscription"`, "subscription_id=" + strconv.Quote(sub)}, extra...)
	return promName(pubsubMetric(m)) + "{" + strings.Join(matchers, ",") + "}"
}

// logSelector is the PromQL selector of a log-based metric of the consumer.
// Log-based metrics can be written by several resource types, so the
// monitored resource must be named.
func logSelector(t Target, metricType string, extra ...string) string {
	matchers := append([]string{`monitored_resource=` + strconv.Quote(t.resourceType())}, extra...)
	return promName(metricType) + "{" + strings.Join(matchers, ",") + "}"
}

// pushRatioQuery is the PromQL of "push requests of class over all push
// requests > ratio", guarded by a minimum number of requests in the window.
func pushRatioQuery(sub, class string, window Duration, ratio float64, minRequests int) string {
	all := fmt.Sprintf("sum(increase(%s[%s]))", pubsubSelector("push_request_count", sub), window)
	bad := fmt.Sprintf("sum(increase(%s[%s]))", pubsubSelector("push_request_count", sub, "response_class="+strconv.Quote(class)), window)
	return fmt.Sprintf("(%s / %s) > %s\nand\n%s >= %d", bad, all, num(ratio), all, minRequests)
}

// burnClause is one multi-window burn-rate test: the error ratio (push
// requests not acked over all push requests) exceeds factor × budget over
// both windows, with enough traffic in the long window to mean anything.
// "or vector(0)" keeps the ratio defined when no request was acked at all —
// a total outage must not read as missing data.
func burnClause(sub string, br BurnRate, goal float64, minRequests int) string {
	errRatio := func(w Duration) string {
		all := fmt.Sprintf("sum(increase(%s[%s]))", pubsubSelector("push_request_count", sub), w)
		ack := fmt.Sprintf("sum(increase(%s[%s]))", pubsubSelector("push_request_count", sub, `response_class="ack"`), w)
		return fmt.Sprintf("((%s - (%s or vector(0))) / %s)", all, ack, all)
	}
	limit := num(br.Factor * (1 - goal))
	guard := fmt.Sprintf("sum(increase(%s[%s])) >= %d", pubsubSelector("push_request_count", sub), br.Long, minRequests)
	return fmt.Sprintf("(%s > %s and %s > %s and %s)", errRatio(br.Long), limit, errRatio(br.Short), limit, guard)
}

// num formats a threshold without float noise (14.4*0.005 = 0.072).
func num(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// clean rounds v to the six significant digits num prints.
func clean(v float64) float64 {
	f, err := strconv.ParseFloat(num(v), 64)
	if err != nil { // cannot happen: num prints a valid float
		return v
	}
	return f
}
