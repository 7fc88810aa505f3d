package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/iam/apiv1/iampb"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/eventpipe/eventpipe/audit/live"
	"github.com/eventpipe/eventpipe/internal/cli"
	"github.com/eventpipe/eventpipe/internal/testing/livetest"
	"github.com/eventpipe/eventpipe/render"
)

const (
	shop  = "shop"
	agent = "serviceAccount:service-123456789012@gcp-sa-pubsub.iam.gserviceaccount.com"
)

func topicName(id string) string { return "projects/" + shop + "/topics/" + id }
func subName(id string) string   { return "projects/" + shop + "/subscriptions/" + id }

// topology is a shop project: topic orders read by orders-sub, which pushes to an HTTPS
// endpoint with OIDC, retries with backoff, never expires and dead-letters to orders.dlq,
// read by orders.dlq-sub; the service agent may publish to the DLQ topic and acknowledge
// on orders-sub. Each field describes one setting a test breaks.
type topology struct {
	sub        *pubsubpb.Subscription
	dlqSub     *pubsubpb.Subscription
	dlqTopic   bool
	publisher  bool
	subscriber bool
	extra      []*pubsubpb.Subscription
}

func cleanTopology() topology {
	return topology{
		sub: &pubsubpb.Subscription{
			Name: subName("orders-sub"), Topic: topicName("orders"), AckDeadlineSeconds: 60,
			DeadLetterPolicy: &pubsubpb.DeadLetterPolicy{DeadLetterTopic: topicName("orders.dlq"), MaxDeliveryAttempts: 10},
			RetryPolicy:      &pubsubpb.RetryPolicy{MinimumBackoff: durationpb.New(10 * time.Second), MaximumBackoff: durationpb.New(600 * time.Second)},
			ExpirationPolicy: &pubsubpb.ExpirationPolicy{},
			PushConfig: &pubsubpb.PushConfig{
				PushEndpoint:         "https://orders-consumer-abc123-ew.a.run.app/pubsub/push",
				AuthenticationMethod: &pubsubpb.PushConfig_OidcToken_{OidcToken: &pubsubpb.PushConfig_OidcToken{ServiceAccountEmail: "push@shop.iam.gserviceaccount.com"}},
			},
		},
		dlqSub: &pubsubpb.Subscription{
			Name: subName("orders.dlq-sub"), Topic: topicName("orders.dlq"), AckDeadlineSeconds: 60,
			RetryPolicy:              &pubsubpb.RetryPolicy{MinimumBackoff: durationpb.New(10 * time.Second), MaximumBackoff: durationpb.New(600 * time.Second)},
			ExpirationPolicy:         &pubsubpb.ExpirationPolicy{},
			MessageRetentionDuration: durationpb.New(7 * 24 * time.Hour),
		},
		dlqTopic: true, publisher: true, subscriber: true,
	}
}

// create builds the topology on a fresh fake, points PUBSUB_EMULATOR_HOST at it, and
// returns the dial of an audit of it: the Pub/Sub clients the emulator setting makes, and
// a Resource Manager that knows the project's number and its (empty) IAM policy.
func (tp topology) create(t *testing.T) func(context.Context) (*live.Clients, error) {
	t.Helper()
	srv := livetest.Start(t)
	t.Setenv(live.EmulatorEnv, srv.Addr)
	projects := livetest.ResourceManager(t, map[string]livetest.Project{shop: {Number: "123456789012"}})
	srv.Topic(t, topicName("orders"), nil)
	if tp.dlqTopic {
		var grants []*iampb.Binding
		if tp.publisher {
			grants = append(grants, livetest.Grant("roles/pubsub.publisher", agent))
		}
		srv.Topic(t, topicName("orders.dlq"), nil, grants...)
	}
	var grants []*iampb.Binding
	if tp.subscriber {
		grants = append(grants, livetest.Grant("roles/pubsub.subscriber", agent, "serviceAccount:consumer@shop.iam.gserviceaccount.com"))
	}
	srv.Subscription(t, tp.sub, grants...)
	if tp.dlqSub != nil {
		srv.Subscription(t, tp.dlqSub)
	}
	for _, s := range tp.extra {
		srv.Subscription(t, s)
	}
	return func(ctx context.Context) (*live.Clients, error) {
		c, err := live.Dial(ctx)
		if err != nil {
			return nil, err
		}
		c.Projects = projects
		return c, nil
	}
}

