package components_test

import (
	"strings"
	"testing"
	"time"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/spec"
)

// withAlerts adds an eventpipe:alerts block to baseStack.
func withAlerts(block string) string {
	return strings.Replace(baseStack, "  eventpipe:pipelines:\n", "  eventpipe:alerts:\n"+block+"  eventpipe:pipelines:\n", 1)
}

// TestLoadStackReadsThresholds: the stack's thresholds are read over the
// defaults with the alerts package's types, for every pipeline.
func TestLoadStackReadsThresholds(t *testing.T) {
	st := loadArgs(t, withAlerts("    team: payments\n    thresholds:\n      push: {serverErrorWarning: 0.02}\n      dlq: {warningFor: 10m}\n"))
	a, th := st.Spec.Pipelines["orders"].Alerts, st.Thresholds
	if th.Push.ServerErrorWarning != 0.02 || th.DLQ.WarningFor.D() != 10*time.Minute || th.Push.ServerErrorCritical != 0.05 {
		t.Errorf("thresholds = %+v / %+v", th.Push, th.DLQ)
	}
	if a.Team != "payments" {
		t.Errorf("team = %q", a.Team)
	}
}

// TestLoadStackThresholdErrors: a bad threshold is reported on its config
// path, together with every other problem of the stack.
func TestLoadStackThresholdErrors(t *testing.T) {
	const th = "eventpipe:alerts.thresholds."
	cases := []struct {
		name, block, wantPath, wantAllowed string
	}{
		{"ratio as percent", "      push: {serverErrorCritical: 5}\n", th + "push.serverErrorCritical", "between 0 and 1"},
		{"ratio as string", "      push: {serverErrorWarning: \"1%\"}\n", th + "push.serverErrorWarning", "a number"},
		{"duration as number", "      dlq: {warningFor: 300}\n", th + "dlq.warningFor", "a string"},
		{"duration too short", "      backlog: {growthWindow: 30s}\n", th + "backlog.growthWindow", "whole number of minutes"},
		{"unparsable duration", "      backlog: {growthWindow: soon}\n", th + "backlog.growthWindow", "whole number of minutes"},
		{"unknown threshold", "      push: {errorRate: 0.1}\n", th + "push.errorRate", "the keys"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(withAlerts("    thresholds:\n"+tc.block), "consumer:1.2.3", "consumer", 1)
			f, err := spec.ParseStackFile("Pulumi.dev.yaml", []byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			_, err = components.LoadStack("dev", f.Source)
			errs, ok := asErrors(err)
			if !ok || len(errs) != 2 {
				t.Fatalf("err = %v, want the threshold and the untagged image reported together", err)
			}
			var found bool
			for _, e := range errs {
				if e.Path == tc.wantPath && strings.Contains(e.Allowed, tc.wantAllowed) && e.Fix != "" {
					found = true
				}
			}
			if !found {
				t.Errorf("errors = %v\nwant one on %s allowing %q", errs, tc.wantPath, tc.wantAllowed)
			}
		})
	}
}
