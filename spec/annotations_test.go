package spec

import (
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/annotategen"
)

// settingsToken names the settings types in the provider's index module
// as the schema has always named them (TopicSettings, ConsumerSettings, …):
// the resources are Topic, Consumer and Subscription, and SDKs generate an
// input type TopicArgs beside the resource's own TopicArgs otherwise.
func settingsToken(name string) string {
	if name == "PipelineAlerts" {
		return "AlertSettings"
	}
	return name + "Settings"
}

// TestAnnotationsFollowTheDocComments keeps the Annotate methods of the
// settings types (what the component provider's schema describes) generated
// from the doc comments the stack reference is generated from too.
func TestAnnotationsFollowTheDocComments(t *testing.T) {
	if err := annotategen.Sync(".", "spec", settingsToken); err != nil {
		t.Error(err)
	}
}

func TestEverySettingIsDescribed(t *testing.T) {
	for _, v := range []annotategen.Annotated{&Topic{}, &Consumer{}, &VPCAccess{}, &Handler{}, &Subscription{}, &DeadLetter{}, &PipelineAlerts{}} {
		if missing := annotategen.Undescribed(v); len(missing) > 0 {
			t.Errorf("%T: no description for %v", v, missing)
		}
	}
}
