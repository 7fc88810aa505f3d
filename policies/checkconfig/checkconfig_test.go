package checkconfig

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/policies/engine"
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
		{"unknown field", "thresold: {}\n", "field thresold not found"},
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
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Data(dev) = %v, want %v", got, want)
	}
	if got := c.Data("prod")["deny_dead_letter_attempts_out_of_range"].(map[string]any)["max"]; got != 10 {
		t.Fatalf("Data(prod) max = %v", got)
	}
	if got := (*Config)(nil).Data(""); len(got) != 0 {
		t.Fatalf("nil config data = %v", got)
	}
}

func TestValidate(t *testing.T) {
	rules := []engine.Rule{{Name: "deny_dead_letter_attempts_out_of_range", ID: "EP002"}, {Name: "x", ID: "EP005"}, {Name: "y", ID: "EP009"}}
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

func TestApplyWaivers(t *testing.T) {
	c, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	ep5 := engine.Rule{ID: "EP005", Level: engine.Deny}
	findings := []engine.Finding{
		{Rule: ep5, Level: engine.Deny, URN: "urn:pulumi:dev::eventpipe::gcp:pubsub/subscription:Subscription::legacy-orders"},
		{Rule: ep5, Level: engine.Deny, URN: "urn:pulumi:prod::eventpipe::gcp:pubsub/subscription:Subscription::legacy-orders"},
	}
	today := time.Date(2026, 11, 21, 15, 0, 0, 0, time.UTC)
	out := c.Apply(findings, today)
	if len(out) != 3 {
		t.Fatalf("%d findings, want 2 plus the expired waiver", len(out))
	}
	var waived, expired int
	for _, f := range out {
		switch {
		case f.Rule.ID == "EP000":
			expired++
			if !strings.Contains(f.Message, "EP009") || !strings.Contains(f.Message, "expired on 2026-06-30") || f.Level != engine.Deny {
				t.Errorf("expired waiver finding: %+v", f)
			}
		case f.Waiver != nil:
			waived++
			if !strings.Contains(f.URN, ":dev:") || f.Waiver.Reason == "" {
				t.Errorf("wrong finding waived: %+v", f)
			}
		}
	}
	if waived != 1 || expired != 1 {
		t.Fatalf("waived %d expired %d, want 1 and 1", waived, expired)
	}
	// On its expiry date a waiver still holds; the day after it does not.
	last := time.Date(2027, 1, 31, 23, 0, 0, 0, time.UTC)
	if f := byRule(t, c.Apply(findings[:1], last), "EP005"); f.Waiver == nil {
		t.Error("waiver not applied on its expiry date")
	}
	if f := byRule(t, c.Apply(findings[:1], last.Add(2*time.Hour)), "EP005"); f.Waiver != nil {
		t.Error("waiver applied after its expiry date")
	}
}

func byRule(t *testing.T, fs []engine.Finding, id string) engine.Finding {
	t.Helper()
	for _, f := range fs {
		if f.Rule.ID == id {
			return f
		}
	}
	t.Fatalf("no %s finding in %v", id, fs)
	return engine.Finding{}
}
