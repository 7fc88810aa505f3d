package gcpname

import (
	"regexp"
	"strings"
	"testing"
)

// FuzzTopic holds Topic to the documented shape of a topic's full name: it
// splits exactly the names projects/P/topics/T with P and T non-empty and
// free of '/', and gives back the parts it was built from.
func FuzzTopic(f *testing.F) {
	shape := regexp.MustCompile(`^projects/([^/]+)/topics/([^/]+)$`)
	for _, s := range []string{"projects/p/topics/t", "projects//topics/t", "projects/p/topics/", "projects/a/b/topics/t",
		"projects/p/topics/t/x", "projects/p/topics/topics/t", "topics/t", "projects/p/subscriptions/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		project, id, ok := Topic(name)
		m := shape.FindStringSubmatch(name)
		if ok != (m != nil) {
			t.Fatalf("Topic(%q) ok = %v, shape match = %v", name, ok, m != nil)
		}
		if ok && (project != m[1] || id != m[2] || "projects/"+project+"/topics/"+id != name) {
			t.Fatalf("Topic(%q) = %q, %q; want %q, %q", name, project, id, m[1], m[2])
		}
	})
}

func TestNames(t *testing.T) {
	cases := []struct {
		check func(string) bool
		name  string
		value string
		want  bool
	}{
		{ProjectID, "ProjectID", "acme-prod", true},
		{ProjectID, "ProjectID", "acme", false},                       // under 6
		{ProjectID, "ProjectID", "a" + strings.Repeat("b", 29), true}, // 30
		{ProjectID, "ProjectID", "a" + strings.Repeat("b", 30), false},
		{ProjectID, "ProjectID", "acme-", false},
		{ProjectID, "ProjectID", "1acme-prod", false},
		{PubSubID, "PubSubID", "orders", true},
		{PubSubID, "PubSubID", "or", false},
		{PubSubID, "PubSubID", "o" + strings.Repeat("x", 254), true},
		{PubSubID, "PubSubID", "o" + strings.Repeat("x", 255), false},
		{PubSubID, "PubSubID", "orders.dlq~1%+_-", true},
		{PubSubID, "PubSubID", "google-orders", false},
		{PubSubID, "PubSubID", "GOOGorders", false},
		{PubSubID, "PubSubID", "1orders", false},
		{PubSubID, "PubSubID", "orders/x", false},
		{RunService, "RunService", "orders-consumer", true},
		{RunService, "RunService", "o", true},
		{RunService, "RunService", "o" + strings.Repeat("x", 48), true},
		{RunService, "RunService", "o" + strings.Repeat("x", 49), false},
		{RunService, "RunService", "orders-", false},
		{RunService, "RunService", "Orders", false},
		{Channel, "Channel", "projects/p/notificationChannels/123", true},
		{Channel, "Channel", "projects/p/notificationChannels/", false},
		{Channel, "Channel", "123", false},
		{Channel, "Channel", "projects/p/notificationChannels/1/2", false},
	}
	for _, c := range cases {
		if got := c.check(c.value); got != c.want {
			t.Errorf("%s(%q) = %v, want %v", c.name, c.value, got, c.want)
		}
	}
}
