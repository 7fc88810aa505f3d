package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/render"
)

// TestProdAlertsUseDefaultThresholds renders the prod stack and checks, for
// every pipeline and subscription, a few alert policies against the default
// thresholds, their severity and their channel.
func TestProdAlertsUseDefaultThresholds(t *testing.T) {
	res, err := render.Render(context.Background(), render.Options{Stack: "prod", StackDir: "."})
	if err != nil {
		t.Fatal(err)
	}
	policies := map[string]map[string]any{}
	for _, s := range res.Plan.StepsOfType("gcp:monitoring/alertPolicy:AlertPolicy") {
		policies[s.NewState.Inputs["displayName"].(string)] = s.NewState.Inputs
	}
	const critical, warning = "projects/eventpipe-prod/notificationChannels/3000000000000000001", "projects/eventpipe-prod/notificationChannels/3000000000000000002"
	for _, p := range res.Stack.SortedPipelines() {
		if !p.Alerts.Enabled() {
			t.Errorf("prod pipeline %s has no alerts", p.Name)
			continue
		}
		for _, sub := range p.SortedSubscriptions() {
			scope := fmt.Sprintf("[eventpipe prod] %s/%s: ", p.Name, sub.Name)
			want := map[string][]string{
				"dead-lettered messages waiting (warning)":  {"WARNING", warning, "holds messages for 5m"},
				"dead-lettered messages waiting (critical)": {"CRITICAL", critical, "holds messages for 15m", "> 10 messages dead-lettered from " + sub.Name + " in 10m"},
				"oldest unacked message is old (warning)":   {"WARNING", warning, "older than 5m"},
				"oldest unacked message is old (critical)":  {"CRITICAL", critical, "older than 15m"},
				"backlog keeps growing (critical)":          {"CRITICAL", critical, "rising for 30m"},
			}
			if sub.Push() {
				want["push 5xx ratio high (warning)"] = []string{"WARNING", warning, "> 1% for 5m"}
				want["push 5xx ratio high (critical)"] = []string{"CRITICAL", critical, "> 5% for 5m"}
				want["push 4xx ratio high (warning)"] = []string{"WARNING", warning, "> 0.1% for 10m"}
				want["push 4xx ratio high (critical)"] = []string{"CRITICAL", critical, "> 1% for 10m"}
				want["ack-ratio error budget burning (critical)"] = []string{"CRITICAL", critical, "14.4x over 1h and 5m; 6x over 6h and 30m"}
			}
			for title, w := range want {
				checkPolicy(t, policies, scope+title, w)
			}
		}
		scope := fmt.Sprintf("[eventpipe prod] %s: ", p.Name)
		checkPolicy(t, policies, scope+"Firestore transient errors (warning)", []string{"WARNING", warning, "≥ 5/min for 10m"})
		checkPolicy(t, policies, scope+"Firestore transient errors (critical)", []string{"CRITICAL", critical, "≥ 20/min for 10m"})
		checkPolicy(t, policies, scope+"Firestore permission denied (critical)", []string{"CRITICAL", critical, "PERMISSION_DENIED"})
		checkPolicy(t, policies, scope+"Lease acquisition failures (warning)", []string{"WARNING", warning, "> 10 per 1h"})
		checkPolicy(t, policies, scope+"Lease heartbeat failures (warning)", []string{"WARNING", warning, "> 5 per 1h"})
		checkPolicy(t, policies, scope+"Stale leases found by the sweeper (warning)", []string{"WARNING", warning, "> 3 per 1h"})
	}
}

// checkPolicy finds the policy named name and checks its severity, its only
// channel and that its conditions' display names mention each of want[2:].
func checkPolicy(t *testing.T, policies map[string]map[string]any, name string, want []string) {
	t.Helper()
	p, ok := policies[name]
	if !ok {
		t.Errorf("policy %q not rendered", name)
		return
	}
	if p["severity"] != want[0] {
		t.Errorf("%s: severity %v, want %s", name, p["severity"], want[0])
	}
	if ch := fmt.Sprint(p["notificationChannels"]); ch != "["+want[1]+"]" {
		t.Errorf("%s: channels %s, want [%s]", name, ch, want[1])
	}
	var conds []string
	for _, c := range p["conditions"].([]any) {
		conds = append(conds, c.(map[string]any)["displayName"].(string))
	}
	text := strings.Join(conds, " | ")
	for _, w := range want[2:] {
		if !strings.Contains(text, w) {
			t.Errorf("%s: conditions %q lack %q", name, text, w)
		}
	}
}
