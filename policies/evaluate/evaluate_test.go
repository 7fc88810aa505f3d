package evaluate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/benchgen"
	"github.com/eventpipe/eventpipe/internal/testing/plantest"
	"github.com/eventpipe/eventpipe/policies"
	"github.com/eventpipe/eventpipe/policies/plan"
)

// allRules is an engine with every rule file and configuration cfg.
// The rule files are compiled once for the test binary (embeddedRules);
// TestEnginesShareCompiledRules holds that this judges as New does.
func allRules(t testing.TB, cfg map[string]any) *Engine {
	t.Helper()
	c, err := embeddedRules()
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.Engine(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// embeddedRules are policies.Modules compiled once for the test binary.
var embeddedRules = sync.OnceValues(func() (*Compiled, error) {
	mods, err := policies.Modules()
	if err != nil {
		return nil, err
	}
	return Compile(mods, policies.Package)
})

// fixture reads a document of policies/plan/testdata (they end in .txt so that
// `opa test policies/` does not load them as data).
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "plan", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func check(t testing.TB, e *Engine, data []byte) *Result {
	t.Helper()
	p, err := plan.Parse(data, "plan.json")
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Check(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// ids are "level:ID" of the findings, sorted, the alert coverage rules (EP101-EP104) left
// out unless keepAlerts: the fixtures carry no alert policies.
func ids(fs []Finding, keepAlerts bool) []string {
	var out []string
	for _, f := range fs {
		if keepAlerts || !strings.HasPrefix(f.Rule.ID, "EP10") {
			out = append(out, string(f.Level)+":"+f.Rule.ID)
		}
	}
	sort.Strings(out)
	return out
}

func TestRulesHaveMetadata(t *testing.T) {
	rules := allRules(t, nil).Rules()
	if len(rules) < 23 {
		t.Fatalf("%d rules", len(rules))
	}
	byID := map[string]Rule{}
	for _, r := range rules {
		if r.ID == "" || r.Title == "" || r.Description == "" || r.Fix == "" || !slices.Contains(Severities, r.Severity) {
			t.Errorf("rule %s lacks metadata: %+v", r.Name, r)
		}
		byID[r.ID] = r
	}
	for id, want := range map[string]struct {
		level         Level
		stack, needed bool
	}{
		"EP000": {Deny, false, false}, "EP001": {Deny, true, true}, "EP002": {Deny, false, false},
		"EP011": {Warn, false, false}, "EP013": {Warn, true, false}, "EP016": {Deny, false, false},
		"EP017": {Warn, false, false}, "EP104": {Warn, true, true}, "EP900": {Deny, false, false},
	} {
		r := byID[id]
		if r.Level != want.level || r.Stack != want.stack || r.NeedsCompleteStack != want.needed {
			t.Errorf("%s: level %s stack %v needs complete stack %v, want %+v", id, r.Level, r.Stack, r.NeedsCompleteStack, want)
		}
	}
}

func TestHealthyPlansPass(t *testing.T) {
	e := allRules(t, nil)
	for _, name := range []string{"preview_show_sames.json.txt", "preview_changes_only.json.txt", "stack_export.json.txt", "terraform_plan.json.txt"} {
		t.Run(name, func(t *testing.T) {
			res := check(t, e, fixture(t, name))
			if got := ids(res.Findings, false); len(got) != 0 {
				t.Errorf("findings %v", got)
			}
			if res.Resources < 4 || res.Format == "" {
				t.Errorf("format %q, %d resources", res.Format, res.Resources)
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
	e := allRules(t, nil)
	for _, tt := range mutations() {
		t.Run(tt.name, func(t *testing.T) {
			p := plantest.Parse(t, fixture(t, "preview_show_sames.json.txt"))
			tt.mutate(t, p)
			fs := check(t, e, p.JSON(t)).Findings
			if got := ids(fs, false); !reflect.DeepEqual(got, tt.want) {
				for _, f := range fs {
					t.Logf("%s %s %s: %s", f.Level, f.Rule.ID, f.URN, f.Message)
				}
				t.Fatalf("findings %v, want %v", got, tt.want)
			}
			f := fs[0]
			if f.URN == "" || f.Name == "" || f.Type == "" || f.Message == "" || strings.HasPrefix(f.Message, f.Rule.ID) || f.Location == nil || f.Location.Line < 1 {
				t.Errorf("finding not attributed to its resource: %+v", f)
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
		{"subscription replaced", func(t testing.TB, p plantest.Doc) {
			p.SetOp(t, sub, "orders-push", "replace")
		}, []string{"deny:EP016"}},
	}
}

func TestIncompletePreviewDowngradesAbsenceVerdicts(t *testing.T) {
	e := allRules(t, nil)
	p := plantest.Parse(t, fixture(t, "preview_changes_only.json.txt"))
	delete(p.Inputs(t, sub, "orders-push"), "deadLetterPolicy")
	res := check(t, e, p.JSON(t))
	if got := ids(res.Findings, false); !reflect.DeepEqual(got, []string{"warn:EP001"}) {
		t.Fatalf("findings %v, want the EP001 deny downgraded to a warning", got)
	}
	if res.Complete || res.Findings[0].Note != IncompleteNote || strings.Contains(res.Findings[0].Message, IncompleteNote) {
		t.Errorf("complete %v, finding %+v", res.Complete, res.Findings[0])
	}
	// The same mutation on the complete preview stays a deny.
	full := plantest.Parse(t, fixture(t, "preview_show_sames.json.txt"))
	delete(full.Inputs(t, sub, "orders-push"), "deadLetterPolicy")
	if got := ids(check(t, e, full.JSON(t)).Findings, false); !reflect.DeepEqual(got, []string{"deny:EP001"}) {
		t.Fatalf("complete preview: %v", got)
	}
}

func TestUnknownLinksGiveNoVerdict(t *testing.T) {
	e := allRules(t, nil)
	p := plantest.Parse(t, fixture(t, "preview_show_sames.json.txt"))
	// Without propertyDependencies the subscription's links are unknown: no rule may fire.
	delete(p.State(t, sub, "orders-push"), "propertyDependencies")
	if got := ids(check(t, e, p.JSON(t)).Findings, false); len(got) != 0 {
		t.Fatalf("unknown links produced findings: %v", got)
	}
}

func TestThresholdsAndEnvironmentFromConfig(t *testing.T) {
	e := allRules(t, map[string]any{"deny_dead_letter_attempts_out_of_range": map[string]any{"min": 6, "max": 20}})
	if got := ids(check(t, e, fixture(t, "preview_show_sames.json.txt")).Findings, false); !reflect.DeepEqual(got, []string{"deny:EP002"}) {
		t.Fatalf("findings %v, want EP002 for 5 attempts below the configured 6", got)
	}
	var doc map[string]any
	if err := json.Unmarshal(fixture(t, "terraform_plan.json.txt"), &doc); err != nil {
		t.Fatal(err)
	}
	for _, rc := range doc["resource_changes"].([]any) {
		if r := rc.(map[string]any); r["address"] == "google_pubsub_subscription.push" {
			r["change"].(map[string]any)["after"].(map[string]any)["expiration_policy"] = []any{}
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(check(t, allRules(t, map[string]any{"environment": "prod"}), b).Findings, false); !reflect.DeepEqual(got, []string{"deny:EP012"}) {
		t.Fatalf("terraform subscription without expiration_policy in prod: %v", got)
	}
	if got := ids(check(t, allRules(t, nil), b).Findings, false); !reflect.DeepEqual(got, []string{"warn:EP011"}) {
		t.Fatalf("without an environment: %v", got)
	}
}

func TestUnusableDocumentsAreErrors(t *testing.T) {
	e := allRules(t, nil)
	for name, want := range map[string]string{
		"foreign_k8s_list.json.txt":  "match no known format",
		"terraform_state.json.txt":   "Terraform state",
		"preview_bad_step.json.txt":  `steps[0]: a preview step needs "op"`,
		"truncated_preview.json.txt": "",
	} {
		t.Run(name, func(t *testing.T) {
			p, err := plan.Parse(fixture(t, name), name)
			if want == "" {
				if !errors.Is(err, plan.ErrUnrecognised) {
					t.Fatalf("Parse = %v, want ErrUnrecognised", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Evaluate(context.Background(), p)
			if !errors.Is(err, ErrUnusableDocument) || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), name) {
				t.Fatalf("Evaluate = %v, want ErrUnusableDocument naming %q", err, want)
			}
		})
	}
}

// TestFormatsGiveTheSameVerdicts: the generated plan as a preview, a stack export and a
// Terraform plan gets the same findings on the same resources.
func TestFormatsGiveTheSameVerdicts(t *testing.T) {
	e := allRules(t, nil)
	verdicts := func(data []byte) []string {
		var out []string
		for _, f := range check(t, e, data).Findings {
			out = append(out, f.Rule.ID+" "+strings.ReplaceAll(f.Name, ".", "_"))
		}
		sort.Strings(out)
		return out
	}
	preview, err := benchgen.Generate(100)
	if err != nil {
		t.Fatal(err)
	}
	want := verdicts(preview)
	if len(want) != 5+50+35 {
		t.Fatalf("preview findings %d: %v", len(want), want)
	}
	for name, generate := range map[string]func(int) ([]byte, error){"export": benchgen.GenerateExport, "terraform": benchgen.GenerateTerraform} {
		data, err := generate(100)
		if err != nil {
			t.Fatal(err)
		}
		got := verdicts(data)
		for i := range got {
			// A Terraform address names the resource after its type.
			got[i] = strings.NewReplacer("google_pubsub_subscription_", "", "google_pubsub_topic_", "").Replace(got[i])
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s findings differ from the preview's:\n%v\nwant\n%v", name, got, want)
		}
	}
}

func TestMetadataIsEnforced(t *testing.T) {
	base := "package eventpipe.rules\n\nimport rego.v1\n\n"
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

// TestSortOrder: Sort orders by resource, level (deny first), rule id and message, and
// keeps findings equal in all four in their order; checked on shuffled findings with every
// kind of tie.
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
	}
}
