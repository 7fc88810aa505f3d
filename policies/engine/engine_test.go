package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/policies"
	"github.com/eventpipe/eventpipe/policies/plan"
	"github.com/eventpipe/eventpipe/policies/plantest"
)

// newEngine builds an engine with the core rule files. The alert-coverage rules
// (policies/alerts*.rego, EP1xx) are left out: these fixtures carry no alert policies, and
// the alert rules are tested by their own files and by the rendered-stack tests.
func newEngine(t testing.TB, cfg map[string]any) *Engine {
	t.Helper()
	all, err := policies.Modules()
	if err != nil {
		t.Fatal(err)
	}
	mods := map[string]string{}
	for name, src := range all {
		if !strings.HasPrefix(name, "policies/alerts") {
			mods[name] = src
		}
	}
	e, err := New(context.Background(), Options{Modules: mods, Package: policies.Package, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "plan", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func evaluate(t testing.TB, e *Engine, data []byte) []Finding {
	t.Helper()
	p, err := plan.Parse(data, "plan.json.txt")
	if err != nil {
		t.Fatal(err)
	}
	fs, err := e.Evaluate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

func ids(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Level)+":"+f.Rule.ID)
	}
	sort.Strings(out)
	return out
}

func TestRulesHaveMetadata(t *testing.T) {
	mods, err := policies.Modules()
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(context.Background(), Options{Modules: mods, Package: policies.Package})
	if err != nil {
		t.Fatal(err)
	}
	rules := e.Rules()
	if len(rules) < 15 {
		t.Fatalf("%d rules loaded", len(rules))
	}
	for _, r := range rules {
		if r.ID == "" || r.Title == "" || r.Fix == "" || r.Description == "" || r.Severity == "" {
			t.Errorf("rule %s: incomplete metadata %+v", r.Name, r)
		}
		if r.Stack != strings.HasPrefix(r.Name, "stack_") {
			t.Errorf("rule %s: stack = %v", r.Name, r.Stack)
		}
	}
}

func TestHealthyPlansPass(t *testing.T) {
	e := newEngine(t, nil)
	for _, name := range []string{"preview_show_sames.json.txt", "preview_changes_only.json.txt", "stack_export.json.txt", "terraform_plan.json.txt"} {
		t.Run(name, func(t *testing.T) {
			if fs := evaluate(t, e, fixture(t, name)); len(fs) != 0 {
				for _, f := range fs {
					t.Errorf("%s %s %s: %s", f.Level, f.Rule.ID, f.URN, f.Message)
				}
			}
		})
	}
}

const (
	sub   = "gcp:pubsub/subscription:Subscription"
	topic = "gcp:pubsub/topic:Topic"
)

// TestMutationsFailWithTheirRule breaks the healthy preview one way at a time; each break
// must produce exactly its rule's finding and nothing else.
func TestMutationsFailWithTheirRule(t *testing.T) {
	e := newEngine(t, nil)
	for _, tt := range mutations() {
		t.Run(tt.name, func(t *testing.T) {
			p := plantest.Parse(t, fixture(t, "preview_show_sames.json.txt"))
			tt.mutate(t, p)
			fs := evaluate(t, e, p.JSON(t))
			if got := ids(fs); !reflect.DeepEqual(got, tt.want) {
				for _, f := range fs {
					t.Logf("%s %s %s: %s", f.Level, f.Rule.ID, f.URN, f.Message)
				}
				t.Fatalf("findings %v, want %v", got, tt.want)
			}
			if fs[0].URN == "" || fs[0].Message == "" || strings.HasPrefix(fs[0].Message, "urn:") {
				t.Errorf("finding not attributed to its resource: %+v", fs[0])
			}
		})
	}
}

// mutation breaks the healthy preview (preview_show_sames.json.txt) one way; want are
// the findings ("level:ID") it must cause.
type mutation struct {
	name   string
	mutate func(t testing.TB, p plantest.Doc)
	want   []string
}

// mutations are one break per rule of the healthy preview.
func mutations() []mutation {
	srcTopic := "urn:pulumi:prod::eventpipe::eventpipe:components:Pipeline$gcp:pubsub/topic:Topic::orders"
	return []mutation{
		{"no dead-letter policy", func(t testing.TB, p plantest.Doc) {
			delete(p.Inputs(t, sub, "orders-push"), "deadLetterPolicy")
		}, []string{"deny:EP001"}},
		{"3 delivery attempts", func(t testing.TB, p plantest.Doc) {
			p.Inputs(t, sub, "orders-push")["deadLetterPolicy"].(map[string]any)["maxDeliveryAttempts"] = 3
		}, []string{"deny:EP002"}},
		{"no retry policy", func(t testing.TB, p plantest.Doc) {
			delete(p.Inputs(t, sub, "orders-push"), "retryPolicy")
		}, []string{"deny:EP003"}},
		{"DLQ is the source topic", func(t testing.TB, p plantest.Doc) {
			p.State(t, sub, "orders-push")["propertyDependencies"].(map[string]any)["deadLetterPolicy"] = []any{srcTopic}
		}, []string{"deny:EP004"}},
		{"DLQ subscription deleted", func(t testing.TB, p plantest.Doc) {
			p.Drop(t, sub, "orders-push.dlq-sub")
		}, []string{"deny:EP005"}},
		{"publisher grant deleted", func(t testing.TB, p plantest.Doc) {
			p.Drop(t, "gcp:pubsub/topicIAMMember:TopicIAMMember", "orders-push.dlq-publisher")
		}, []string{"deny:EP006"}},
		{"subscriber grant deleted", func(t testing.TB, p plantest.Doc) {
			p.Drop(t, "gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember", "orders-push-dlq-subscriber")
		}, []string{"deny:EP007"}},
		{"push without OIDC", func(t testing.TB, p plantest.Doc) {
			delete(p.Inputs(t, sub, "orders-push")["pushConfig"].(map[string]any), "oidcToken")
		}, []string{"deny:EP008"}},
		{"http push endpoint", func(t testing.TB, p plantest.Doc) {
			p.Inputs(t, sub, "orders-push")["pushConfig"].(map[string]any)["pushEndpoint"] = "http://orders-consumer.internal/pubsub/push"
		}, []string{"deny:EP009"}},
		{"allUsers invoker", func(t testing.TB, p plantest.Doc) {
			p.Inputs(t, "gcp:cloudrunv2/serviceIamMember:ServiceIamMember", "orders-consumer-invoker")["member"] = "allUsers"
		}, []string{"deny:EP010"}},
		{"expiring subscription in prod", func(t testing.TB, p plantest.Doc) {
			p.Inputs(t, sub, "orders-push")["expirationPolicy"] = map[string]any{"ttl": "2678400s"}
		}, []string{"deny:EP012"}},
		{"expiring subscription in dev", func(t testing.TB, p plantest.Doc) {
			in := p.Inputs(t, sub, "orders-push")
			in["expirationPolicy"] = map[string]any{"ttl": "2678400s"}
			in["labels"].(map[string]any)["eventpipe_env"] = "dev"
		}, []string{"warn:EP011"}},
		{"short DLQ retention", func(t testing.TB, p plantest.Doc) {
			p.Inputs(t, sub, "orders-push.dlq-sub")["messageRetentionDuration"] = "86400s"
		}, []string{"warn:EP013"}},
		{"TTL policy deleted", func(t testing.TB, p plantest.Doc) {
			p.Drop(t, "gcp:firestore/field:Field", "eventpipe_leases-ttl")
		}, []string{"warn:EP014"}},
		{"explicit opt-out", func(t testing.TB, p plantest.Doc) {
			in := p.Inputs(t, sub, "orders-push")
			delete(in, "deadLetterPolicy")
			in["labels"].(map[string]any)["eventpipe_dlq_opt_out"] = "true"
			in["labels"].(map[string]any)["eventpipe_dlq_opt_out_reason"] = "source_is_replayable"
		}, []string{"warn:EP015"}},
	}
}

func TestIncompletePreviewDowngradesAbsenceVerdicts(t *testing.T) {
	e := newEngine(t, nil)
	p := plantest.Parse(t, fixture(t, "preview_changes_only.json.txt"))
	delete(p.Inputs(t, sub, "orders-push"), "deadLetterPolicy")
	fs := evaluate(t, e, p.JSON(t))
	if got := ids(fs); !reflect.DeepEqual(got, []string{"warn:EP001"}) {
		t.Fatalf("findings %v, want the EP001 deny downgraded to a warning", got)
	}
	if fs[0].Note != IncompleteNote {
		t.Errorf("note = %q", fs[0].Note)
	}
	// The same mutation on the complete preview stays a deny.
	full := plantest.Parse(t, fixture(t, "preview_show_sames.json.txt"))
	delete(full.Inputs(t, sub, "orders-push"), "deadLetterPolicy")
	if got := ids(evaluate(t, e, full.JSON(t))); !reflect.DeepEqual(got, []string{"deny:EP001"}) {
		t.Fatalf("complete preview: %v", got)
	}
}

func TestUnknownTopicsGiveNoVerdict(t *testing.T) {
	e := newEngine(t, nil)
	p := plantest.Parse(t, fixture(t, "preview_show_sames.json.txt"))
	// Without propertyDependencies the subscription's links are unknown: no rule may fire.
	delete(p.State(t, sub, "orders-push"), "propertyDependencies")
	if fs := evaluate(t, e, p.JSON(t)); len(fs) != 0 {
		t.Fatalf("unknown links produced findings: %v", ids(fs))
	}
}

func TestThresholdsFromConfig(t *testing.T) {
	e := newEngine(t, map[string]any{"deny_dead_letter_attempts_out_of_range": map[string]any{"min": 6, "max": 20}})
	if got := ids(evaluate(t, e, fixture(t, "preview_show_sames.json.txt"))); !reflect.DeepEqual(got, []string{"deny:EP002"}) {
		t.Fatalf("findings %v, want EP002 for 5 attempts below the configured 6", got)
	}
	strict := newEngine(t, map[string]any{"environment": "prod"})
	tf := fixture(t, "terraform_plan.json.txt")
	var doc map[string]any
	if err := json.Unmarshal(tf, &doc); err != nil {
		t.Fatal(err)
	}
	for _, rc := range doc["resource_changes"].([]any) {
		r := rc.(map[string]any)
		if r["address"] == "google_pubsub_subscription.push" {
			r["change"].(map[string]any)["after"].(map[string]any)["expiration_policy"] = []any{}
		}
	}
	b, _ := json.Marshal(doc)
	if got := ids(evaluate(t, strict, b)); !reflect.DeepEqual(got, []string{"deny:EP012"}) {
		t.Fatalf("terraform subscription without expiration_policy in prod: %v", got)
	}
	if got := ids(evaluate(t, newEngine(t, nil), b)); !reflect.DeepEqual(got, []string{"warn:EP011"}) {
		t.Fatalf("without an environment: %v", got)
	}
}

func TestMetadataIsEnforced(t *testing.T) {
	base := "package eventpipe\n\nimport rego.v1\n\n"
	tests := []struct {
		name, src, wantErr string
	}{
		{"missing fix", base + "# METADATA\n# title: T\n# description: D\n# custom:\n#   id: X1\n#   severity: low\ndeny_x contains \"m\" if false\n", "lacks custom.fix"},
		{"no metadata", base + "warn_y contains \"m\" if false\n", "lacks custom.fix, custom.id, custom.severity, description, title"},
		{"bad severity", base + "# METADATA\n# title: T\n# description: D\n# custom:\n#   id: X1\n#   severity: huge\n#   fix: F\ndeny_x contains \"m\" if false\n", `severity "huge"`},
		{"duplicate id", base + "# METADATA\n# title: T\n# description: D\n# custom:\n#   id: X1\n#   severity: low\n#   fix: F\ndeny_x contains \"m\" if false\n\n# METADATA\n# title: T\n# description: D\n# custom:\n#   id: X1\n#   severity: low\n#   fix: F\ndeny_y contains \"m\" if false\n", "share the id X1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(context.Background(), Options{Modules: map[string]string{"x.rego": tt.src}, Package: "eventpipe"})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
			}
		})
	}
}

