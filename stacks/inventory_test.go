package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/render"
)

// updateEnv regenerates the inventories instead of comparing against them:
// EVENTPIPE_UPDATE_INVENTORY=1 go test ./stacks/ — then review the diff.
const updateEnv = "EVENTPIPE_UPDATE_INVENTORY"

// inventory is the selection of planned values a reviewer cares about per
// environment; any change to them shows up as a diff of testdata/<env>.inventory.json.
type inventory struct {
	ResourceCounts       map[string]int            `json:"resourceCounts"`
	NotificationChannels []string                  `json:"notificationChannels"`
	Subscriptions        map[string]map[string]any `json:"subscriptions"`
	Consumers            map[string]map[string]any `json:"consumers"`
	Grants               map[string][]string       `json:"grants"`
	TTLFields            []string                  `json:"ttlFields"`
	Labels               map[string]map[string]any `json:"labels"`
	// AlertPolicies: display name -> severity, channels and each condition's
	// display name (which states its threshold and hold time).
	AlertPolicies map[string][]string `json:"alertPolicies"`
	// Protected are the resources Pulumi refuses to delete or replace.
	Protected []string `json:"protected"`
}

func TestStackInventories(t *testing.T) {
	for _, stack := range []string{"dev", "staging", "prod"} {
		t.Run(stack, func(t *testing.T) {
			res, err := render.Render(context.Background(), render.Options{Stack: stack, StackDir: "."})
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(takeInventory(res), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", stack+".inventory.json")
			if os.Getenv(updateEnv) != "" {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run %s=1 go test ./stacks/ to create it)", err, updateEnv)
			}
			if string(got) != string(want) {
				t.Errorf("%s changed; if intended, run %s=1 go test ./stacks/ and review the diff:\n%s", path, updateEnv, lineDiff(string(want), string(got)))
			}
		})
	}
}

func takeInventory(res *render.Result) inventory {
	inv := inventory{
		ResourceCounts:       map[string]int{},
		NotificationChannels: res.Stack.NotificationChannels,
		Subscriptions:        map[string]map[string]any{},
		Consumers:            map[string]map[string]any{},
		Grants:               map[string][]string{},
		Labels:               map[string]map[string]any{},
		AlertPolicies:        map[string][]string{},
		Protected:            []string{},
	}
	for _, s := range res.Plan.Steps {
		in := s.NewState.Inputs
		inv.ResourceCounts[s.NewState.Type]++
		switch s.NewState.Type {
		case "gcp:pubsub/subscription:Subscription":
			name := in["name"].(string)
			inv.Subscriptions[name] = pick(in, "topic", "ackDeadlineSeconds", "deadLetterPolicy", "retryPolicy", "expirationPolicy",
				"messageRetentionDuration", "enableExactlyOnceDelivery", "enableMessageOrdering", "pushConfig", "filter", "retainAckedMessages")
			inv.Labels[name] = in["labels"].(map[string]any)
		case "gcp:cloudrunv2/service:Service":
			tmpl := in["template"].(map[string]any)
			c := tmpl["containers"].([]any)[0].(map[string]any)
			inv.Consumers[in["name"].(string)] = map[string]any{
				"image": c["image"], "timeout": tmpl["timeout"], "scaling": tmpl["scaling"], "concurrency": tmpl["maxInstanceRequestConcurrency"],
				"ingress": in["ingress"], "resources": c["resources"], "envs": c["envs"], "serviceAccount": tmpl["serviceAccount"],
				"deletionProtection": in["deletionProtection"], "executionEnvironment": tmpl["executionEnvironment"], "description": in["description"],
			}
		case "gcp:monitoring/alertPolicy:AlertPolicy":
			row := []string{in["severity"].(string), fmt.Sprint(in["notificationChannels"])}
			for _, c := range in["conditions"].([]any) {
				row = append(row, c.(map[string]any)["displayName"].(string))
			}
			inv.AlertPolicies[in["displayName"].(string)] = row
		case "gcp:firestore/field:Field":
			inv.TTLFields = append(inv.TTLFields, in["collection"].(string)+"."+in["field"].(string))
		}
		if s.NewState.Protect {
			inv.Protected = append(inv.Protected, s.NewState.Type+" "+fmt.Sprint(in["name"]))
		}
		if role, ok := in["role"].(string); ok {
			target := ""
			for _, k := range []string{"topic", "subscription", "serviceAccountId", "name", "project"} {
				if v, ok := in[k].(string); ok && target == "" {
					target = v
				}
			}
			inv.Grants[role] = append(inv.Grants[role], in["member"].(string)+" on "+target)
		}
	}
	return inv
}

func pick(m map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// lineDiff lists lines only in want (-) or only in got (+), in order.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	inW, inG := map[string]int{}, map[string]int{}
	for _, l := range w {
		inW[l]++
	}
	for _, l := range g {
		inG[l]++
	}
	var b strings.Builder
	for _, l := range w {
		if inG[l] == 0 {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range g {
		if inW[l] == 0 {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}
