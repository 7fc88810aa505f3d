package components_test

import (
	"testing"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/internal/testing/annotategen"
)

// TestAnnotationsFollowTheDocComments keeps the Annotate methods (what a
// component provider shows other languages) generated from the doc
// comments Go users read.
func TestAnnotationsFollowTheDocComments(t *testing.T) {
	if err := annotategen.Sync(".", "components", func(name string) string { return name }); err != nil {
		t.Error(err)
	}
}

// TestEveryProviderFieldIsDescribed: every argument and output a component
// provider would expose has a description and the type a token.
func TestEveryProviderFieldIsDescribed(t *testing.T) {
	for _, v := range []annotategen.Annotated{
		&components.PipelineArgs{}, &components.Pipeline{},
		&components.TopicArgs{}, &components.Topic{},
		&components.SubscriptionArgs{}, &components.Subscription{}, &components.PushTarget{},
		&components.ConsumerArgs{}, &components.Consumer{},
		&components.FirestoreTTLArgs{}, &components.FirestoreTTL{},
	} {
		if missing := annotategen.Undescribed(v); len(missing) > 0 {
			t.Errorf("%T: no description for %v", v, missing)
		}
	}
}
