package livetest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"cloud.google.com/go/iam/apiv1/iampb"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	crm "google.golang.org/api/cloudresourcemanager/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Resource is a declared resource: a type token and pulumi-gcp inputs.
type Resource struct {
	Type   string
	Inputs map[string]any
}

// Deploy creates what resources declare, as `pulumi up` would, in project on the fake:
// topics, subscriptions, and the IAM members on them (as their resources' policies). It
// returns the project's own IAM policy, which the fake Pub/Sub cannot hold (give it to
// ResourceManager).
func (s *Server) Deploy(t testing.TB, project string, resources []Resource) *crm.Policy {
	t.Helper()
	grants := map[string][]*iampb.Binding{}
	projectPolicy := &crm.Policy{}
	var topics []*pubsubpb.Topic
	var subs []*pubsubpb.Subscription
	for _, r := range resources {
		if p, _ := r.Inputs["project"].(string); p != project {
			continue
		}
		switch r.Type {
		case "gcp:pubsub/topic:Topic":
			topics = append(topics, TopicOf(t, project, r.Inputs))
		case "gcp:pubsub/subscription:Subscription":
			subs = append(subs, SubscriptionOf(t, project, r.Inputs))
		case "gcp:pubsub/topicIAMMember:TopicIAMMember":
			name := full(project, "topics", r.Inputs["topic"])
			grants[name] = addMember(grants[name], r.Inputs)
		case "gcp:pubsub/subscriptionIAMMember:SubscriptionIAMMember":
			name := full(project, "subscriptions", r.Inputs["subscription"])
			grants[name] = addMember(grants[name], r.Inputs)
		case "gcp:projects/iAMMember:IAMMember":
			role, _ := r.Inputs["role"].(string)
			member, _ := r.Inputs["member"].(string)
			projectPolicy.Bindings = append(projectPolicy.Bindings, &crm.Binding{Role: role, Members: []string{member}})
		}
	}
	ctx := context.Background()
	for _, tp := range topics {
		if _, err := s.Topics.CreateTopic(ctx, tp); err != nil {
			t.Fatalf("create topic %s: %v", tp.GetName(), err)
		}
		s.Policy(t, tp.GetName(), grants[tp.GetName()]...)
	}
	for _, sub := range subs {
		s.Subscription(t, sub, grants[sub.GetName()]...)
	}
	return projectPolicy
}

// full is projects/PROJECT/KIND/ID for an ID or full name.
func full(project, kind string, v any) string {
	s, _ := v.(string)
	if strings.Contains(s, "/") {
		return s
	}
	return "projects/" + project + "/" + kind + "/" + s
}

func addMember(bindings []*iampb.Binding, in map[string]any) []*iampb.Binding {
	role, _ := in["role"].(string)
	member, _ := in["member"].(string)
	for _, b := range bindings {
		if b.Role == role {
			b.Members = append(b.Members, member)
			return bindings
		}
	}
	return append(bindings, &iampb.Binding{Role: role, Members: []string{member}})
}

// decodeInputs reads pulumi-gcp inputs as the Pub/Sub API message m: the input names are
// the REST API's JSON names, apart from those fixup removes or rewrites first.
func decodeInputs(t testing.TB, in map[string]any, m proto.Message, fixup func(map[string]any)) {
	t.Helper()
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var copied map[string]any
	if err := json.Unmarshal(data, &copied); err != nil {
		t.Fatal(err)
	}
	fixup(copied)
	data, err = json.Marshal(copied)
	if err != nil {
		t.Fatal(err)
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, m); err != nil {
		t.Fatalf("inputs %s: %v", data, err)
	}
}

// TopicOf is the topic pulumi-gcp inputs declare in project.
func TopicOf(t testing.TB, project string, in map[string]any) *pubsubpb.Topic {
	tp := &pubsubpb.Topic{}
	decodeInputs(t, in, tp, func(m map[string]any) { m["name"] = full(project, "topics", m["name"]) })
	return tp
}

// SubscriptionOf is the subscription pulumi-gcp inputs declare in project. An expiration
// policy with an empty ttl never expires (pulumi-gcp), which the API writes as a policy
// without a ttl.
func SubscriptionOf(t testing.TB, project string, in map[string]any) *pubsubpb.Subscription {
	sub := &pubsubpb.Subscription{}
	never := false
	decodeInputs(t, in, sub, func(m map[string]any) {
		m["name"] = full(project, "subscriptions", m["name"])
		m["topic"] = full(project, "topics", m["topic"])
		if ep, ok := m["expirationPolicy"].(map[string]any); ok && ep["ttl"] == "" {
			delete(m, "expirationPolicy")
			never = true
		}
	})
	if never {
		sub.ExpirationPolicy = &pubsubpb.ExpirationPolicy{}
	}
	return sub
}
