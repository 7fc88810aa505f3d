package alerts

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// recorder is a Pulumi mock that keeps every resource's inputs.
type recorder struct {
	mu  sync.Mutex
	res map[string]map[string]any // "type name" -> inputs
}

func (r *recorder) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.res == nil {
		r.res = map[string]map[string]any{}
	}
	r.res[args.TypeToken+" "+args.Name] = args.Inputs.Mappable()
	return args.Name + "-id", args.Inputs, nil
}

func (r *recorder) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return resource.PropertyMap{}, nil
}

// ofType returns the inputs of every resource of type typ, by resource name.
func (r *recorder) ofType(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for k, v := range r.res {
		if t, name, _ := strings.Cut(k, " "); t == typ {
			out[name] = v
		}
	}
	return out
}

// render runs New under mocks and returns what it declared.
func render(t *testing.T, tg Target, c Config) (*recorder, *Alerts) {
	t.Helper()
	rec := &recorder{}
	var a *Alerts
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		var err error
		a, err = New(ctx, "orders", Args{Target: tg, Config: c})
		return err
	}, pulumi.WithMocks("eventpipe", "prod", rec))
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return rec, a
}

// at walks a decoded input tree: string keys index maps, ints index lists.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: %T is not a map", path, v)
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("at %v: %v has no element %d", path, v, k)
			}
			v = l[k]
		}
	}
	return v
}

const (
	typeMetric = "gcp:logging/metric:Metric"
	typePolicy = "gcp:monitoring/alertPolicy:AlertPolicy"
	typeSLO    = "gcp:monitoring/slo:Slo"
	typeSvc    = "gcp:monitoring/customService:CustomService"
	base       = `resource.type="cloud_run_revision" AND resource.labels.service_name="orders-consumer" AND jsonPayload.env="prod"`
	pushSel    = `pubsub_googleapis_com:subscription_push_request_count{monitored_resource="pubsub_subscription",subscription_id="orders-push"`
	warnChan   = "projects/acme-prod/notificationChannels/222"
	critChan   = "projects/acme-prod/notificationChannels/111"
)

func TestMetricsRendered(t *testing.T) {
	rec, _ := render(t, testTarget(), Defaults())
	metrics := rec.ofType(typeMetric)
	want := map[string]struct {
		name, filter string
		extractors   map[string]any
	}{
		"orders-outcomes": {
			"eventpipe/prod/orders/outcomes",
			base + ` AND jsonPayload.outcome=("applied" OR "duplicate" OR "stale_ignored" OR "poison" OR "retry")`,
			map[string]any{"route": "EXTRACT(jsonPayload.route)", "outcome": "EXTRACT(jsonPayload.outcome)"},
		},
		"orders-firestore-errors": {
			"eventpipe/prod/orders/firestore_errors",
			base + ` AND jsonPayload.error_code=("CANCELLED" OR "UNKNOWN" OR "INVALID_ARGUMENT" OR "DEADLINE_EXCEEDED" OR "NOT_FOUND" OR "ALREADY_EXISTS" OR "PERMISSION_DENIED" OR "RESOURCE_EXHAUSTED" OR "FAILED_PRECONDITION" OR "ABORTED" OR "OUT_OF_RANGE" OR "UNIMPLEMENTED" OR "INTERNAL" OR "UNAVAILABLE" OR "DATA_LOSS" OR "UNAUTHENTICATED")`,
			map[string]any{"error_code": "EXTRACT(jsonPayload.error_code)", "error_type": "EXTRACT(jsonPayload.error_type)"},
		},
		"orders-lease-events": {
			"eventpipe/prod/orders/lease_events",
			base + ` AND jsonPayload.lease_event=("acquire_failed" OR "heartbeat_failed" OR "stale_found")`,
			map[string]any{"lease_event": "EXTRACT(jsonPayload.lease_event)"},
		},
		"orders-poison": {
			"eventpipe/prod/orders/poison",
			base + ` AND jsonPayload.outcome="poison"`,
			map[string]any{"route": "EXTRACT(jsonPayload.route)"},
		},
	}
	if len(metrics) != len(want) {
		t.Fatalf("got %d metrics %v, want %d", len(metrics), keys(metrics), len(want))
	}
	for res, w := range want {
		m, ok := metrics[res]
		if !ok {
			t.Errorf("metric %s missing; have %v", res, keys(metrics))
			continue
		}
		if m["name"] != w.name || m["filter"] != w.filter || m["project"] != "acme-prod" {
			t.Errorf("%s: name %v filter %v project %v", res, m["name"], m["filter"], m["project"])
		}
		if !reflect.DeepEqual(m["labelExtractors"], w.extractors) {
			t.Errorf("%s: extractors %v, want %v", res, m["labelExtractors"], w.extractors)
		}
		d := m["metricDescriptor"].(map[string]any)
		if d["metricKind"] != "DELTA" || d["valueType"] != "INT64" {
			t.Errorf("%s: descriptor %v, want DELTA INT64", res, d)
		}
		// Every extractor has its label descriptor, and no more.
		var labels []string
		for _, l := range d["labels"].([]any) {
			lm := l.(map[string]any)
			labels = append(labels, lm["key"].(string))
			if lm["valueType"] != "STRING" {
				t.Errorf("%s: label %v", res, lm)
			}
		}
		if !reflect.DeepEqual(labels, slices.Sorted(maps.Keys(toStrings(w.extractors)))) {
			t.Errorf("%s: descriptor labels %v, extractors %v", res, labels, keys(w.extractors))
		}
	}
}

