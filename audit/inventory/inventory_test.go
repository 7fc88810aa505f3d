package inventory

import (
	"slices"
	"testing"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/run/apiv2/runpb"

	"github.com/eventpipe/eventpipe/consumer/settings"
)

func TestNames(t *testing.T) {
	cases := []struct{ name, short, project, location string }{
		{"projects/p/subscriptions/orders.dlq-sub", "orders.dlq-sub", "p", ""},
		{"projects/p/locations/europe-west1/services/api", "api", "p", "europe-west1"},
		{"projects/p", "p", "p", ""},
		{"orders", "orders", "", ""},
	}
	for _, tc := range cases {
		if ShortName(tc.name) != tc.short || ProjectOf(tc.name) != tc.project || LocationOf(tc.name) != tc.location {
			t.Errorf("%s: %q %q %q", tc.name, ShortName(tc.name), ProjectOf(tc.name), LocationOf(tc.name))
		}
	}
}

func TestPushTarget(t *testing.T) {
	svcs := []*runpb.Service{
		{Name: "a", Uri: "https://a-x-ew.a.run.app"},
		{Name: "b", Uri: "https://b-x-ew.a.run.app", Urls: []string{"https://b-123456.europe-west1.run.app"}},
	}
	sub := func(endpoint string) *pubsubpb.Subscription {
		return &pubsubpb.Subscription{PushConfig: &pubsubpb.PushConfig{PushEndpoint: endpoint}}
	}
	cases := map[string]string{
		"https://A-X-EW.a.run.app/push":                    "a",
		"https://b-123456.europe-west1.run.app/pubsub?x=y": "b",
		"https://c-x-ew.a.run.app/":                        "",
		"":                                                 "",
	}
	for endpoint, want := range cases {
		got := PushTarget(sub(endpoint), svcs)
		if (want == "") != (got == nil) || (got != nil && got.GetName() != want) {
			t.Errorf("%q: target %v, want %q", endpoint, got, want)
		}
	}
	if !IsRunHost(PushHost(sub("https://c-x-ew.a.run.app/"))) || IsRunHost(PushHost(sub("https://example.com/run.app"))) {
		t.Error("IsRunHost")
	}
}

func TestFirestoreDatabases(t *testing.T) {
	env := func(v string) *runpb.Service {
		return &runpb.Service{Template: &runpb.RevisionTemplate{Containers: []*runpb.Container{{Env: []*runpb.EnvVar{
			{Name: "OTHER", Values: &runpb.EnvVar_Value{Value: "firestore://x/y"}},
			{Name: settings.Store, Values: &runpb.EnvVar_Value{Value: v}},
		}}}}}
	}
	got := FirestoreDatabases([]*runpb.Service{env("firestore://p/events"), env("firestore://p"), env("firestore://p/events"), env("postgres://db"), env("firestore:///nodb")})
	if want := []string{"p/(default)", "p/events"}; !slices.Equal(got, want) {
		t.Fatalf("databases %v, want %v", got, want)
	}
}
