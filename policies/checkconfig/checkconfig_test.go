package checkconfig

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/eventpipe/eventpipe/internal/testing/ruletest"
	"github.com/eventpipe/eventpipe/policies"
	"github.com/eventpipe/eventpipe/policies/evaluate"
	"github.com/eventpipe/eventpipe/policies/plan"
	"github.com/eventpipe/eventpipe/spec"
)

const sample = `
thresholds:
  deny_dead_letter_attempts_out_of_range: {min: 5, max: 10}
environments:
  dev:
    thresholds:
      deny_dead_letter_attempts_out_of_range: {max: 20}
waivers:
  - rule: EP005
    urn: "urn:pulumi:dev::eventpipe::*::legacy-*"
    reason: legacy topic drained by the nightly batch job
    expires: 2027-01-31
  - rule: EP009
    urn: "urn:pulumi:dev::eventpipe::gcp:pubsub/subscription:Subscription::old"
    reason: internal endpoint until the migration
    expires: 2026-06-30
`

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"unknown field", "thresold: {}\n", `line 1: unknown key "thresold" at the top level (keys: thresholds, environments, waivers); did you mean "thresholds"?`},
		// The walk-through's typo: a Go type name leaked, and no suggestion.
		{"singular", "threshold: {}\n", `unknown key "threshold" at the top level (keys: thresholds, environments, waivers); did you mean "thresholds"?`},
		{"environment key", "environments: {prod: {threshold: {}}}\n", `unknown key "threshold" in environments.<env> (keys: thresholds); did you mean "thresholds"?`},
		{"waiver key", "waivers: [{rule: EP001, urn: x, reason: r, expiry: 2027-01-01}]\n", `unknown key "expiry" in a waiver (keys: rule, urn, reason, expires); did you mean "expires"?`},
		{"far from any key", "owners: [a]\n", `unknown key "owners" at the top level (keys: thresholds, environments, waivers)`},
		{"no reason", "waivers: [{rule: EP001, urn: x, expires: 2027-01-01}]\n", "waivers[0].reason is empty"},
		{"bad date", "waivers: [{rule: EP001, urn: x, reason: r, expires: soon}]\n", `waivers[0].expires "soon" is not a date`},
		{"no rule", "waivers: [{urn: x, reason: r, expires: 2027-01-01}]\n", "waivers[0].rule is empty"},
		{"no urn", "waivers: [{rule: EP001, reason: r, expires: 2027-01-01}]\n", "waivers[0].urn is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "checkconfig.") || strings.Contains(err.Error(), "not found in type") {
				t.Errorf("err = %v: names a Go type", err)
			}
		})
	}
}

func TestDataMergesEnvironment(t *testing.T) {
	c, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	got := c.Data("dev")
	want := map[string]any{
		"deny_dead_letter_attempts_out_of_range": map[string]any{"min": 5, "max": 20},
		"environment":                            "dev",
		"waivers":                                c.Waivers,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Data(dev) = %v, want %v", got, want)
	}
	if got := c.Data("prod")["deny_dead_letter_attempts_out_of_range"].(map[string]any)["max"]; got != 10 {
		t.Fatalf("Data(prod) max = %v", got)
	}
	if got := (*Config)(nil).Data(""); !reflect.DeepEqual(got, map[string]any{"waivers": []Waiver{}}) {
		t.Fatalf("nil config data = %v", got)
	}
}

func TestValidate(t *testing.T) {
	rules := []evaluate.Rule{{Name: "deny_dead_letter_attempts_out_of_range", ID: "EP002"}, {Name: "x", ID: "EP005"}, {Name: "y", ID: "EP009"}}
	c, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(rules); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	bad, _ := Parse([]byte("environments: {prod: {thresholds: {deny_typo: {a: 1}}}}\n"))
	if err := bad.Validate(rules); err == nil || !strings.Contains(err.Error(), "environments.prod.thresholds.deny_typo: no rule has that name") {
		t.Fatalf("typo: %v", err)
	}
	bad, _ = Parse([]byte("waivers: [{rule: EP999, urn: x, reason: r, expires: 2027-01-01}]\n"))
	if err := bad.Validate(rules); err == nil || !strings.Contains(err.Error(), `"EP999": no rule has that id`) {
		t.Fatalf("unknown id: %v", err)
	}
}