func TestAttribute(t *testing.T) {
	r := &plan.Resource{URN: "urn:pulumi:dev::p::t::odd: name"}
	byURN := map[string]*plan.Resource{r.URN: r}
	got, text := attribute("urn:pulumi:dev::p::t::odd: name: it broke: badly", byURN)
	if got != r || text != "it broke: badly" {
		t.Fatalf("attribute = %v, %q", got, text)
	}
	got, text = attribute("no urn: here", byURN)
	if got != nil || text != "no urn: here" {
		t.Fatalf("attribute = %v, %q", got, text)
	}
}

// TestResourceRulesAreTypeGuarded: every core resource rule starts with an input.type
// guard, so resources of other types skip the resource rules; an unguarded rule turns the
// shortcut off rather than hiding findings.
func TestResourceRulesAreTypeGuarded(t *testing.T) {
	e := newEngine(t, nil)
	if e.resourceTypes == nil || !e.resourceTypes["gcp:pubsub/subscription:Subscription"] || !e.resourceTypes["gcp:cloudrunv2/serviceIamMember:ServiceIamMember"] {
		t.Fatalf("guarded types = %v", e.resourceTypes)
	}
	src := "package eventpipe\n\nimport rego.v1\n\n# METADATA\n# title: T\n# description: D\n# custom:\n#   id: X1\n#   severity: low\n#   fix: F\nwarn_any contains \"seen\" if input.name\n"
	u, err := New(context.Background(), Options{Modules: map[string]string{"x.rego": src}, Package: "eventpipe"})
	if err != nil {
		t.Fatal(err)
	}
	if u.resourceTypes != nil {
		t.Fatalf("unguarded rule still filtered by %v", u.resourceTypes)
	}
	fs := evaluate(t, u, fixture(t, "preview_show_sames.json.txt"))
	if len(fs) != 12 {
		t.Fatalf("unguarded rule saw %d resources, want all 12", len(fs))
	}
}

