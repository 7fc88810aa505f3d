package alerts

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/eventpipe/eventpipe/internal/annotate/annotategen"
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
// comments; EVENTPIPE_UPDATE_ANNOTATIONS=1 regenerates them.
func TestAnnotationsFollowTheDocComments(t *testing.T) {
	got, err := annotategen.Generate(".", "alerts", alertToken)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("EVENTPIPE_UPDATE_ANNOTATIONS") != "" {
		if err := os.WriteFile(annotategen.File, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(annotategen.File)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is out of date with the doc comments; run EVENTPIPE_UPDATE_ANNOTATIONS=1 go test ./alerts/ -run Annotations", annotategen.File)
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