// TestValidateSettings: a threshold must be a setting its rule reads, with a value it
// accepts, in every environment, as the Pulumi analyzer checks its policy configuration.
func TestValidateSettings(t *testing.T) {
	rules := []evaluate.Rule{{Name: "deny_dead_letter_attempts_out_of_range", ID: "EP002"}, {Name: "deny_retry_policy", ID: "EP003"}, {Name: "deny_push_without_oidc", ID: "EP008"}}
	for _, tt := range []struct {
		name, config, want string
	}{
		{"misspelt setting", "thresholds: {deny_retry_policy: {minimumBackoff: 10}}\n",
			`thresholds.deny_retry_policy: no setting "minimumBackoff"; its settings are maximumBackoffSeconds, minimumBackoffSeconds`},
		{"misspelt in an environment", "environments: {prod: {thresholds: {deny_dead_letter_attempts_out_of_range: {maximum: 10}}}}\n",
			`environments.prod.thresholds.deny_dead_letter_attempts_out_of_range: no setting "maximum"`},
		{"rule without settings", "thresholds: {deny_push_without_oidc: {audience: x}}\n", "it takes only enforcementLevel"},
		{"out of Pub/Sub's range", "thresholds: {deny_dead_letter_attempts_out_of_range: {max: 500}}\n", `setting "max" = 500`},
		{"wrong type", "thresholds: {deny_dead_letter_attempts_out_of_range: {min: five}}\n", `setting "min" = five`},
		{"range upside down", "thresholds: {deny_retry_policy: {minimumBackoffSeconds: 60, maximumBackoffSeconds: 30}}\n", "minimumBackoffSeconds 60 is above maximumBackoffSeconds 30"},
		// Each block in order alone, not together: the check said "allowed 50–20" and denied
		// every subscription.
		{"range upside down across blocks", "thresholds: {deny_dead_letter_attempts_out_of_range: {min: 50}}\nenvironments: {prod: {thresholds: {deny_dead_letter_attempts_out_of_range: {max: 20}}}}\n",
			"environments.prod.thresholds.deny_dead_letter_attempts_out_of_range (with thresholds.deny_dead_letter_attempts_out_of_range): min 50 is above max 20"},
		{"range upside down against an environment's", "thresholds: {deny_retry_policy: {maximumBackoffSeconds: 30}}\nenvironments: {dev: {thresholds: {deny_retry_policy: {minimumBackoffSeconds: 60}}}}\n",
			"minimumBackoffSeconds 60 is above maximumBackoffSeconds 30"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.config))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Validate(rules); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestRulesApplyTheWaivers: the waivers Data passes are the rules' config.waivers, with
// the same fields: a live waiver suppresses its findings (through its expiry date), an
// expired one fails the check as EP000, naming itself.
func TestRulesApplyTheWaivers(t *testing.T) {
	c, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	// Two subscriptions dead-letter to a topic nobody reads (EP005): one the first
	// waiver covers, one in another stack it does not.
	doc := map[string]any{"version": 3, "deployment": map[string]any{"resources": []any{
		map[string]any{"urn": "urn:pulumi:dev::eventpipe::gcp:pubsub/topic:Topic::dlq", "type": "gcp:pubsub/topic:Topic", "inputs": map[string]any{"name": "dlq"}},
		subscription("urn:pulumi:dev::eventpipe::gcp:pubsub/subscription:Subscription::legacy-orders"),
		subscription("urn:pulumi:prod::eventpipe::gcp:pubsub/subscription:Subscription::legacy-orders"),
	}}}
	p, err := plan.FromDocument(doc, "export.json")
	if err != nil {
		t.Fatal(err)
	}
	check := func(today time.Time) map[string]evaluate.Finding {
		t.Helper()
		data := c.Data("dev")
		data["today"] = today.Format(time.DateOnly)
		e := ruletest.Engine(t, data)
		fs, err := e.Evaluate(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]evaluate.Finding{}
		for _, f := range fs {
			if f.Rule.ID == "EP005" || f.Rule.ID == "EP000" {
				out[f.Rule.ID+" "+f.URN] = f
			}
		}
		return out
	}
	got := check(time.Date(2026, 11, 21, 15, 0, 0, 0, time.UTC))
	waived := got["EP005 urn:pulumi:dev::eventpipe::gcp:pubsub/subscription:Subscription::legacy-orders"]
	if w := waived.Waiver; w == nil || w.RuleID != "EP005" || w.Reason != "legacy topic drained by the nightly batch job" || w.Expires != "2027-01-31" {
		t.Errorf("covered finding: %+v", waived)
	}
	if f := got["EP005 urn:pulumi:prod::eventpipe::gcp:pubsub/subscription:Subscription::legacy-orders"]; f.Waiver != nil || f.Level != evaluate.Deny {
		t.Errorf("finding outside the pattern: %+v", f)
	}
	expired := got["EP000 urn:pulumi:dev::eventpipe::gcp:pubsub/subscription:Subscription::old"]
	if expired.Level != evaluate.Deny || !strings.Contains(expired.Message, "EP009") || !strings.Contains(expired.Message, "expired on 2026-06-30") {
		t.Errorf("expired waiver: %+v", expired)
	}
	if len(got) != 3 {
		t.Fatalf("findings %v, want the two EP005 and the expired waiver", got)
	}
	// On its expiry date a waiver still holds; the day after it does not.
	if f := check(time.Date(2027, 1, 31, 23, 0, 0, 0, time.UTC))["EP005 urn:pulumi:dev::eventpipe::gcp:pubsub/subscription:Subscription::legacy-orders"]; f.Waiver == nil {
		t.Error("waiver not applied on its expiry date")
	}
	if f := check(time.Date(2027, 2, 1, 1, 0, 0, 0, time.UTC))["EP005 urn:pulumi:dev::eventpipe::gcp:pubsub/subscription:Subscription::legacy-orders"]; f.Waiver != nil {
		t.Error("waiver applied after its expiry date")
	}
}

// subscription is a stack-export state of a subscription that dead-letters to topic dlq.
func subscription(urn string) map[string]any {
	var inputs map[string]any
	_ = json.Unmarshal([]byte(`{"name": "legacy-orders", "topic": "orders",
		"deadLetterPolicy": {"deadLetterTopic": "dlq", "maxDeliveryAttempts": 5},
		"retryPolicy": {"minimumBackoff": "10s", "maximumBackoff": "600s"}, "expirationPolicy": {"ttl": ""}}`), &inputs)
	return map[string]any{"urn": urn, "type": "gcp:pubsub/subscription:Subscription", "inputs": inputs}
}

// update makes TestSettingsFileCurrent write policies/lib_settings.rego (go generate).
var update = flag.Bool("update", false, "write policies/"+SettingsFile+" from RegoSettings")

// TestSettingsFileCurrent: policies/lib_settings.rego, which every runtime of the rules
// reads its default settings from (conftest and opa eval too), is what RegoSettings
// generates from spec.Bounds and the setting schemas now. With -update it writes the file.
func TestSettingsFileCurrent(t *testing.T) {
	want, err := RegoSettings()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join("..", SettingsFile)
	if *update {
		if err := os.WriteFile(file, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("policies/%s is stale: run go generate ./policies/checkconfig", SettingsFile)
	}
}

// TestEverySettingHasItsDefault: each setting a rule takes has a default of a value its
// schema accepts, and each check of a bound defaults to the end of the range the stack
// config accepts, so a stack that validates passes the check.
func TestEverySettingHasItsDefault(t *testing.T) {
	defaults := Defaults()
	for rule := range defaults {
		for key, v := range defaults[rule] {
			settings, err := asJSON(map[string]any{key: v})
			if err != nil {
				t.Fatal(err)
			}
			if err := CheckSettings(rule, rule, settings); err != nil {
				t.Errorf("default %s.%s = %v: %v", rule, key, v, err)
			}
		}
	}
	checks := 0
	for _, b := range spec.Bounds() {
		for _, c := range b.Checks {
			checks++
			end := b.Min
			if c.Upper {
				end = b.Max
			}
			if got, want := defaults[c.Rule][c.Setting], float64(end)/float64(c.Unit); fmt.Sprint(got) != fmt.Sprint(number(want)) {
				t.Errorf("%s.%s defaults to %v, want %v: the end of %s's range %s", c.Rule, c.Setting, got, want, b.Path, b.Allowed())
			}
		}
	}
	if checks == 0 {
		t.Fatal("no bound has a check")
	}
}

// TestRulesWriteDurationsAsTheConfigDoes: lib.duration_text, which the rules' messages
// state bounds with, writes a number of seconds as spec.FormatDuration writes it (the
// config's errors), for every whole number of seconds in a generated set: units, their
// multiples and neighbours.
func TestRulesWriteDurationsAsTheConfigDoes(t *testing.T) {
	mods, err := policies.Modules()
	if err != nil {
		t.Fatal(err)
	}
	opts := []func(*rego.Rego){rego.Query("x := [data.eventpipe.lib.duration_text(n) | some n in input]")}
	for name, src := range mods {
		opts = append(opts, rego.Module(name, src))
	}
	var secs []int64
	for _, unit := range []int64{1, 60, 3600, 86400} {
		for _, k := range []int64{1, 2, 7, 10, 14, 31, 59, 60, 61} {
			secs = append(secs, k*unit, k*unit+1, k*unit-1)
		}
	}
	rs, err := rego.New(append(opts, rego.Input(secs))...).Eval(context.Background())
	if err != nil || len(rs) != 1 {
		t.Fatalf("eval: %v %v", rs, err)
	}
	got := rs[0].Bindings["x"].([]any)
	for i, n := range secs {
		if want := spec.FormatDuration(time.Duration(n) * time.Second); got[i] != want {
			t.Errorf("duration_text(%d) = %v, spec.FormatDuration = %s", n, got[i], want)
		}
	}
}

// TestRuleDescriptionsStateTheDefaults: a rule's description (what --list-rules, SARIF and
// the README say) names, after "default", the value each of its bounded settings has in
// Defaults, so prose cannot keep a default the table has left.
func TestRuleDescriptionsStateTheDefaults(t *testing.T) {
	e := ruletest.Engine(t, nil)
	descriptions := map[string]string{}
	for _, r := range e.Rules() {
		descriptions[r.Name] = r.Description
	}
	stated := regexp.MustCompile(`default ([0-9.]+)(?:-([0-9.]+))?`)
	for _, b := range spec.Bounds() {
		for _, c := range b.Checks {
			want := fmt.Sprint(number(c.Default(b)))
			found := false
			for _, m := range stated.FindAllStringSubmatch(descriptions[c.Rule], -1) {
				found = found || m[1] == want || m[2] == want
			}
			if !found {
				t.Errorf("%s: the description states no default %s for %s: %q", c.Rule, want, c.Setting, descriptions[c.Rule])
			}
		}
	}
}

// TestOrderedSettingsJudgedAsTheRulesGetThem: for every pair of settings where one may not
// exceed the other, each at its schema's minimum, middle or maximum, written in the
// thresholds for every environment, in one environment's, or left at its default, Validate
// refuses the configuration exactly when the values the rules get in that environment (Data)
// are upside down.
func TestOrderedSettingsJudgedAsTheRulesGetThem(t *testing.T) {
	var rules []evaluate.Rule
	for rule := range orderedSettings {
		rules = append(rules, evaluate.Rule{Name: rule, ID: rule})
	}
	cases := 0
	for rule, pair := range orderedSettings {
		values := func(key string) []float64 {
			s := SettingSchemas(rule)[key]
			lo, hi := toFloat(s["minimum"]), toFloat(s["maximum"])
			return []float64{lo, math.Round((lo + hi) / 2), hi}
		}
		for _, low := range values(pair[0]) {
			for _, high := range values(pair[1]) {
				for _, where := range [][2]string{{"", ""}, {"all", ""}, {"", "all"}, {"all", "env"}, {"env", "all"}, {"env", "env"}, {"env", ""}, {"", "env"}} {
					cases++
					all, env := map[string]any{}, map[string]any{}
					got := map[string]float64{pair[0]: toFloat(SettingSchemas(rule)[pair[0]]["default"]), pair[1]: toFloat(SettingSchemas(rule)[pair[1]]["default"])}
					for i, v := range []float64{low, high} {
						switch where[i] {
						case "all":
							all[pair[i]], got[pair[i]] = v, v
						case "env":
							env[pair[i]], got[pair[i]] = v, v
						}
					}
					c := &Config{Thresholds: map[string]map[string]any{rule: all}, Environments: map[string]Environment{"prod": {Thresholds: map[string]map[string]any{rule: env}}}}
					err := c.Validate(rules)
					if upside := got[pair[0]] > got[pair[1]]; upside != (err != nil) {
						t.Errorf("%s: thresholds %v, environments.prod %v: Validate = %v; in prod the rules get %v", rule, all, env, err, got)
					}
				}
			}
		}
	}
	t.Logf("%d configurations", cases)
}

func toFloat(v any) float64 {
	switch n := v.(type) {
	case int64:
		return float64(n)
	case float64:
		return n
	}
	panic(fmt.Sprintf("not a number: %#v", v))
}