// runAuditCLI runs `eventpipe audit args…` with the live clients dial makes, through
// cli.Main as the binary does: a failure's human line, then the log lines it held back.
func runAuditCLI(t *testing.T, dial func(context.Context) (*live.Clients, error), args ...string) checkResult {
	t.Helper()
	cmd := newAuditCmdWith(dial)
	cli.Prepare(cmd)
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	code := cli.Main(context.Background(), cmd, args, &errOut)
	return checkResult{stdout: out.String(), stderr: errOut.String(), code: code}
}

// TestAuditPubSubTopologies runs `eventpipe audit` on pstest topologies: the clean one
// passes, and each topology that breaks one rule yields exactly that rule's finding.
func TestAuditPubSubTopologies(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*topology)
		args   []string
		want   string // level:rule, "" for none
		code   int
	}{
		{name: "clean", mutate: func(*topology) {}, code: 0},
		{name: "clean in a strict environment", mutate: func(*topology) {}, args: []string{"--env", "prod"}, code: 0},
		{name: "subscription without a dead-letter policy", want: "deny:EP001", code: 1, mutate: func(tp *topology) {
			s := cleanTopology().dlqSub
			s.Name, s.Topic = subName("audit-log"), topicName("orders")
			tp.extra = append(tp.extra, s)
		}},
		{name: "too many delivery attempts", want: "deny:EP002", code: 1, mutate: func(tp *topology) {
			tp.sub.DeadLetterPolicy.MaxDeliveryAttempts = 101 // past Pub/Sub's 5-100, the default range (the fake takes it)
		}},
		{name: "no retry policy", want: "deny:EP003", code: 1, mutate: func(tp *topology) { tp.sub.RetryPolicy = nil }},
		{name: "dead-letters into its own topic", want: "deny:EP004", code: 1, mutate: func(tp *topology) {
			tp.sub.DeadLetterPolicy.DeadLetterTopic = topicName("orders")
			tp.dlqTopic, tp.dlqSub = false, nil
		}},
		{name: "dead-letter topic nobody reads", want: "deny:EP005", code: 1, mutate: func(tp *topology) { tp.dlqSub = nil }},
		{name: "service agent cannot publish to the DLQ", want: "deny:EP006", code: 1, mutate: func(tp *topology) { tp.publisher = false }},
		{name: "service agent cannot acknowledge", want: "deny:EP007", code: 1, mutate: func(tp *topology) { tp.subscriber = false }},
		{name: "push without OIDC", want: "deny:EP008", code: 1, mutate: func(tp *topology) { tp.sub.PushConfig.AuthenticationMethod = nil }},
		{name: "push over plain HTTP", want: "deny:EP009", code: 1, mutate: func(tp *topology) {
			tp.sub.PushConfig.PushEndpoint = "http://orders.example.com/push"
		}},
		{name: "expires when idle", want: "warn:EP011", code: 0, mutate: func(tp *topology) {
			tp.sub.ExpirationPolicy = &pubsubpb.ExpirationPolicy{Ttl: durationpb.New(31 * 24 * time.Hour)}
		}},
		{name: "expires when idle in a strict environment", args: []string{"--env", "prod"}, want: "deny:EP012", code: 1, mutate: func(tp *topology) {
			tp.sub.ExpirationPolicy = nil
		}},
		{name: "dead letters kept one day", want: "warn:EP013", code: 0, mutate: func(tp *topology) {
			tp.dlqSub.MessageRetentionDuration = durationpb.New(24 * time.Hour)
		}},
		{name: "1st gen function trigger pushing without OIDC", code: 0, mutate: func(tp *topology) {
			tp.sub.PushConfig = &pubsubpb.PushConfig{PushEndpoint: "https://europe-west1-shop.cloudfunctions.net/orders-writer"}
		}},
		{name: "BigQuery subscription without a retry policy", code: 0, mutate: func(tp *topology) {
			tp.sub.PushConfig, tp.sub.RetryPolicy = nil, nil
			tp.sub.BigqueryConfig = &pubsubpb.BigQueryConfig{Table: "shop.orders.events", WriteMetadata: true}
		}},
		{name: "dead-letter opt-out", want: "warn:EP015", code: 0, mutate: func(tp *topology) {
			s := cleanTopology().dlqSub
			s.Name, s.Topic = subName("audit-log"), topicName("orders")
			s.Labels = map[string]string{"eventpipe_dlq_opt_out": "true", "eventpipe_dlq_opt_out_reason": "replayed from BigQuery"}
			tp.extra = append(tp.extra, s)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tp := cleanTopology()
			tc.mutate(&tp)
			dial := tp.create(t)
			res := runAuditCLI(t, dial, append([]string{"--project", shop, "-o", "json"}, tc.args...)...)
			if res.code != tc.code {
				t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", res.code, tc.code, res.stdout, res.stderr)
			}
			got := decode(t, res).ids()
			var want []string
			if tc.want != "" {
				want = []string{tc.want}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("findings %v, want %v\nstdout: %s", got, want, res.stdout)
			}
			if n := len(decode(t, res).Findings); tc.want != "" && n != 1 {
				t.Fatalf("%d findings, want one: %s", n, res.stdout)
			}
		})
	}
}