// cond is the expected shape of one condition.
type cond struct {
	kind       ConditionKind
	metricType string
	filter     string // threshold and log-match filters, exact
	query      string // PromQL, exact
	comparison string
	threshold  float64
	duration   string
	window     string // alignment period (threshold)
	aligner    string
}

type policyWant struct {
	severity Severity
	channel  string
	conds    []cond
}

func psFilter(metric, sub string) string {
	return fmt.Sprintf(`metric.type="pubsub.googleapis.com/subscription/%s" AND resource.type="pubsub_subscription" AND resource.labels.subscription_id="%s"`, metric, sub)
}

func ratioQuery(class, ratio string) string {
	all := "sum(increase(" + pushSel + "}[5m]))"
	return "(sum(increase(" + pushSel + `,response_class="` + class + `"}[5m])) / ` + all + ") > " + ratio + "\nand\n" + all + " >= 100"
}

// expectedPolicies is the full policy set of testTarget with Defaults(),
// written out by hand from the documented thresholds rather than computed.
func expectedPolicies() map[string]policyWant {
	lease := func(event, limit string, thr float64) policyWant {
		return policyWant{Warning, warnChan, []cond{{
			kind: PromQL, metricType: "logging.googleapis.com/user/eventpipe/prod/orders/lease_events",
			query:      `sum(increase(logging_googleapis_com:user_eventpipe_prod_orders_lease_events{monitored_resource="cloud_run_revision",lease_event="` + event + `"}[1h])) > ` + limit,
			comparison: ">", threshold: thr, duration: "180s",
		}}}
	}
	age := func(sub string, sev Severity, ch string, secs float64) policyWant {
		return policyWant{sev, ch, []cond{{
			kind: Threshold, metricType: "pubsub.googleapis.com/subscription/oldest_unacked_message_age",
			filter: psFilter("oldest_unacked_message_age", sub), comparison: "COMPARISON_GT", threshold: secs,
			duration: "180s", window: "120s", aligner: "ALIGN_MAX",
		}}}
	}
	growth := func(sub string, sev Severity, ch, dur string) policyWant {
		return policyWant{sev, ch, []cond{{
			kind: PromQL, metricType: "pubsub.googleapis.com/subscription/num_undelivered_messages",
			query:      `deriv(pubsub_googleapis_com:subscription_num_undelivered_messages{monitored_resource="pubsub_subscription",subscription_id="` + sub + `"}[10m]) > 0`,
			comparison: ">", threshold: 0, duration: dur,
		}}}
	}
	ratio := func(sev Severity, ch, class, r string, thr float64, dur string) policyWant {
		return policyWant{sev, ch, []cond{{
			kind: PromQL, metricType: "pubsub.googleapis.com/subscription/push_request_count",
			query: ratioQuery(class, r), comparison: ">", threshold: thr, duration: dur,
		}}}
	}
	firestore := func(sev Severity, ch, perMin string, thr float64) policyWant {
		return policyWant{sev, ch, []cond{{
			kind: PromQL, metricType: "logging.googleapis.com/user/eventpipe/prod/orders/firestore_errors",
			query:      `sum(rate(logging_googleapis_com:user_eventpipe_prod_orders_firestore_errors{monitored_resource="cloud_run_revision",error_code=~"RESOURCE_EXHAUSTED|UNAVAILABLE|DEADLINE_EXCEEDED"}[5m])) * 60 >= ` + perMin,
			comparison: ">=", threshold: thr, duration: "600s",
		}}}
	}
	undelivered := func(dur string) cond {
		return cond{
			kind: Threshold, metricType: "pubsub.googleapis.com/subscription/num_undelivered_messages",
			filter: psFilter("num_undelivered_messages", "orders-push-dlq"), comparison: "COMPARISON_GT", threshold: 0,
			duration: dur, window: "120s", aligner: "ALIGN_MAX",
		}
	}
	return map[string]policyWant{
		"firestore-transient-warning":  firestore(Warning, warnChan, "5", 5),
		"firestore-transient-critical": firestore(Critical, critChan, "20", 20),
		"firestore-permission-critical": {Critical, critChan, []cond{{
			kind:   LogMatch,
			filter: base + ` AND jsonPayload.error_code=("PERMISSION_DENIED" OR "UNAUTHENTICATED")`,
		}}},
		"lease-acquire-warning":                lease("acquire_failed", "10", 10),
		"lease-heartbeat-warning":              lease("heartbeat_failed", "5", 5),
		"lease-stale-warning":                  lease("stale_found", "3", 3),
		"orders-push/dlq-warning":              {Warning, warnChan, []cond{undelivered("300s")}},
		"orders-push/dlq-critical":             {Critical, critChan, []cond{undelivered("900s"), {kind: Threshold, metricType: "pubsub.googleapis.com/subscription/dead_letter_message_count", filter: psFilter("dead_letter_message_count", "orders-push"), comparison: "COMPARISON_GT", threshold: 10, duration: "180s", window: "600s", aligner: "ALIGN_SUM"}}},
		"orders-push/backlog-age-warning":      age("orders-push", Warning, warnChan, 300),
		"orders-push/backlog-age-critical":     age("orders-push", Critical, critChan, 900),
		"orders-push/backlog-growth-warning":   growth("orders-push", Warning, warnChan, "900s"),
		"orders-push/backlog-growth-critical":  growth("orders-push", Critical, critChan, "1800s"),
		"orders-push/push-5xx-warning":         ratio(Warning, warnChan, "remote_server_5xx", "0.01", 0.01, "300s"),
		"orders-push/push-5xx-critical":        ratio(Critical, critChan, "remote_server_5xx", "0.05", 0.05, "300s"),
		"orders-push/push-4xx-warning":         ratio(Warning, warnChan, "remote_server_4xx", "0.001", 0.001, "600s"),
		"orders-push/push-4xx-critical":        ratio(Critical, critChan, "remote_server_4xx", "0.01", 0.01, "600s"),
		"orders-push/slo-burn-critical":        {Critical, critChan, []cond{{kind: PromQL, metricType: "pubsub.googleapis.com/subscription/push_request_count", comparison: ">", threshold: 0.005, duration: "180s"}}},
		"orders-push/slo-burn-warning":         {Warning, warnChan, []cond{{kind: PromQL, metricType: "pubsub.googleapis.com/subscription/push_request_count", comparison: ">", threshold: 0.005, duration: "180s"}}},
		"orders-audit/backlog-age-warning":     age("orders-audit", Warning, warnChan, 300),
		"orders-audit/backlog-age-critical":    age("orders-audit", Critical, critChan, 900),
		"orders-audit/backlog-growth-warning":  growth("orders-audit", Warning, warnChan, "900s"),
		"orders-audit/backlog-growth-critical": growth("orders-audit", Critical, critChan, "1800s"),
	}
}

