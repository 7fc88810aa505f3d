package main

import (
	"context"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/render"
)

// TestStacksSurviveTheRealProvider renders every environment and checks
// what the real provider needs on a stack's first day: every Cloud Run
// service sets deletion protection explicitly (on in prod and staging, off
// in dev, whose stack is torn down freely); no alert condition would fail
// the first `pulumi up` on a log-based metric created in the same run; and
// prod and staging protect every topic, subscription and dead-letter queue
// from deletion and replacement, while dev protects none.
func TestStacksSurviveTheRealProvider(t *testing.T) {
	for stack, protected := range map[string]bool{"dev": false, "staging": true, "prod": true} {
		t.Run(stack, func(t *testing.T) {
			res, err := render.Render(context.Background(), render.Options{Stack: stack, StackDir: "."})
			if err != nil {
				t.Fatal(err)
			}
			services := res.Plan.StepsOfType("gcp:cloudrunv2/service:Service")
			if len(services) == 0 {
				t.Fatal("no services")
			}
			for _, s := range services {
				if got, ok := s.NewState.Inputs["deletionProtection"].(bool); !ok || got != protected {
					t.Errorf("%s: deletionProtection = %v, want %v set explicitly", s.URN, s.NewState.Inputs["deletionProtection"], protected)
				}
			}
			logQueries := 0
			for _, s := range res.Plan.StepsOfType("gcp:monitoring/alertPolicy:AlertPolicy") {
				for _, c := range s.NewState.Inputs["conditions"].([]any) {
					cond := c.(map[string]any)
					if th, ok := cond["conditionThreshold"].(map[string]any); ok && strings.Contains(th["filter"].(string), "logging.googleapis.com/user/") {
						t.Errorf("%s: threshold condition on a log-based metric", s.URN)
					}
					if pq, ok := cond["conditionPrometheusQueryLanguage"].(map[string]any); ok && strings.Contains(pq["query"].(string), "logging_googleapis_com:user_") {
						logQueries++
						if pq["disableMetricValidation"] != true {
							t.Errorf("%s: PromQL on a log-based metric validates it", s.URN)
						}
					}
				}
			}
			if logQueries == 0 {
				t.Error("no condition reads a log-based metric: nothing was checked")
			}
			stateful := 0
			for _, s := range res.Plan.Steps {
				switch s.NewState.Type {
				case "gcp:pubsub/topic:Topic", "gcp:pubsub/subscription:Subscription":
					stateful++
					if s.NewState.Protect != protected {
						t.Errorf("%s: protect = %v, want %v", s.URN, s.NewState.Protect, protected)
					}
				}
			}
			if stateful == 0 {
				t.Error("no topics or subscriptions")
			}
		})
	}
}
