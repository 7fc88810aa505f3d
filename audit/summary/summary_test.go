package summary

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/eventpipe/eventpipe/audit/inventory"
	"github.com/eventpipe/eventpipe/audit/ownership"
	"github.com/eventpipe/eventpipe/policies/report"
)

func input() Input {
	shop := &inventory.Project{ID: "shop", Subscriptions: []*pubsubpb.Subscription{
		{Name: "projects/shop/subscriptions/orders", Topic: "projects/shop/topics/orders", DeadLetterPolicy: &pubsubpb.DeadLetterPolicy{DeadLetterTopic: "projects/shop/topics/orders.dlq"},
			PushConfig: &pubsubpb.PushConfig{PushEndpoint: "https://x"}},
		{Name: "projects/shop/subscriptions/orders.dlq-sub", Topic: "projects/shop/topics/orders.dlq"},
		{Name: "projects/shop/subscriptions/audit", Topic: "projects/shop/topics/orders", BigqueryConfig: &pubsubpb.BigQueryConfig{Table: "shop.a.b"}},
		{Name: "projects/shop/subscriptions/hidden", Topic: "projects/shop/topics/orders"},
	}, Backlog: map[string]time.Duration{
		"projects/shop/subscriptions/orders":         90 * time.Second,
		"projects/shop/subscriptions/orders.dlq-sub": 3*time.Hour + 2*time.Minute,
	}}
	shop.SetUnshown("projects/shop/subscriptions/hidden", true)
	shop.AddGap(inventory.GapAlertPolicies, "projects/shop", "permission denied | monitoring.alertPolicies.list")
	quiet := &inventory.Project{ID: "quiet"}
	quiet.AddGap(inventory.GapBacklog, "projects/quiet", "Monitoring API not enabled")
	for _, topic := range []string{"a", "b", "c", "d"} {
		quiet.AddGap(inventory.GapPolicy, "projects/quiet/topics/"+topic, "denied")
	}
	return Input{
		Source: "live shop, quiet", Generated: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Inventory: &inventory.Inventory{Projects: []*inventory.Project{shop, quiet}},
		Owners: map[string]ownership.Owner{
			"projects/shop/subscriptions/orders": {Kind: ownership.Terraform},
			"projects/shop/subscriptions/audit":  {Kind: ownership.Unmanaged},
		},
		Findings: []Finding{
			{Project: "shop", RuleID: "EP003", Title: "Retry policy", Severity: "medium", Level: "deny", Resource: "orders", Message: "no retry <policy>", Owner: "managed by Terraform", Fix: "apply"},
			{Project: "shop", RuleID: "EP001", Title: "No DLQ", Severity: "high", Level: "deny", Resource: "audit", Message: "a | b", Owner: "managed by no infrastructure code", Fix: "gcloud"},
			{Project: "shop", RuleID: "EP011", Title: "Expires", Severity: "low", Level: "warn", Resource: "audit", Message: "m", Waived: true},
			{Project: "", RuleID: "EP000", Title: "Expired waiver", Severity: "high", Level: "deny", Resource: "urn:x", Message: "expired"},
		},
		Failed: true,
	}
}

func TestMarkdown(t *testing.T) {
	var buf bytes.Buffer
	if err := Build(input()).Markdown(&buf); err != nil {
		t.Fatal(err)
	}
	md := buf.String()
	for _, want := range []string{
		"verdict: **FAILED** (3 denies, 0 warnings, 1 waived)",
		"| shop | 4 (1 push, 2 pull, 1 BigQuery, 0 Cloud Storage) | 1 (1 not shown) | 3h2m0s (orders.dlq-sub) | 1 Terraform, 1 no infrastructure code | 2 | 0 | 1 |",
		"| quiet | 0 (0 push, 0 pull, 0 BigQuery, 0 Cloud Storage) | 0 | Monitoring API not enabled | — | 0 | 0 | 5 |",
		"| **all** | 4 | 1 (1 not shown) |",
		`| high | EP001 No DLQ | audit | a \| b |`,
		"| low (waived) | EP011 Expires |",
		"- shop: alert-policies: permission denied \\| monitoring.alertPolicies.list",
		"## configuration",
		"- quiet: iam-policy (4: projects/quiet/topics/a, projects/quiet/topics/b, projects/quiet/topics/c, …): denied",
		"EP000 Expired waiver",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	// Findings are ordered by severity: EP001 (high) before EP003 (medium).
	if strings.Index(md, "EP001 No DLQ") > strings.Index(md, "EP003 Retry policy") {
		t.Errorf("findings not by severity:\n%s", md)
	}
}

func TestHTMLEscapes(t *testing.T) {
	var buf bytes.Buffer
	if err := Build(input()).HTML(&buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	if strings.Contains(html, "<policy>") || !strings.Contains(html, "no retry &lt;policy&gt;") {
		t.Errorf("HTML does not escape finding text:\n%s", html)
	}
	for _, want := range []string{`<strong class="failed">FAILED</strong>`, "<td>shop</td>", `<tr class="waived">`} {
		if !strings.Contains(html, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}

// TestVerdictCountsAgreeInNumber: the Markdown and HTML verdicts count one deny or warning
// in the singular, as every verdict does (report.Tally); they said "1 denies".
func TestVerdictCountsAgreeInNumber(t *testing.T) {
	for d := range 3 {
		for w := range 3 {
			s := Build(input())
			s.Totals.Denies, s.Totals.Warnings = d, w
			var md, page bytes.Buffer
			if err := s.Markdown(&md); err != nil {
				t.Fatal(err)
			}
			if err := s.HTML(&page); err != nil {
				t.Fatal(err)
			}
			want := "(" + report.Tally(d, w) + ", 1 waived)"
			if !strings.Contains(md.String(), want) || !strings.Contains(page.String(), want) {
				t.Errorf("%d denies, %d warnings: the verdicts lack %q", d, w, want)
			}
		}
	}
}