func TestPoliciesRendered(t *testing.T) {
	rec, a := render(t, testTarget(), Defaults())
	policies := rec.ofType(typePolicy)
	want := expectedPolicies()
	if len(policies) != len(want) {
		t.Errorf("got %d policies, want %d: %v", len(policies), len(want), keys(policies))
	}
	for key, w := range want {
		res := "orders-" + strings.ReplaceAll(key, "/", "-")
		p, ok := policies[res]
		if !ok {
			t.Errorf("policy %s (%s) missing; have %v", key, res, keys(policies))
			continue
		}
		if a.Policies[key] == nil {
			t.Errorf("Alerts.Policies lacks %s", key)
		}
		t.Run(key, func(t *testing.T) { checkPolicy(t, p, w) })
	}
}

func checkPolicy(t *testing.T, p map[string]any, w policyWant) {
	if p["severity"] != string(w.severity) {
		t.Errorf("severity %v, want %s", p["severity"], w.severity)
	}
	if !reflect.DeepEqual(p["notificationChannels"], []any{w.channel}) {
		t.Errorf("channels %v, want [%s]", p["notificationChannels"], w.channel)
	}
	if p["combiner"] != "OR" || p["project"] != "acme-prod" {
		t.Errorf("combiner %v project %v", p["combiner"], p["project"])
	}
	labels := p["userLabels"].(map[string]any)
	for k, v := range map[string]string{"eventpipe_pipeline": "orders", "eventpipe_env": "prod", "eventpipe_team": "payments", "eventpipe_severity": strings.ToLower(string(w.severity))} {
		if labels[k] != v {
			t.Errorf("user label %s = %v, want %s", k, labels[k], v)
		}
	}
	doc := p["documentation"].(map[string]any)
	if doc["mimeType"] != "text/markdown" || !strings.Contains(doc["content"].(string), "### First three things to check") {
		t.Errorf("documentation %v", doc["mimeType"])
	}
	strategy := p["alertStrategy"].(map[string]any)
	if strategy["autoClose"] != "1800s" {
		t.Errorf("autoClose %v", strategy["autoClose"])
	}
	conds := p["conditions"].([]any)
	if len(conds) != len(w.conds) {
		t.Fatalf("%d conditions, want %d", len(conds), len(w.conds))
	}
	for i, wc := range w.conds {
		c := conds[i].(map[string]any)
		switch wc.kind {
		case Threshold:
			th := c["conditionThreshold"].(map[string]any)
			if strings.Contains(wc.metricType, "logging.googleapis.com/user/") {
				t.Errorf("cond %d: a threshold condition on log-based metric %s fails the first deployment (the metric is not visible yet)", i, wc.metricType)
			}
			if th["filter"] != wc.filter {
				t.Errorf("cond %d filter\n got %v\nwant %s", i, th["filter"], wc.filter)
			}
			if !strings.Contains(wc.filter, `metric.type="`+wc.metricType+`"`) {
				t.Errorf("cond %d: filter does not select %s", i, wc.metricType)
			}
			if th["comparison"] != wc.comparison || th["thresholdValue"] != wc.threshold || th["duration"] != wc.duration {
				t.Errorf("cond %d: %v %v for %v, want %s %v for %s", i, th["comparison"], th["thresholdValue"], th["duration"], wc.comparison, wc.threshold, wc.duration)
			}
			agg := at(t, th, "aggregations", 0).(map[string]any)
			if agg["alignmentPeriod"] != wc.window || agg["perSeriesAligner"] != wc.aligner {
				t.Errorf("cond %d aggregation %v, want %s %s", i, agg, wc.window, wc.aligner)
			}
			if th["evaluationMissingData"] != "EVALUATION_MISSING_DATA_INACTIVE" {
				t.Errorf("cond %d: missing data %v", i, th["evaluationMissingData"])
			}
		case PromQL:
			pq := c["conditionPrometheusQueryLanguage"].(map[string]any)
			q := pq["query"].(string)
			if wc.query != "" && q != wc.query {
				t.Errorf("cond %d query\n got %s\nwant %s", i, q, wc.query)
			}
			if !strings.Contains(q, promName(wc.metricType)+"{") {
				t.Errorf("cond %d: query does not read %s", i, wc.metricType)
			}
			// Burn-rate queries compare against factor × budget; their
			// clauses are checked in TestSLOBurnRateQueries.
			if wc.query != "" && !strings.Contains(q, " "+wc.comparison+" "+num(wc.threshold)) {
				t.Errorf("cond %d: query lacks %s %v", i, wc.comparison, wc.threshold)
			}
			if pq["duration"] != wc.duration {
				t.Errorf("cond %d: duration %v, want %s", i, pq["duration"], wc.duration)
			}
			// A log-based metric created in the same deployment is not yet
			// visible to Cloud Monitoring: its conditions must not validate it.
			logMetric := strings.HasPrefix(wc.metricType, "logging.googleapis.com/user/")
			if got, _ := pq["disableMetricValidation"].(bool); got != logMetric {
				t.Errorf("cond %d on %s: disableMetricValidation = %v, want %v", i, wc.metricType, pq["disableMetricValidation"], logMetric)
			}
		case LogMatch:
			lm := c["conditionMatchedLog"].(map[string]any)
			if lm["filter"] != wc.filter {
				t.Errorf("log filter\n got %v\nwant %s", lm["filter"], wc.filter)
			}
			if len(conds) != 1 {
				t.Error("a log-match condition must be alone in its policy")
			}
			if at(t, strategy, "notificationRateLimit", "period") != "300s" {
				t.Errorf("rate limit %v", strategy["notificationRateLimit"])
			}
		}
	}
}