// TestAuditOwnershipAndSummary checks that a finding names who manages the resource and
// where to fix it, and that the summaries are written beside the machine format.
func TestAuditOwnershipAndSummary(t *testing.T) {
	tp := cleanTopology()
	eventarc := cleanTopology().dlqSub
	eventarc.Name, eventarc.Topic = subName("eventarc-europe-west1-orders-trigger-123-sub-456"), topicName("orders")
	eventarc.Labels = map[string]string{"goog-eventarc": ""}
	tp.extra = append(tp.extra, eventarc)
	dial := tp.create(t)
	dir := t.TempDir()
	md, html, modelFile := filepath.Join(dir, "audit.md"), filepath.Join(dir, "audit.html"), filepath.Join(dir, "model.json")
	res := runAuditCLI(t, dial, "--project", shop, "--summary", md, "--summary", html, "--model", modelFile)
	if res.code != 1 {
		t.Fatalf("exit code %d, want 1\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
	}
	for _, want := range []string{
		"EP001", "eventarc-europe-west1-orders-trigger-123-sub-456",
		"managed by Eventarc (label goog-eventarc)",
		"Eventarc trigger orders-trigger (europe-west1)",
		"gcloud pubsub subscriptions update eventarc-europe-west1-orders-trigger-123-sub-456 --dead-letter-topic=projects/shop/topics/eventarc-europe-west1-orders-trigger-123-sub-456.dlq",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("text report lacks %q:\n%s", want, res.stdout)
		}
	}
	mdText, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| shop | 3 (1 push, 2 pull, 0 BigQuery, 0 Cloud Storage) | 1 |", "Eventarc trigger orders-trigger", "alert-policies"} {
		if !strings.Contains(string(mdText), want) {
			t.Errorf("Markdown summary lacks %q:\n%s", want, mdText)
		}
	}
	htmlText, err := os.ReadFile(html)
	if err != nil || !strings.Contains(string(htmlText), "<td>shop</td>") {
		t.Errorf("HTML summary (err %v) lacks the project row:\n%s", err, htmlText)
	}
	modelText, err := os.ReadFile(modelFile)
	if err != nil || !strings.Contains(string(modelText), `"type": "gcp:pubsub/topicIAMPolicy:TopicIAMPolicy"`) {
		t.Errorf("model (err %v) lacks the topic IAM policies:\n%.2000s", err, modelText)
	}
}

