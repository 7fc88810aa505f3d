package alerts

import (
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/annotategen"
)

// alertToken names the alerts' types in the provider's index module, where
// "Config" alone would say nothing: AlertThresholds, AlertPushThresholds, …
func alertToken(name string) string {
	switch name {
	case "Config":
		return "AlertThresholds"
	case "SLOConfig":
		return "AlertSLO"
	}
	return "Alert" + strings.TrimPrefix(name, "Alert")
}

// TestAnnotationsFollowTheDocComments keeps the Annotate methods of the
// thresholds (part of a pipeline's arguments) generated from their doc
// comments.
func TestAnnotationsFollowTheDocComments(t *testing.T) {
	if err := annotategen.Sync(".", "alerts", alertToken); err != nil {
		t.Error(err)
	}
}

func TestEveryThresholdIsDescribed(t *testing.T) {
	for _, v := range []annotategen.Annotated{&Config{}, &DLQThresholds{}, &PushThresholds{}, &BacklogThresholds{},
		&FirestoreThresholds{}, &LeaseThresholds{}, &SLOConfig{}, &BurnRate{}} {
		if missing := annotategen.Undescribed(v); len(missing) > 0 {
			t.Errorf("%T: no description for %v", v, missing)
		}
	}
}