func TestSLOBurnRateQueries(t *testing.T) {
	rec, _ := render(t, testTarget(), Defaults())
	policies := rec.ofType(typePolicy)
	page := at(t, policies["orders-orders-push-slo-burn-critical"], "conditions", 0, "conditionPrometheusQueryLanguage", "query").(string)
	ticket := at(t, policies["orders-orders-push-slo-burn-warning"], "conditions", 0, "conditionPrometheusQueryLanguage", "query").(string)
	// 14.4x and 6x of a 0.5 % budget page; 1x tickets. Each clause tests
	// the long and the short window.
	for _, want := range []string{"[1h])) >= 100", "[5m]))) > 0.072", "[1h]))) > 0.072", "[6h]))) > 0.03", "[30m]))) > 0.03", "\nor\n"} {
		if !strings.Contains(page, want) {
			t.Errorf("page query lacks %q:\n%s", want, page)
		}
	}
	for _, want := range []string{"[3d]))) > 0.005", "[6h]))) > 0.005", "[3d])) >= 100"} {
		if !strings.Contains(ticket, want) {
			t.Errorf("ticket query lacks %q:\n%s", want, ticket)
		}
	}
	if strings.Contains(ticket, "0.072") || strings.Contains(page, "[3d]") {
		t.Error("page and ticket windows are mixed")
	}
	// A total outage (no acked requests at all) must still evaluate.
	if !strings.Contains(page, `response_class="ack"}[5m])) or vector(0))`) {
		t.Errorf("ack count has no missing-data fallback:\n%s", page)
	}

	slos := rec.ofType(typeSLO)
	slo, ok := slos["orders-orders-push-ack-slo"]
	if !ok || len(slos) != 1 {
		t.Fatalf("SLOs %v: want one for the push subscription only", keys(slos))
	}
	if slo["goal"] != 0.995 || slo["rollingPeriodDays"] != 30.0 || slo["service"] != "eventpipe-prod-orders" {
		t.Errorf("SLO %v", slo)
	}
	ratio := at(t, slo, "requestBasedSli", "goodTotalRatio").(map[string]any)
	if ratio["totalServiceFilter"] != psFilter("push_request_count", "orders-push") ||
		ratio["goodServiceFilter"] != psFilter("push_request_count", "orders-push")+` AND metric.labels.response_class="ack"` {
		t.Errorf("SLI %v", ratio)
	}
	if len(rec.ofType(typeSvc)) != 1 {
		t.Error("want one custom service")
	}
}

