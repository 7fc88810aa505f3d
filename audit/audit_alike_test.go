package audit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/iam/apiv1/iampb"
	"cloud.google.com/go/monitoring/apiv3/v2/monitoringpb"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/eventpipe/eventpipe/audit/cai"
	"github.com/eventpipe/eventpipe/audit/inventory"
	"github.com/eventpipe/eventpipe/audit/model"
	"github.com/eventpipe/eventpipe/policies/check"
	"github.com/eventpipe/eventpipe/policies/plan"
)

// The property: for any estate, the findings the audit reports are the findings
// `eventpipe check` reports on the model the audit wrote with --model (the same rule, URN,
// level and message each), so re-judging that file re-judges what the audit saw.

// verdicts are findings as comparable lines: level, rule, URN and message.
func verdicts(t *testing.T, run *check.Run, doc *model.Document) (audited, checked []string) {
	t.Helper()
	ctx := context.Background()
	ev, err := Evaluate(ctx, run, doc, "test", func(string) (string, int) { return "", 0 })
	if err != nil {
		t.Fatal(err)
	}
	data, err := doc.JSON()
	if err != nil {
		t.Fatal(err)
	}
	// What `eventpipe check FILE` does with the file --model wrote.
	p, err := plan.Parse(data, "model.json")
	if err != nil {
		t.Fatal(err)
	}
	res, err := run.Check(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	line := func(level, id, urn, msg string) string { return level + " " + id + " " + urn + ": " + msg }
	for _, f := range ev.Findings {
		audited = append(audited, line(string(f.Level), f.Rule.ID, f.URN, f.Message))
	}
	for _, f := range res.Findings {
		checked = append(checked, line(string(f.Level), f.Rule.ID, f.URN, f.Message))
	}
	slices.Sort(audited)
	slices.Sort(checked)
	return audited, checked
}

// requireAlike fails unless the audit of doc and the check of its model agree.
func requireAlike(t *testing.T, run *check.Run, doc *model.Document) []string {
	t.Helper()
	audited, checked := verdicts(t, run, doc)
	if !slices.Equal(audited, checked) {
		var diff []string
		for _, a := range audited {
			if !slices.Contains(checked, a) {
				diff = append(diff, "audit only: "+a)
			}
		}
		for _, c := range checked {
			if !slices.Contains(audited, c) {
				diff = append(diff, "check only: "+c)
			}
		}
		t.Fatalf("the audit and the check of its model disagree:\n%s", strings.Join(diff, "\n"))
	}
	return audited
}

func startRun(t testing.TB) *check.Run {
	t.Helper()
	now := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	run, err := check.Start(context.Background(), "audit", check.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// TestModelJudgedAsAuditedCloudAssetInventory is the example that broke: legacy-ops has a
// subscription whose settings the search results do not show, and the check of the model
// took it as a possible dead-letter source for every topic of every project, dropping
// EP003 on payments-dev's Cloud Functions subscription (whose topic only its own project
// can dead-letter to, as far as the audit read). Both now report it.
func TestModelJudgedAsAuditedCloudAssetInventory(t *testing.T) {
	inv, err := cai.Read(cai.Files{
		Resources: []string{filepath.Join("cai", "testdata", "resources.json")},
		IAM:       []string{filepath.Join("cai", "testdata", "iam.json")},
		Search:    []string{filepath.Join("cai", "testdata", "search.json")},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := requireAlike(t, startRun(t), model.Build(inv))
	want := "deny EP003 " + model.URNOf("payments-dev", model.TypeSubscription, "gcf-ledger-writer-europe-west1-ledger")
	if !slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, want+":") }) {
		t.Fatalf("no %s among\n%s", want, strings.Join(got, "\n"))
	}
}

// TestModelJudgedAsAuditedGeneratedExport holds the property on the generated Cloud
// Asset Inventory export of the benchmark (several projects, a pipeline in ten without a
// dead-letter policy).
func TestModelJudgedAsAuditedGeneratedExport(t *testing.T) {
	resources, iam := caiEstate(t, 3, 12)
	inv, err := cai.Read(cai.Files{Resources: []string{resources}, IAM: []string{iam}})
	if err != nil {
		t.Fatal(err)
	}
	if got := requireAlike(t, startRun(t), model.Build(inv)); len(got) == 0 {
		t.Fatal("no findings: the estate has subscriptions without a dead-letter policy")
	}
}

// FuzzModelJudgedAsAudited holds the property on estates generated from a seed, and that
// the model's scoping of unread links changes none of the audit's findings: projects
// that dead-letter to one another's topics or not, subscriptions whose settings were not
// read (their topic too, or not), DLQ labels, unread IAM and alert policies, and
// differences from a stack. The seed corpus is 64 estates, 16 under -short (make quick).
func FuzzModelJudgedAsAudited(f *testing.F) {
	seeds := uint64(64)
	if testing.Short() {
		seeds = 16
	}
	for seed := range seeds {
		f.Add(seed)
	}
	run := startRun(f)
	f.Fuzz(func(t *testing.T, seed uint64) {
		r := rand.New(rand.NewPCG(seed, seed>>1^0x9e3779b97f4a7c15))
		doc := model.Build(generatedEstate(r))
		for i := range r.IntN(3) { // what --stack found different, as eventpipeAudit.drift
			doc.Drift = append(doc.Drift, model.Drift{
				URN:     fmt.Sprintf("urn:pulumi:dev::eventpipe::%s::declared-%d", model.TypeSubscription, i),
				Type:    model.TypeSubscription,
				Message: fmt.Sprintf("deadLetterPolicy differs (%d)", i),
			})
		}
		audited := requireAlike(t, run, doc)
		// The scoping states the audit's own judgement and no other: without it, the audit
		// (judging group by group) finds the same.
		for i := range doc.Resources {
			doc.Resources[i].PossibleDependencies = nil
		}
		if unscoped, _ := verdicts(t, run, doc); !slices.Equal(audited, unscoped) {
			t.Fatalf("scoping the unread links changed the audit's findings:\n%s\nwithout it:\n%s", strings.Join(audited, "\n"), strings.Join(unscoped, "\n"))
		}
	})
}

// generatedEstate is an estate of one to four projects drawn from r.
func generatedEstate(r *rand.Rand) *inventory.Inventory {
	inv := &inventory.Inventory{Source: "generated"}
	n := 1 + r.IntN(4)
	topicsOf := make([][]string, n)
	for i := range n {
		id := fmt.Sprintf("proj-%d", i)
		p := inv.Project(id)
		if r.IntN(4) > 0 {
			p.Number = fmt.Sprintf("%012d", 100000000000+i)
		}
		for j := range r.IntN(4) {
			name := fmt.Sprintf("projects/%s/topics/t%d", id, j)
			p.Topics = append(p.Topics, &pubsubpb.Topic{Name: name})
			topicsOf[i] = append(topicsOf[i], name)
			if r.IntN(5) == 0 {
				p.AddGap(inventory.GapPolicy, name, "denied")
			} else {
				p.SetPolicy(name, agentPolicy(r, "roles/pubsub.publisher", n))
			}
		}
		if r.IntN(4) == 0 {
			p.AddGap(inventory.GapPolicy, inventory.ProjectName(id), "denied")
		} else {
			p.SetPolicy(inventory.ProjectName(id), &iampb.Policy{})
		}
		p.AlertPoliciesRead = r.IntN(3) > 0
		if !p.AlertPoliciesRead {
			p.AddGap(inventory.GapAlertPolicies, "", "denied")
		}
	}
	// A topic of project i, of another project now and then, or "" when there is none.
	pick := func(i int) string {
		if r.IntN(4) == 0 {
			i = r.IntN(n)
		}
		if len(topicsOf[i]) == 0 {
			return ""
		}
		return topicsOf[i][r.IntN(len(topicsOf[i]))]
	}
	backoff := &pubsubpb.RetryPolicy{MinimumBackoff: durationpb.New(10 * time.Second), MaximumBackoff: durationpb.New(600 * time.Second)}
	for i, p := range inv.Projects {
		for j := range r.IntN(5) {
			topic := pick(i)
			if topic == "" {
				continue
			}
			name := fmt.Sprintf("projects/%s/subscriptions/s%d", p.ID, j)
			s := &pubsubpb.Subscription{Name: name, Topic: topic, AckDeadlineSeconds: 60}
			if dlt := pick(i); dlt != "" && r.IntN(3) > 0 {
				s.DeadLetterPolicy = &pubsubpb.DeadLetterPolicy{DeadLetterTopic: dlt, MaxDeliveryAttempts: 5}
			}
			if r.IntN(2) == 0 {
				s.RetryPolicy = backoff
			}
			if r.IntN(2) == 0 {
				s.ExpirationPolicy = &pubsubpb.ExpirationPolicy{}
			}
			if r.IntN(5) == 0 {
				s.Labels = map[string]string{"eventpipe_role": "dlq"}
			}
			if r.IntN(4) == 0 { // a search result without its resource
				p.SetUnshown(name, true)
				if r.IntN(2) == 0 {
					s.Topic = ""
				}
			}
			p.Subscriptions = append(p.Subscriptions, s)
			if r.IntN(5) == 0 {
				p.AddGap(inventory.GapPolicy, name, "denied")
			} else {
				p.SetPolicy(name, agentPolicy(r, "roles/pubsub.subscriber", n))
			}
			if p.AlertPoliciesRead && r.IntN(2) == 0 {
				metric := []string{"dead_letter_message_count", "oldest_unacked_message_age"}[r.IntN(2)]
				p.AlertPolicies = append(p.AlertPolicies, &monitoringpb.AlertPolicy{
					Name: fmt.Sprintf("projects/%s/alertPolicies/%d", p.ID, j), DisplayName: metric,
					Conditions: []*monitoringpb.AlertPolicy_Condition{{
						DisplayName: metric,
						Condition: &monitoringpb.AlertPolicy_Condition_ConditionThreshold{ConditionThreshold: &monitoringpb.AlertPolicy_Condition_MetricThreshold{
							Filter: `metric.type="pubsub.googleapis.com/subscription/` + metric +
								`" AND resource.type="pubsub_subscription" AND resource.labels.subscription_id="` + inventory.ShortName(name) + `"`,
							Duration: durationpb.New(5 * time.Minute),
						}},
					}},
				})
			}
		}
	}
	return inv
}

// agentPolicy grants role to the Pub/Sub service agents of some of the n projects, or
// to nobody.
func agentPolicy(r *rand.Rand, role string, n int) *iampb.Policy {
	var members []string
	for i := range n {
		if r.IntN(3) == 0 {
			members = append(members, fmt.Sprintf("serviceAccount:service-%012d@gcp-sa-pubsub.iam.gserviceaccount.com", 100000000000+i))
		}
	}
	if len(members) == 0 {
		return &iampb.Policy{}
	}
	return &iampb.Policy{Bindings: []*iampb.Binding{{Role: role, Members: members}}}
}
