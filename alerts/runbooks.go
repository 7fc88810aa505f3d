package alerts

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"text/template"
	"unicode/utf8"

	"github.com/eventpipe/eventpipe/consumer/settings"
)

//go:embed runbook.md.tmpl
var runbookLayout string

// Cloud Monitoring's limits on a policy's documentation content, in characters
// (MaxDocumentation) and in UTF-8 bytes (MaxDocumentationBytes).
const (
	MaxDocumentation      = 8192
	MaxDocumentationBytes = 10240
)

// runbookText is the alert-specific part of a runbook.
type runbookText struct {
	title   string
	meaning string
	checks  [3]string
}

// runbookFor returns what policy p means and the first three things to
// check, with t's names and c's thresholds filled in.
func runbookFor(t Target, c Config, p PolicySpec) (runbookText, error) {
	sub := p.Subscription
	logs := fmt.Sprintf("In Logs Explorer, query %s jsonPayload.env=%q", strings.ReplaceAll(t.logsOf(), " AND ", " "), t.Env)
	switch p.Alert {
	case AlertDLQ:
		return runbookText{
			title: "Dead-lettered messages are waiting",
			meaning: fmt.Sprintf("Pub/Sub gave up on messages of %s after the subscription's maximum delivery attempts and moved them to its DLQ. "+
				"Warning: the DLQ held messages for %s. Critical: it held them for %s, or more than %d messages were dead-lettered within %s. "+
				"Each of these messages has NOT been applied; nothing is lost while the DLQ subscription keeps them (it never expires).",
				sub, c.DLQ.WarningFor, c.DLQ.CriticalFor, c.DLQ.DeadLetteredCritical, c.DLQ.DeadLetteredWindow),
			checks: [3]string{
				logs + " jsonPayload.outcome=(\"poison\" OR \"retry\") — the error_type and error of the failed attempts say whether this is poison (producer/schema) or a dependency failure.",
				"Pull a few DLQ messages without acking (eventpipe replay --dry-run below) and compare their payload and attributes with the route's expected schema and schemaVersion.",
				"Check recent changes: consumer deploys (" + settings.Version + " in the logs), producer releases, and the routes file; a 4xx or 5xx push-ratio alert on the same subscription points at the same cause.",
			},
		}, nil
	case AlertPush5xx:
		return runbookText{
			title: "Push 5xx ratio is high",
			meaning: fmt.Sprintf("More than %s%% (warning) / %s%% (critical) of Pub/Sub's push requests to the consumer for %s got a 5xx answer, for %s, with at least %d requests per %s. "+
				"5xx means a transient failure: the messages are redelivered with backoff and go to the DLQ once attempts run out.",
				num(c.Push.ServerErrorWarning*100), num(c.Push.ServerErrorCritical*100), sub, c.Push.ServerErrorFor, c.Push.MinRequests, c.Push.RatioWindow),
			checks: [3]string{
				logs + " jsonPayload.outcome=\"retry\" — group by error_code: RESOURCE_EXHAUSTED/UNAVAILABLE/DEADLINE_EXCEEDED mean Firestore saturation, PERMISSION_DENIED a broken identity.",
				"Cloud Run: instance count at its maximum, CPU or memory saturation, container restarts or a failing revision right after a deploy.",
				"Firestore: one hot document (about one sustained write per second per document) or a regional incident on the Google Cloud status page.",
			},
		}, nil
	case AlertPush4xx:
		return runbookText{
			title: "Push 4xx ratio is high",
			meaning: fmt.Sprintf("More than %s%% (warning) / %s%% (critical) of push requests for %s got a 4xx answer, for %s, with at least %d requests per %s. "+
				"The consumer answers 4xx to messages it can never process (poison): these go to the DLQ after the maximum delivery attempts. A rising 4xx ratio usually means a producer or schema change, or misrouting.",
				num(c.Push.ClientErrorWarning*100), num(c.Push.ClientErrorCritical*100), sub, c.Push.ClientErrorFor, c.Push.MinRequests, c.Push.RatioWindow),
			checks: [3]string{
				logs + " jsonPayload.outcome=\"poison\" — read error and group by route and event_type to see which producer changed.",
				"401/403 rather than 400/422 means push authentication: compare the subscription's push service account and audience with " + settings.PushAccounts + " and " + settings.OIDCAudience + ".",
				"Check the routes file and schemaVersion of the failing messages against the producer's latest release.",
			},
		}, nil
	case AlertBacklogAge:
		return runbookText{
			title: "Oldest unacked message is too old",
			meaning: fmt.Sprintf("The oldest message not yet acknowledged on %s is older than %s (warning) / %s (critical): the consumer is not keeping up or is stuck on some messages.",
				sub, c.Backlog.OldestAgeWarning, c.Backlog.OldestAgeCritical),
			checks: [3]string{
				"Is the consumer running and receiving? Cloud Run request count and instance count for the service, and the push endpoint/OIDC settings of the subscription.",
				logs + " — are messages being retried (outcome=\"retry\"), so the cause is the error they log, or not arriving at all?",
				"The lease-acquire, lease-heartbeat, lease-stale and Firestore alerts of the same pipeline: a held lease or a saturated store stalls processing.",
			},
		}, nil
	case AlertBacklogGrowth:
		return runbookText{
			title: "Backlog keeps growing",
			meaning: fmt.Sprintf("The number of undelivered messages of %s has risen (positive slope over %s) for %s (warning) / %s (critical): messages arrive faster than the consumer acknowledges them.",
				sub, c.Backlog.GrowthWindow, c.Backlog.GrowthWarningFor, c.Backlog.GrowthCriticalFor),
			checks: [3]string{
				"Publish rate of the topic: a producer burst or a replay in progress explains growth that will drain by itself.",
				"Consumer capacity: Cloud Run max instances, concurrency and request latency (latency_ms in the consumer logs).",
				logs + " — retries and their error_code: failing messages are redelivered and add to the backlog.",
			},
		}, nil
	case AlertFirestoreTransient:
		return runbookText{
			title: "Firestore transient errors",
			meaning: fmt.Sprintf("The consumer logged at least %s (warning) / %s (critical) Firestore errors per minute with code RESOURCE_EXHAUSTED, UNAVAILABLE or DEADLINE_EXCEEDED, averaged over %s, for %s. "+
				"Messages are retried, so nothing is lost yet, but latency and cost rise and the DLQ fills once attempts run out.",
				num(c.Firestore.TransientWarningPerMinute), num(c.Firestore.TransientCriticalPerMinute), c.Firestore.RateWindow, c.Firestore.TransientFor),
			checks: [3]string{
				logs + " jsonPayload.error_code=(\"RESOURCE_EXHAUSTED\" OR \"UNAVAILABLE\" OR \"DEADLINE_EXCEEDED\") — which doc_path values: one hot document points at a write-rate limit.",
				"Firestore usage and quota pages of the project, and the Google Cloud status page for the database's location.",
				"Consumer concurrency: more Cloud Run instances than the store can absorb; lower max instances or concurrency.",
			},
		}, nil
	case AlertFirestorePermission:
		return runbookText{
			title:   "Firestore permission denied",
			meaning: "The consumer logged a Firestore PERMISSION_DENIED or UNAUTHENTICATED error. These do not heal by retrying: every message of the pipeline fails until the identity or its roles are fixed, and the DLQ fills. This policy fires on the first such log line.",
			checks: [3]string{
				"The Cloud Run service's service account: does it still exist and hold roles/datastore.user on the project?",
				"Recent IAM changes in the project (Cloud Audit Logs, SetIamPolicy), and organisation policies that deny the role.",
				settings.Store + " of the service: does it name the right project and database?",
			},
		}, nil
	case AlertLeaseAcquire, AlertLeaseHeartbeat, AlertLeaseStale:
		what, limit := "stale leases (PENDING past their expiry) were found by the sweeper", c.Leases.StaleLeases
		switch p.Alert {
		case AlertLeaseAcquire:
			what, limit = "lease acquisitions failed", c.Leases.AcquireFailures
		case AlertLeaseHeartbeat:
			what, limit = "lease heartbeats failed", c.Leases.HeartbeatFailures
		}
		return runbookText{
			title: "Lease problems: " + what,
			meaning: fmt.Sprintf("More than %d %s within %s. Leases keep two instances from running the same long action; failures mean duplicated work is being prevented by retries, or a crashed instance left work unfinished.",
				limit, what, c.Leases.Window),
			checks: [3]string{
				logs + " " + anyOf(fieldLeaseEvent, leaseEvents()) + " — which idempotency_doc values, and whether one key is contended by many deliveries.",
				"Instance crashes or restarts (Cloud Run container exits): a stale lease is work abandoned mid-way; it is retried after expiry.",
				"Firestore errors of the same pipeline: failed heartbeats are often failed writes.",
			},
		}, nil
	case AlertSLOBurn:
		return runbookText{
			title: "Ack-ratio error budget is burning",
			meaning: fmt.Sprintf("The SLO of %s is that %s%% of push requests are acked over %d days. Requests that are not acked (4xx, 5xx, timeouts, unreachable) are burning the error budget faster than the allowed rate over both windows of a burn-rate pair: "+
				"a CRITICAL (page) policy means the budget is gone within days, a WARNING (ticket) policy that it will be gone by the end of the period.",
				sub, num(c.SLO.Goal*100), c.SLO.RollingDays),
			checks: [3]string{
				"The push 4xx and 5xx ratio alerts of the same subscription say which kind of failure is burning the budget.",
				"Pub/Sub's push_request_count by response_class: deadline_exceeded means the consumer is slower than the ack deadline, unreachable that the endpoint is down.",
				logs + " — the failing messages' error_type and error_code.",
			},
		}, nil
	}
	return runbookText{}, fmt.Errorf("alerts: no runbook for alert %q", p.Alert)
}