// TestWarningAndCriticalNeverSharePolicy: severity is set once per policy,
// so every alert of a subscription has one warning and one critical policy,
// each a separate resource with its own severity and channels.
func TestWarningAndCriticalNeverSharePolicy(t *testing.T) {
	ps := mustPolicySet(t, testTarget(), Defaults())
	type pair struct{ sub, alert string }
	bySev := map[pair]map[Severity]string{}
	seen := map[string]bool{}
	for _, p := range ps.Policies {
		if seen[p.Key] {
			t.Errorf("duplicate policy key %s", p.Key)
		}
		seen[p.Key] = true
		k := pair{p.Subscription, p.Alert}
		if bySev[k] == nil {
			bySev[k] = map[Severity]string{}
		}
		if prev, dup := bySev[k][p.Severity]; dup {
			t.Errorf("%s and %s: two %s policies for %v", prev, p.Key, p.Severity, k)
		}
		bySev[k][p.Severity] = p.Key
		if !strings.HasSuffix(p.Key, "-"+strings.ToLower(string(p.Severity))) || p.UserLabels["eventpipe_severity"] != strings.ToLower(string(p.Severity)) {
			t.Errorf("%s: severity %s not reflected in key/labels", p.Key, p.Severity)
		}
		// A policy's conditions all belong to its severity: no condition
		// of the other level's threshold sneaks in.
		for _, c := range p.Conditions {
			if strings.Contains(c.DisplayName, "(warning)") || strings.Contains(c.DisplayName, "(critical)") {
				t.Errorf("%s: condition %q names a severity", p.Key, c.DisplayName)
			}
		}
	}
	for k, sevs := range bySev {
		switch k.alert {
		case AlertFirestorePermission, AlertLeaseAcquire, AlertLeaseHeartbeat, AlertLeaseStale:
			if len(sevs) != 1 {
				t.Errorf("%v: want a single policy, got %v", k, sevs)
			}
		default:
			if sevs[Warning] == "" || sevs[Critical] == "" || sevs[Warning] == sevs[Critical] {
				t.Errorf("%v: want separate warning and critical policies, got %v", k, sevs)
			}
		}
	}
}