// TestSortOrder: Sort orders by resource, level (deny first), rule id and message, and
// keeps findings equal in all four in their order, as a stable sort with that ordering
// does; checked on shuffled findings with every kind of tie.
func TestSortOrder(t *testing.T) {
	var fs []Finding
	for _, urn := range []string{"urn:b", "urn:a", ""} {
		for _, level := range []Level{Warn, Deny} {
			for _, id := range []string{"EP002", "EP001"} {
				for _, msg := range []string{"y", "x", "x"} {
					fs = append(fs, Finding{URN: urn, Level: level, Rule: Rule{ID: id}, Message: msg})
				}
			}
		}
	}
	for i := range fs {
		fs[i].Name = fmt.Sprint(i) // tells equal findings apart
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		rng.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
		want := append([]Finding(nil), fs...)
		sort.SliceStable(want, func(i, j int) bool {
			a, b := want[i], want[j]
			if a.URN != b.URN {
				return a.URN < b.URN
			}
			if a.Level != b.Level {
				return a.Level == Deny
			}
			if a.Rule.ID != b.Rule.ID {
				return a.Rule.ID < b.Rule.ID
			}
			return a.Message < b.Message
		})
		got := append([]Finding(nil), fs...)
		Sort(got)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: Sort gave %v, want %v", round, got, want)
		}
		if f := got[0]; f.Level != Deny || f.URN != "" || f.Rule.ID != "EP001" || f.Message != "x" {
			t.Fatalf("round %d: first finding %+v, want the deny EP001 x on the empty URN", round, f)
		}
	}
}
