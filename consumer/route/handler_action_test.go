package route

import (
	"strings"
	"testing"
)

// TestHandlerAction: an action without url or urlEnv names the handler;
// one with both is an error naming the field.
func TestHandlerAction(t *testing.T) {
	const tmpl = `{"routes":[{"name":"orders","match":{"fields":["orderId"]},"mode":"lease",
	  "fields":{"orderId":{"from":["orderId"]}},"action":%s}]}`
	for _, tt := range []struct {
		action    string
		toHandler bool
		err       string
	}{
		{`{}`, true, ""},
		{`{"maxAttempts": 3, "timeout": "5s"}`, true, ""},
		{`{"url": "https://x.example/run"}`, false, ""},
		{`{"urlEnv": "X_URL"}`, false, ""},
		{`{"url": "https://x.example/run", "urlEnv": "X_URL"}`, false, "action.url"},
	} {
		tb, err := Parse([]byte(strings.Replace(tmpl, "%s", tt.action, 1)))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: want an error naming %s, got %v", tt.action, tt.err, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.action, err)
		}
		a := tb.Routes()[0].Action
		if a.ToHandler() != tt.toHandler {
			t.Errorf("%s: ToHandler %v, want %v", tt.action, a.ToHandler(), tt.toHandler)
		}
		if _, err := a.ActionURL(func(string) (string, bool) { return "https://env.example", true }); (err != nil) != tt.toHandler {
			t.Errorf("%s: ActionURL error %v; a handler action has no URL of its own", tt.action, err)
		}
	}
}

// TestHandlerReceiptRoute: a callback route without a target names the
// handler; a partial target is still an error naming the field.
func TestHandlerReceiptRoute(t *testing.T) {
	const tmpl = `{"routes":[{"name":"jobs","ingress":"callback","mode":"receipt",
	  "fields":{"runId":{"from":["run_id"],"required":true}}%s}]}`
	for _, tt := range []struct {
		target    string
		toHandler bool
		err       string
	}{
		{``, true, ""},
		{`,"target":{"collection":"runs","id":"runId"}`, false, ""},
		{`,"target":{"collection":"runs"}`, false, "target.id"},
		{`,"target":{"id":"runId"}`, false, "target.collection"},
	} {
		tb, err := Parse([]byte(strings.Replace(tmpl, "%s", tt.target, 1)))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: want an error naming %s, got %v", tt.target, tt.err, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.target, err)
		}
		if got := tb.Callback("jobs").ToHandler(); got != tt.toHandler {
			t.Errorf("%s: ToHandler %v, want %v", tt.target, got, tt.toHandler)
		}
	}
}