// deployStack creates what stack declares in its project on a fresh fake and returns the
// dial of an audit of it.
func deployStack(t *testing.T, stack, stackDir string) (*livetest.Server, *render.Result, func(context.Context) (*live.Clients, error)) {
	t.Helper()
	res, err := render.Render(context.Background(), render.Options{Stack: stack, StackDir: stackDir})
	if err != nil {
		t.Fatal(err)
	}
	var resources []livetest.Resource
	for _, s := range res.Plan.Steps {
		resources = append(resources, livetest.Resource{Type: s.NewState.Type, Inputs: s.NewState.Inputs})
	}
	srv := livetest.Start(t)
	t.Setenv(live.EmulatorEnv, srv.Addr)
	policy := srv.Deploy(t, res.Stack.Project, resources)
	projects := livetest.ResourceManager(t, map[string]livetest.Project{res.Stack.Project: {Number: res.Stack.ProjectNumber, Policy: policy}})
	return srv, res, func(ctx context.Context) (*live.Clients, error) {
		c, err := live.Dial(ctx)
		if err != nil {
			return nil, err
		}
		c.Projects = projects
		return c, nil
	}
}

// TestAuditStackDrift deploys the dev and prod stacks to the fake, audits each against
// its stack (clean), then changes what a person changes by hand and expects the drift
// reported on the declared resource, pointing at the stack config line that declared it.
func TestAuditStackDrift(t *testing.T) {
	// pstest rejects a subscription retention above 7 days (Pub/Sub accepts up to 31), so
	// prod is deployed with its 14-day DLQ retention cut to 7 days.
	prodDir := t.TempDir()
	prodConfig, err := os.ReadFile(filepath.Join("..", "..", "stacks", "Pulumi.prod.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cut := strings.Replace(string(prodConfig), "dlqRetention: 14d", "dlqRetention: 7d", 1)
	if cut == string(prodConfig) {
		t.Fatal("stacks/Pulumi.prod.yaml no longer sets dlqRetention: 14d")
	}
	if err := os.WriteFile(filepath.Join(prodDir, "Pulumi.prod.yaml"), []byte(cut), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, stack := range []struct{ name, dir, number, attempts string }{
		{"dev", "", "100000000001", "5"},
		{"prod", prodDir, "100000000003", "10"},
	} {
		prefix := "urn:pulumi:" + stack.name + "::eventpipe::eventpipe:index:Pipeline$eventpipe:index:Subscription$"
		cases := []struct {
			name   string
			change func(t *testing.T, srv *livetest.Server, project string)
			urn    string // the declared resource the drift is reported on ("" for none)
			text   string
			rules  []string // the other findings the change causes
		}{
			{name: "as declared", change: func(*testing.T, *livetest.Server, string) {}},
			{
				name: "dead-letter policy changed by hand",
				change: func(t *testing.T, srv *livetest.Server, project string) {
					name := "projects/" + project + "/subscriptions/system-events-materializer"
					sub, err := srv.Subscriptions.GetSubscription(context.Background(), &pubsubpb.GetSubscriptionRequest{Subscription: name})
					if err != nil {
						t.Fatal(err)
					}
					sub.DeadLetterPolicy.MaxDeliveryAttempts = 7
					if _, err := srv.Subscriptions.UpdateSubscription(context.Background(), &pubsubpb.UpdateSubscriptionRequest{
						Subscription: sub, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"dead_letter_policy"}},
					}); err != nil {
						t.Fatal(err)
					}
				},
				urn:  prefix + "gcp:pubsub/subscription:Subscription::system-events-materializer",
				text: "deadLetterPolicy.maxDeliveryAttempts is 7 live, " + stack.attempts + " in the stack",
			},
			{
				name: "service agent grant removed by hand",
				change: func(t *testing.T, srv *livetest.Server, project string) {
					srv.Policy(t, "projects/"+project+"/topics/system-events-materializer.dlq")
				},
				urn:   prefix + "gcp:pubsub/topicIAMMember:TopicIAMMember::system-events-materializer-dlq-agent-publisher",
				text:  "roles/pubsub.publisher serviceAccount:service-" + stack.number + "@gcp-sa-pubsub.iam.gserviceaccount.com is declared in the stack but does not exist live",
				rules: []string{"EP006"},
			},
		}
		for _, tc := range cases {
			t.Run(stack.name+"/"+tc.name, func(t *testing.T) {
				srv, res, dial := deployStack(t, stack.name, stack.dir)
				tc.change(t, srv, res.Stack.Project)
				args := []string{"--stack", stack.name, "-o", "json"}
				if stack.dir != "" {
					args = append(args, "--stack-dir", stack.dir)
				}
				out := runAuditCLI(t, dial, args...)
				got := decode(t, out)
				var drift, rules []string
				for _, f := range got.Findings {
					if f.RuleID == "EP200" {
						drift = append(drift, f.URN)
						if !strings.Contains(f.Message, tc.text) {
							t.Errorf("drift message %q lacks %q", f.Message, tc.text)
						}
						wantFile := filepath.Join("..", "..", "stacks", "Pulumi."+stack.name+".yaml")
						if stack.dir != "" {
							wd, err := os.Getwd()
							if err != nil {
								t.Fatal(err)
							}
							if wantFile, err = filepath.Rel(wd, filepath.Join(stack.dir, "Pulumi."+stack.name+".yaml")); err != nil {
								t.Fatal(err)
							}
						}
						if f.Location == nil || f.Location.File != wantFile || f.Location.Line == 0 {
							t.Errorf("drift location %+v, want a line of stacks/Pulumi.%s.yaml", f.Location, stack.name)
						}
					} else {
						rules = append(rules, f.RuleID)
					}
				}
				if !slices.Equal(rules, tc.rules) {
					t.Errorf("rule findings %v, want %v\n%s", rules, tc.rules, out.stdout)
				}
				var want []string
				if tc.urn != "" {
					want = []string{tc.urn}
				}
				if !slices.Equal(drift, want) {
					t.Fatalf("drift on %v, want %v\n%s\n%s", drift, want, out.stdout, out.stderr)
				}
				if wantCode := min(len(want), 1); out.code != wantCode {
					t.Fatalf("exit code %d, want %d", out.code, wantCode)
				}
			})
		}
	}
}

// TestAuditCloudAssetInventory audits an organisation from its Cloud Asset Inventory
// exports (three projects: one only in search results) and checks each finding, the
// owner it names, and the summary.
func TestAuditCloudAssetInventory(t *testing.T) {
	data := filepath.Join("..", "..", "audit", "cai", "testdata")
	md := filepath.Join(t.TempDir(), "org.md")
	res := runCheckCLI(t, "", "audit", "-o", "json", "--summary", md,
		"--cai-resources", filepath.Join(data, "resources.json"),
		"--cai-iam", filepath.Join(data, "iam.json"),
		"--cai-search", filepath.Join(data, "search.json"))
	if res.code != 1 {
		t.Fatalf("exit code %d, want 1\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	var out struct {
		Findings []struct {
			RuleID   string          `json:"ruleId"`
			Message  string          `json:"message"`
			URN      string          `json:"urn"`
			Level    string          `json:"level"`
			Note     string          `json:"note"`
			Fix      string          `json:"fix"`
			Location json.RawMessage `json:"location"`
		} `json:"findings"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatal(err)
	}
	for _, f := range out.Findings {
		// The exports hold no line per resource: a finding cites none rather than a line of
		// the in-memory model under the three files' names.
		if len(f.Location) > 0 && string(f.Location) != "null" {
			t.Errorf("%s %s cites %s", f.RuleID, f.URN, f.Location)
		}
	}
	var got []string
	for _, f := range out.Findings {
		// The owner is the note's "managed by" part, after any doubt the rule states.
		_, owned, _ := strings.Cut(f.Note, "managed by ")
		owner, _, _ := strings.Cut(owned, " (")
		got = append(got, f.RuleID+" "+strings.TrimPrefix(f.URN, "urn:pulumi:live::")+" "+owner)
	}
	sort.Strings(got)
	// legacy-ops' audit-sink has no dead-letter policy of its own; it reads the topic
	// nightly-report-sub may dead-letter to (the search result does not show that one's
	// settings), so it may be a DLQ subscription: it is neither denied nor passed but
	// warned, the finding naming the value it could not see (issue 33: no deny rests on a
	// link that is only possible; issue 22: no subscription without a policy passes on
	// what is not shown). The 1st gen function's subscription pushes to Google's own push handler, which
	// authenticates itself (no EP008); the BigQuery subscription needs no retry policy.
	want := []string{
		"EP001 legacy-ops::gcp:pubsub/subscription:Subscription::audit-sink no infrastructure code",
		"EP001 payments-dev::gcp:pubsub/subscription:Subscription::gcf-ledger-writer-europe-west1-ledger Cloud Functions",
		"EP001 payments-dev::gcp:pubsub/subscription:Subscription::ledger-to-bq no infrastructure code",
		"EP001 shop-prod::gcp:pubsub/subscription:Subscription::eventarc-europe-west1-invoice-trigger-412-sub-931 Cloud Functions",
		"EP003 payments-dev::gcp:pubsub/subscription:Subscription::gcf-ledger-writer-europe-west1-ledger Cloud Functions",
		"EP010 shop-prod::gcp:cloudrunv2/serviceIamPolicy:ServiceIamPolicy::invoice Cloud Functions",
		"EP011 payments-dev::gcp:pubsub/subscription:Subscription::gcf-ledger-writer-europe-west1-ledger Cloud Functions",
		"EP015 payments-dev::gcp:pubsub/subscription:Subscription::ledger-archive Pulumi",
		"EP104 payments-dev::gcp:pubsub/subscription:Subscription::gcf-ledger-writer-europe-west1-ledger Cloud Functions",
		"EP104 payments-dev::gcp:pubsub/subscription:Subscription::ledger-archive Pulumi",
		"EP104 payments-dev::gcp:pubsub/subscription:Subscription::ledger-to-bq no infrastructure code",
		"EP104 shop-prod::gcp:pubsub/subscription:Subscription::eventarc-europe-west1-invoice-trigger-412-sub-931 Cloud Functions",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, f := range out.Findings {
		if f.RuleID != "EP001" || !strings.HasSuffix(f.URN, "::audit-sink") {
			continue
		}
		if f.Level != "warn" || !strings.Contains(f.Note, "the document cannot show: that rests on deadLetterPolicy of Subscription 'nightly-report-sub'") {
			t.Errorf("audit-sink's EP001 is %q, not a warning naming what it could not see: %s", f.Level, f.Note)
		}
	}
	summary, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"| legacy-ops | 2 (0 push, 2 pull, 0 BigQuery, 0 Cloud Storage) | 1 (1 not shown) |",
		"| payments-dev | 3 (1 push, 0 pull, 1 BigQuery, 1 Cloud Storage) | 3 |",
		"| shop-prod | 3 (2 push, 1 pull, 0 BigQuery, 0 Cloud Storage) | 1 |",
	} {
		if !strings.Contains(string(summary), line) {
			t.Errorf("summary lacks %q:\n%s", line, summary)
		}
	}
}

// TestAuditConfigurationFormatsAndExitCodes checks that the audit takes the check's
// configuration file (thresholds, waivers, expired waivers), writes every report format,
// and exits as the check does.
func TestAuditConfigurationFormatsAndExitCodes(t *testing.T) {
	tp := cleanTopology()
	tp.sub.DeadLetterPolicy.MaxDeliveryAttempts = 20 // EP002 once a configuration narrows the range to 5-10
	tp.sub.RetryPolicy = nil                         // EP003
	dial := tp.create(t)
	dir := t.TempDir()
	config := func(text string) string {
		path := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const narrowed = "thresholds:\n  deny_dead_letter_attempts_out_of_range: {max: 10}\n"
	cases := []struct {
		name   string
		config string
		args   []string
		want   []string
		code   int
	}{
		// 20 attempts are within what the stack config accepts, the rule's default range.
		{name: "defaults", want: []string{"deny:EP003"}, code: 1},
		{name: "threshold narrowed", config: narrowed, want: []string{"deny:EP002", "deny:EP003"}, code: 1},
		{name: "threshold narrowed, still above", config: "thresholds:\n  deny_dead_letter_attempts_out_of_range: {max: 25}\n", want: []string{"deny:EP003"}, code: 1},
		{name: "waived", code: 0, want: []string{"deny:EP002", "deny:EP003"},
			config: narrowed + "waivers:\n  - {rule: EP002, urn: 'urn:pulumi:live::shop::*::orders-sub', reason: raised for the backfill, expires: '2999-01-01'}\n" +
				"  - {rule: EP003, urn: 'urn:pulumi:live::shop::*', reason: consumer backs off itself, expires: '2999-01-01'}\n"},
		{name: "expired waiver", code: 1, want: []string{"deny:EP000", "deny:EP002", "deny:EP003"},
			config: narrowed + "waivers:\n  - {rule: EP002, urn: 'urn:pulumi:live::shop::*', reason: old, expires: '2001-01-01'}\n"},
		{name: "unknown rule in a waiver", code: 2, config: "waivers:\n  - {rule: EP999, urn: '*', reason: x, expires: '2999-01-01'}\n"},
		{name: "drift waiver without a stack", code: 1, want: []string{"deny:EP002", "deny:EP003"},
			config: narrowed + "waivers:\n  - {rule: EP200, urn: 'urn:pulumi:prod::*', reason: hand-tuned in prod, expires: '2999-01-01'}\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"--project", shop, "-o", "json"}
			if tc.config != "" {
				args = append(args, "--check-config", config(tc.config))
			}
			res := runAuditCLI(t, dial, args...)
			if res.code != tc.code {
				t.Fatalf("exit code %d, want %d\n%s\n%s", res.code, tc.code, res.stdout, res.stderr)
			}
			if tc.code == 2 {
				return
			}
			if got := decode(t, res).ids(); !slices.Equal(got, tc.want) {
				t.Fatalf("findings %v, want %v", got, tc.want)
			}
		})
	}
	// Every format names the tool as the audit, not the check.
	for format, markers := range map[string][]string{
		"sarif":  {`"version": "2.1.0"`},
		"junit":  {"<testsuites", `name="eventpipe audit live shop"`},
		"github": {"::error", "eventpipe audit live shop: 2 denies"},
		"text":   {"eventpipe audit: live shop", "DENY   EP002"},
	} {
		res := runAuditCLI(t, dial, "--project", shop, "-o", format, "--config", config(narrowed))
		for _, marker := range markers {
			if res.code != 1 || !strings.Contains(res.stdout, marker) {
				t.Errorf("-o %s: exit %d, output lacks %q:\n%s", format, res.code, marker, res.stdout)
			}
		}
		if !strings.Contains(res.stderr, `"msg":"audit finished"`) || strings.Contains(res.stdout+res.stderr, "eventpipe check") {
			t.Errorf("-o %s: the log or report names another command:\n%s\n%s", format, res.stdout, res.stderr)
		}
	}
}

func TestAuditUsageErrors(t *testing.T) {
	cases := [][]string{
		{},
		{"--project", "p", "-o", "yaml"},
		{"--project", "p", "--summary", "out.pdf"},
		{"--project", "p", "--cai-resources", "x.json"},
		{"--cai-resources", filepath.Join(t.TempDir(), "absent.json")},
		{"--stack", "nosuchstack"},
	}
	for _, args := range cases {
		res := runAuditCLI(t, func(context.Context) (*live.Clients, error) {
			t.Fatalf("%v: dialled Google", args)
			return nil, nil
		}, args...)
		if res.code != 2 || res.stderr == "" {
			t.Errorf("%v: exit %d, stderr %q", args, res.code, res.stderr)
		}
	}
}

func TestAuditListRules(t *testing.T) {
	res := runCheckCLI(t, "", "audit", "--list-rules")
	if res.code != 0 || !strings.Contains(res.stdout, "EP200") || !strings.Contains(res.stdout, "EP001") || !strings.Contains(res.stdout, "EP000") {
		t.Fatalf("exit %d:\n%s", res.code, res.stdout)
	}
}