// runbookData is what runbook.md.tmpl renders.
type runbookData struct {
	Title   string
	Target  Target
	Policy  PolicySpec
	Meaning string
	Checks  [3]string
	DLQs    []Subscription // the DLQs a responder may need to replay
	Topic   string         // the source topic(s), full names, for pipelines without a DLQ
	// Compact lists the DLQs by name under one generic replay script, for
	// pipelines with too many DLQs to spell the script out for each.
	Compact bool
}

// replayScript names what the runbook's replay commands move: the messages
// of the dead-letter subscription DLQ back to the topic Topic (full names).
type replayScript struct{ DLQ, Topic string }

// parseRunbook parses runbook.md.tmpl; NewPolicySet parses it once per set.
func parseRunbook() (*template.Template, error) {
	tpl, err := template.New("runbook").Funcs(template.FuncMap{
		"inc":    func(i int) int { return i + 1 },
		"replay": func(dlq, topic string) replayScript { return replayScript{dlq, topic} },
		"subscription": func(project, id string) string {
			return "projects/" + project + "/subscriptions/" + id
		},
	}).Parse(runbookLayout)
	if err != nil {
		return nil, fmt.Errorf("alerts: runbook template: %w", err)
	}
	return tpl, nil
}

// runbook renders the markdown documentation of p with tpl.
func runbook(tpl *template.Template, t Target, c Config, p PolicySpec) (string, error) {
	text, err := runbookFor(t, c, p)
	if err != nil {
		return "", err
	}
	d := runbookData{Title: text.title, Target: t, Policy: p, Meaning: text.meaning, Checks: text.checks}
	var topics []string
	for _, s := range t.Subscriptions {
		if p.Subscription != "" && s.Name != p.Subscription {
			continue
		}
		if !slices.Contains(topics, s.Topic) {
			topics = append(topics, s.Topic)
		}
		if s.HasDLQ() {
			d.DLQs = append(d.DLQs, s)
		}
	}
	d.Topic = strings.Join(topics, ", ")
	var doc string
	for _, compact := range []bool{false, true} {
		d.Compact = compact
		var b strings.Builder
		if err := tpl.Execute(&b, d); err != nil {
			return "", fmt.Errorf("alerts: runbook of %s: %w", p.Key, err)
		}
		doc = b.String()
		if fits(doc) {
			return doc, nil
		}
	}
	return "", fmt.Errorf("alerts: runbook of %s is %d characters (%d bytes), over Cloud Monitoring's %d characters or %d bytes: the pipeline has too many DLQs for one runbook; split it into pipelines",
		p.Key, utf8.RuneCountInString(doc), len(doc), MaxDocumentation, MaxDocumentationBytes)
}

// fits reports whether doc is within Cloud Monitoring's documentation limits.
func fits(doc string) bool {
	return utf8.RuneCountInString(doc) <= MaxDocumentation && len(doc) <= MaxDocumentationBytes
}
