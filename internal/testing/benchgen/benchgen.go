// Package benchgen generates large, realistic plans for the check benchmark: n resources,
// half of them subscriptions, each pipeline built the way the components build it (source
// topic, subscriptions with DLQ, DLQ topic and subscription, service-agent grants), as a
// `pulumi preview --json` document, a stack export or a Terraform plan. Every tenth
// subscription lacks its dead-letter policy so checkers have findings to report.
package benchgen

import (
	"encoding/json"
	"fmt"
)

// Generate returns a preview document with n resources (n rounded down to a multiple of 10).
func Generate(n int) ([]byte, error) {
	steps, err := previewSteps(n)
	if err != nil {
		return nil, err
	}
	return json.MarshalIndent(map[string]any{
		"config":        map[string]any{},
		"steps":         steps,
		"diagnostics":   []any{},
		"changeSummary": map[string]any{"same": len(steps)},
	}, "", "  ")
}

// step is one preview step of the generated plan.
type step struct {
	Op       string         `json:"op"`
	URN      string         `json:"urn"`
	NewState map[string]any `json:"newState"`
}

// previewSteps returns the steps of a preview of n resources, all unchanged.
func previewSteps(n int) ([]step, error) {
	if n < 10 {
		return nil, fmt.Errorf("a plan of %d resources: generate at least one pipeline (10 resources)", n)
	}
	const agent = "serviceAccount:service-123456789012@gcp-sa-pubsub.iam.gserviceaccount.com"
	var steps []step
	add := func(typ, name string, inputs map[string]any, pd map[string][]string) string {
		urn := fmt.Sprintf("urn:pulumi:bench::eventpipe::%s::%s", typ, name)
		var deps []string
		for _, v := range pd {
			deps = append(deps, v...)
		}
		steps = append(steps, step{Op: "same", URN: urn, NewState: map[string]any{
			"urn": urn, "type": typ, "custom": true, "inputs": inputs,
			"dependencies": deps, "propertyDependencies": pd,
		}})
		return urn
	}
	// One pipeline = 10 resources, 5 of them subscriptions: source topic, DLQ topic,
	// 4 push subscriptions on the source, the DLQ subscription, the service agent's
	// publisher (on the DLQ topic) and project-wide subscriber grants, and the consumer's
	// invoker grant.
	for i := 0; i < n/10; i++ {
		p := fmt.Sprintf("p%05d", i)
		src := add("gcp:pubsub/topic:Topic", p, map[string]any{"name": p, "project": "bench"}, nil)
		dlq := add("gcp:pubsub/topic:Topic", p+".dlq", map[string]any{"name": p + ".dlq", "project": "bench"}, nil)
		for j := 0; j < 4; j++ {
			name := fmt.Sprintf("%s-s%d", p, j)
			in := map[string]any{
				"name": name, "project": "bench", "topic": "04da6b54-80e4-46f7-96ec-b56ff0331ba9",
				"retryPolicy":      map[string]any{"minimumBackoff": "10s", "maximumBackoff": "600s"},
				"expirationPolicy": map[string]any{"ttl": ""},
				"labels":           map[string]any{"eventpipe_env": "bench", "eventpipe_role": "consumer"},
				"pushConfig": map[string]any{
					"pushEndpoint": "https://" + name + ".a.run.app/pubsub/push",
					"oidcToken":    map[string]any{"serviceAccountEmail": "push@bench.iam.gserviceaccount.com"},
				},
			}
			pd := map[string][]string{"topic": {src}}
			if !(i%2 == 0 && j == 0) { // every tenth subscription has no DLQ policy
				in["deadLetterPolicy"] = map[string]any{"deadLetterTopic": "projects/bench/topics/" + p + ".dlq", "maxDeliveryAttempts": 5}
				pd["deadLetterPolicy"] = []string{dlq}
			}
			add("gcp:pubsub/subscription:Subscription", name, in, pd)
		}
		add("gcp:pubsub/subscription:Subscription", p+".dlq-sub", map[string]any{
			"name": p + ".dlq-sub", "project": "bench", "topic": "projects/bench/topics/" + p + ".dlq",
			"retryPolicy":      map[string]any{"minimumBackoff": "10s", "maximumBackoff": "600s"},
			"expirationPolicy": map[string]any{"ttl": ""}, "messageRetentionDuration": "604800s",
			"labels": map[string]any{"eventpipe_role": "dlq"},
		}, map[string][]string{"topic": {dlq}})
		add("gcp:pubsub/topicIAMMember:TopicIAMMember", p+".dlq-publisher", map[string]any{
			"topic": "projects/bench/topics/" + p + ".dlq", "role": "roles/pubsub.publisher", "member": agent,
		}, map[string][]string{"topic": {dlq}})
		add("gcp:projects/iAMMember:IAMMember", p+"-subscriber", map[string]any{
			"project": "bench", "role": "roles/pubsub.subscriber", "member": agent,
		}, nil)
		add("gcp:cloudrunv2/serviceIamMember:ServiceIamMember", p+"-invoker", map[string]any{
			"name": p + "-consumer", "location": "europe-west1", "role": "roles/run.invoker",
			"member": "serviceAccount:push@bench.iam.gserviceaccount.com",
		}, nil)
	}
	return steps, nil
}
