package components_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/eventpipe/eventpipe/components"
	"github.com/eventpipe/eventpipe/internal/annotate/annotategen"
)

// updateAnnotationsEnv regenerates annotations.go instead of comparing:
// EVENTPIPE_UPDATE_ANNOTATIONS=1 go test ./components/ ./alerts/ -run Annotations
const updateAnnotationsEnv = "EVENTPIPE_UPDATE_ANNOTATIONS"

// TestAnnotationsFollowTheDocComments keeps the Annotate methods (what a
// component provider shows other languages) generated from the doc
// comments Go users read.
func TestAnnotationsFollowTheDocComments(t *testing.T) {
	got, err := annotategen.Generate(".", "components", func(name string) string { return name })
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv(updateAnnotationsEnv) != "" {
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
		t.Errorf("%s is out of date with the doc comments; run %s=1 go test ./components/ -run Annotations", annotategen.File, updateAnnotationsEnv)
	}
}

// TestEveryProviderFieldIsDescribed: every argument and output a component
// provider would expose has a description and the type a token.
func TestEveryProviderFieldIsDescribed(t *testing.T) {
	for _, v := range []annotategen.Annotated{
		&components.PipelineArgs{}, &components.Pipeline{},
		&components.TopicArgs{}, &components.Topic{}, &components.TopicSettings{},
		&components.SubscriptionArgs{}, &components.Subscription{}, &components.SubscriptionSettings{},
		&components.DeadLetterSettings{}, &components.PushTarget{},
		&components.ConsumerArgs{}, &components.Consumer{}, &components.ConsumerSettings{},
		&components.AlertSettings{}, &components.FirestoreTTLArgs{}, &components.FirestoreTTL{},
	} {
		if missing := annotategen.Undescribed(v); len(missing) > 0 {
			t.Errorf("%T: no description for %v", v, missing)
		}
	}
}