func TestOptOutAndPullScoping(t *testing.T) {
	ps := mustPolicySet(t, testTarget(), Defaults())
	for _, p := range ps.Policies {
		if p.Subscription == "orders-audit" {
			switch p.Alert {
			case AlertBacklogAge, AlertBacklogGrowth:
			default:
				t.Errorf("pull subscription without DLQ got %s", p.Key)
			}
		}
	}
	// Every duration respects the metrics' ingestion delay.
	for _, p := range ps.Policies {
		for _, c := range p.Conditions {
			if c.Kind != LogMatch && c.Duration < MinWindow {
				t.Errorf("%s: duration %s below %s", p.Key, c.Duration, MinWindow)
			}
		}
	}
}

func TestRunbooks(t *testing.T) {
	ps := mustPolicySet(t, testTarget(), Defaults())
	for _, p := range ps.Policies {
		t.Run(p.Key, func(t *testing.T) {
			d := p.Documentation
			for _, h := range []string{"### What it means", "### First three things to check", "### How to replay the DLQ", "1. ", "2. ", "3. "} {
				if !strings.Contains(d, h) {
					t.Errorf("runbook lacks %q", h)
				}
			}
			if strings.Contains(d, "4. ") {
				t.Error("runbook lists more than three checks")
			}
			if strings.Contains(d, "${") {
				t.Error("runbook contains ${, which Cloud Monitoring reads as a variable")
			}
			if len(d) > MaxDocumentationBytes {
				t.Errorf("runbook is %d bytes", len(d))
			}
			replay := "gcloud pubsub subscriptions pull projects/acme-prod/subscriptions/orders-push-dlq"
			publish := "gcloud pubsub topics publish projects/acme-prod/topics/orders"
			if p.Subscription == "orders-audit" {
				if strings.Contains(d, "gcloud") || !strings.Contains(d, "explicit opt-out") {
					t.Error("opted-out subscription's runbook should explain there is no DLQ")
				}
			} else if !strings.Contains(d, replay) || !strings.Contains(d, publish) {
				t.Errorf("runbook lacks the replay commands:\n%s", d)
			}
		})
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	tg := testTarget()
	tg.Subscriptions[0].DLQTopic = ""
	tg.Channels.Warning = []string{"oncall"}
	c := Defaults()
	c.Push.ServerErrorCritical = 5
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		_, err := New(ctx, "orders", Args{Target: tg, Config: c})
		return err
	}, pulumi.WithMocks("eventpipe", "prod", &recorder{}))
	if err == nil {
		t.Fatal("New accepted invalid input")
	}
	for _, want := range []string{"subscriptions[0].dlqTopic", "channels.warning[0]", "alerts.push.serverErrorCritical = 5"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestTargetValidate(t *testing.T) {
	cases := map[string]struct {
		mutate func(*Target)
		want   string
	}{
		"project":       {func(t *Target) { t.Project = "Acme" }, "project"},
		"team":          {func(t *Target) { t.Team = "" }, "team"},
		"service":       {func(t *Target) { t.Service = "Orders_Consumer" }, "service"},
		"no subs":       {func(t *Target) { t.Subscriptions = nil }, "subscriptions"},
		"full path":     {func(t *Target) { t.Subscriptions[0].Name = "projects/p/subscriptions/s" }, "subscriptions[0].name"},
		"duplicate sub": {func(t *Target) { t.Subscriptions[1].Name = "orders-push" }, "unique"},
		"pipeline":      {func(t *Target) { t.Pipeline = "a/b" }, "pipeline"},
	}
	for name, tc := range cases {
		tg := testTarget()
		tc.mutate(&tg)
		err := tg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ": allowed ") {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if err := testTarget().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestLabelValue(t *testing.T) {
	for in, want := range map[string]string{
		"Orders.Push~1":         "orders_push_1",
		"team-A":                "team-a",
		strings.Repeat("x", 80): strings.Repeat("x", 63),
	} {
		if got := labelValue(in); got != want {
			t.Errorf("labelValue(%q) = %q, want %q", in, got, want)
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func toStrings(m map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// TestRunbookSizeLimit: a pipeline with many DLQs gets a compact replay
// section that still names every DLQ; one too large for any runbook is an
// error naming the fix, not a policy Cloud Monitoring would reject.
func TestRunbookSizeLimit(t *testing.T) {
	many := func(n int) Target {
		tg := testTarget()
		tg.Subscriptions = nil
		for i := range n {
			name := fmt.Sprintf("orders-sub-%02d", i)
			tg.Subscriptions = append(tg.Subscriptions, Subscription{Name: name, Topic: "projects/acme-prod/topics/orders", DLQSubscription: name + ".dlq-sub", DLQTopic: name + ".dlq", Push: true})
		}
		return tg
	}
	ps := mustPolicySet(t, many(12), Defaults())
	for _, p := range ps.Policies {
		if p.Subscription != "" {
			if !strings.Contains(p.Documentation, "subscriptions/"+p.Subscription+".dlq-sub --limit") {
				t.Errorf("%s: subscription runbook lacks its own replay command", p.Key)
			}
			continue
		}
		if !fits(p.Documentation) {
			t.Errorf("%s: runbook of %d bytes does not fit", p.Key, len(p.Documentation))
		}
		for i := range 12 {
			if !strings.Contains(p.Documentation, fmt.Sprintf("projects/acme-prod/subscriptions/orders-sub-%02d.dlq-sub → projects/acme-prod/topics/orders;", i)) {
				t.Errorf("%s: compact runbook lacks DLQ %d", p.Key, i)
			}
		}
		if !strings.Contains(p.Documentation, "pull DLQ --limit") {
			t.Errorf("%s: compact runbook lacks the generic replay script", p.Key)
		}
	}
	_, err := NewPolicySet(many(400), Defaults())
	if err == nil || !strings.Contains(err.Error(), "split it into pipelines") {
		t.Fatalf("err = %v, want the runbook size error", err)
	}
}

// TestFreshStackComesUpInOneDeployment: Cloud Monitoring validates the
// metrics a condition reads when the policy is created, and a log-based
// metric made in the same `pulumi up` is not visible to it for minutes. So
// no threshold condition reads a log-based metric, and every PromQL
// condition that does skips the validation.
func TestFreshStackComesUpInOneDeployment(t *testing.T) {
	rec, _ := render(t, testTarget(), Defaults())
	checked := 0
	for name, p := range rec.ofType(typePolicy) {
		for i, c := range p["conditions"].([]any) {
			cond := c.(map[string]any)
			if th, ok := cond["conditionThreshold"].(map[string]any); ok && strings.Contains(th["filter"].(string), "logging.googleapis.com/user/") {
				t.Errorf("%s cond %d: threshold condition on a log-based metric: %s", name, i, th["filter"])
			}
			pq, ok := cond["conditionPrometheusQueryLanguage"].(map[string]any)
			if !ok || !strings.Contains(pq["query"].(string), "logging_googleapis_com:user_") {
				continue
			}
			checked++
			if pq["disableMetricValidation"] != true {
				t.Errorf("%s cond %d: PromQL on a log-based metric without disableMetricValidation", name, i)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no PromQL condition reads a log-based metric: the test checks nothing")
	}
}

// TestAlertRuleNamesUniquePerPipeline: Prometheus alert names identify a
// rule in Cloud Monitoring's alerting views; two pipelines (or one pipeline
// in two environments of a project) must never share one.
func TestAlertRuleNamesUniquePerPipeline(t *testing.T) {
	other := testTarget()
	other.Pipeline, other.Service = "invoices", "invoices-consumer"
	staging := testTarget()
	staging.Env = "staging"
	seen := map[string]string{}
	for _, tg := range []Target{testTarget(), other, staging} {
		rec, _ := render(t, tg, Defaults())
		for name, p := range rec.ofType(typePolicy) {
			for _, c := range p["conditions"].([]any) {
				pq, ok := c.(map[string]any)["conditionPrometheusQueryLanguage"].(map[string]any)
				if !ok {
					continue
				}
				rule := pq["alertRule"].(string)
				where := tg.Env + "/" + tg.Pipeline + "/" + name
				if prev, dup := seen[rule]; dup {
					t.Errorf("alert rule %s used by %s and %s", rule, prev, where)
				}
				seen[rule] = where
				if !strings.Contains(rule, promSafe(tg.Env+"_"+tg.Pipeline)) {
					t.Errorf("alert rule %s does not name its pipeline", rule)
				}
			}
		}
	}
}

// TestRunbooksUseNotificationMarkdown: Cloud Monitoring renders only headers,
// lists, bold, italic and links in notifications, so a runbook carries no
// code block, no inline code, no HTML, no escapes and no "${" (its variable
// syntax); every command is a list item on one line.
func TestRunbooksUseNotificationMarkdown(t *testing.T) {
	ps := mustPolicySet(t, testTarget(), Defaults())
	listItem := regexp.MustCompile(`^(- |[1-9][0-9]*\. )`)
	for _, p := range ps.Policies {
		for n, line := range strings.Split(p.Documentation, "\n") {
			for _, bad := range []string{"`", "${", "\\", "<br", "<code", "<pre"} {
				if strings.Contains(line, bad) {
					t.Errorf("%s line %d contains %q: %s", p.Key, n+1, bad, line)
				}
			}
			if stars := strings.Count(line, "*") - 4*strings.Count(line, "**")/2; stars != 0 {
				t.Errorf("%s line %d: a lone * would start emphasis: %s", p.Key, n+1, line)
			}
			for _, cmd := range []string{"eventpipe replay ", "gcloud "} {
				if strings.HasPrefix(strings.TrimPrefix(line, "- "), cmd) && !listItem.MatchString(line) {
					t.Errorf("%s line %d: command not a list item: %s", p.Key, n+1, line)
				}
			}
		}
	}
}
