package evaluate

import (
	"slices"
	"testing"

	"github.com/eventpipe/eventpipe/internal/testing/plantest"
)

// Pulumi documents as the engine writes them: deletes of retained resources, and previews
// printed without --show-sames.

// TestRetainedDeleteIsNoRemoval: a subscription deleted with retainOnDelete stays in
// Google Cloud with its backlog (the engine prints op "delete" but never calls Delete):
// EP016/EP017 do not count it; the same delete without the option is denied.
func TestRetainedDeleteIsNoRemoval(t *testing.T) {
	e := allRules(t, nil)
	for _, retain := range []bool{true, false} {
		p := plantest.Parse(t, fixture(t, "preview_show_sames.json.txt"))
		p.Delete(t, sub, "orders-push.dlq-sub", retain)
		p.Delete(t, sub, "orders-push", retain)
		p.Drop(t, "gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember", "orders-push-dlq-subscriber")
		got := ids(check(t, e, p.JSON(t)).Findings, false)
		want := []string{"deny:EP016", "deny:EP016"}
		if retain {
			want = nil
		}
		if !slices.Equal(got, want) {
			t.Errorf("retainOnDelete %v: findings %v, want %v", retain, got, want)
		}
	}
}

// TestNewTopicsSubscriptionWithoutDLQIsDenied: without --show-sames, a subscription whose
// topic the preview creates cannot be the DLQ subscription of anything left out, so EP001
// is a firm deny; on a topic that already exists it stays a warning with the note.
func TestNewTopicsSubscriptionWithoutDLQIsDenied(t *testing.T) {
	e := allRules(t, nil)
	for _, topicOp := range []string{"create", "same"} {
		p := plantest.Parse(t, fixture(t, "preview_show_sames.json.txt"))
		delete(p.Inputs(t, sub, "orders-push"), "deadLetterPolicy")
		delete(p.State(t, sub, "orders-push")["propertyDependencies"].(map[string]any), "deadLetterPolicy")
		keep := []plantest.Ref{{Type: sub, Name: "orders-push"}}
		if topicOp == "create" {
			p.SetOp(t, topic, "orders", "create")
			keep = append(keep, plantest.Ref{Type: topic, Name: "orders"})
		}
		p.KeepChanged(t, keep...)
		res := check(t, e, p.JSON(t))
		if res.Complete {
			t.Fatal("the preview reads as complete")
		}
		var ep001 []Finding
		for _, f := range res.Findings {
			if f.Rule.ID == "EP001" {
				ep001 = append(ep001, f)
			}
		}
		if len(ep001) != 1 {
			t.Fatalf("topic %s: EP001 findings %+v", topicOp, ep001)
		}
		f := ep001[0]
		if topicOp == "create" && (f.Level != Deny || f.Note != "") {
			t.Errorf("topic created: EP001 %s with note %q, want a firm deny", f.Level, f.Note)
		}
		if topicOp == "same" && (f.Level != Warn || f.Note != IncompleteNote) {
			t.Errorf("topic unchanged: EP001 %s with note %q, want a warning with the note", f.Level, f.Note)
		}
	}
}

// TestInPlaceUpdateOfCompliantSubscription: without --show-sames, an in-place update of a
// compliant subscription does not print its unchanged grants, alert policies or DLQ
// subscription. No dead-letter grant rule fires; whatever is reported rests on the partial
// document and says so (the note, printed in the text output too).
func TestInPlaceUpdateOfCompliantSubscription(t *testing.T) {
	for _, env := range []string{"prod", "staging"} {
		e := allRules(t, map[string]any{"environment": env})
		p := plantest.Parse(t, fixture(t, "preview_show_sames.json.txt"))
		p.SetOp(t, sub, "orders-push", "update")
		p.Inputs(t, sub, "orders-push")["ackDeadlineSeconds"] = 30
		p.KeepChanged(t, plantest.Ref{Type: sub, Name: "orders-push"})
		res := check(t, e, p.JSON(t))
		for _, f := range res.Findings {
			switch {
			case f.Rule.ID == "EP006" || f.Rule.ID == "EP007":
				t.Errorf("%s: %s reported on an update whose grants are merely unprinted: %s", env, f.Rule.ID, f.Message)
			case f.Note != IncompleteNote:
				t.Errorf("%s: %s %s without the partial-document note: %s", env, f.Level, f.Rule.ID, f.Message)
			}
		}
	}
}
